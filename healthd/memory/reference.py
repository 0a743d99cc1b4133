"""The `reference` memory: the embedded default shadow, on SQLite with FTS5 ranking.

It is the memory the seeds describe as one that passes a lifecycle test: namespaces,
metadata pre-filtering before ranking, an expiry stamped on each record when written, and
three forgetting mechanisms, each switchable so a report can show which layer leaks:

* ``ttl``: per-domain TTL with soft expiry. From its expiry on a record is still returned,
  flagged ``soft_expired`` and ranked lower; past expiry plus a grace period it is no longer
  returned (``history`` queries still see it). Expiry is stamped when a record is written or
  re-validated, so changing the TTL touches only records written afterwards.
* ``supersession``: a revision writes a tombstone pointing the old record to its
  replacement; tombstoned records are filtered unless history is asked for.
* ``propagation``: when a key is left with no live record, records that depend on it end too.

An explicit invalidation always ends its record. Event time rules, in every arrival order:
each key keeps a log of its assertions and ends, and its records are derived again from that
log in event-time order (arrival order breaks ties) whenever it changes, so a late, backdated
event takes its place in history and never overrides a record observed later. Cascades are
decided once an event is fully applied (replacing a key's only value never empties it): a
record ends at the first instant after its assertion at which a key it depends on was left
with no value, whatever that key holds now. A dependency cycle cascades nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError
from healthd.memory import register_memory
from healthd.memory._options import duration, integer, reject_unknown, switch
from healthd.memory._reference_fold import _Folds
from healthd.memory._reference_query import FilterOp, MetadataFilter, _Query
from healthd.memory._reference_records import _Deferred, _KeyCache, _LogCodec, _ts
from healthd.memory._reference_store import _PRIVATE_INDEXES, _SCHEMA, _SHARED_INDEXES
from healthd.memory._validity import LogOp, revised_to
from healthd.model import DOMAINS, ChangeEvent, Domain, Fact

DEFAULT_TTL: Mapping[str, timedelta] = {
    "ownership": timedelta(days=30),
    "tech": timedelta(days=90),
    "decision": timedelta(days=180),
    "requirement": timedelta(days=365),
}
DEFAULT_NAMESPACE = "healthd/shadow"


class ReferenceMemory(_Query, _Folds):
    """SQLite-backed shadow memory. Writes only to its own namespace, which must be shadow.

    Its parts, by concern: the records and their tables (``_reference_records``,
    ``_reference_store``), expiry (``_reference_expiry``), cascades (``_reference_cascade``),
    folding a key's log into its records (``_reference_fold``) and retrieval
    (``_reference_query``); here, the settings, an event's entry and the transactions."""

    kind = "reference"
    private_batch = 1000  # events per transaction on a private temporary database
    # A shadow on disk: the write-ahead log, synced at SQLite's checkpoints, not at each
    # commit. A crash of the process loses nothing committed; a power loss or an OS crash
    # can take back the last commits, never half of one, and the shadow is then resumed
    # from the checkpoint it holds (docs/operating.md, "Crash safety"). A page cache of
    # 16 MiB, not SQLite's 2: a 100k-event replay cost 1.49x an in-memory shadow's CPU
    # with 2, 1.34x with 16, in one sitting (docs/benchmarks.md, issue 43). A class
    # attribute, so a benchmark
    # can measure others (benchmarks/bench_daemon.py --shadow-pragmas).
    disk_pragmas: Mapping[str, str] = {
        "journal_mode": "WAL",
        "synchronous": "NORMAL",
        "cache_size": "-16384",
    }

    def __init__(
        self,
        *,
        path: str = ":memory:",
        namespace: str = DEFAULT_NAMESPACE,
        shadow: bool = True,
        ttl: bool = True,
        supersession: bool = True,
        propagation: bool = True,
        ttl_windows: Mapping[str, timedelta] = DEFAULT_TTL,
        grace: float = 1.0,
        top_k: int = 5,
    ) -> None:
        if not shadow:
            raise ShadowViolation(
                f"namespace {namespace!r} is not declared shadow; healthd "
                "writes only to shadow scopes"
            )
        self.namespace = namespace
        self.ttl = ttl
        self.supersession = supersession
        self.propagation = propagation
        self.ttl_windows = dict(ttl_windows)
        self.grace = grace
        self.top_k = top_k
        self._batched = False
        # A private temporary database (``path=""``: `healthd evaluate`'s) is read by no one
        # else and dropped on close: its writes are committed a batch of events at a time,
        # and a failed write ends the replay (see :meth:`apply`).
        self._private = path == ""
        self._pending = 0
        self._failed = None
        # what its errors call it: a shadow on disk by its file, which may have a disk of its own
        self._named = "reference memory" + (f" at {path}" if path not in ("", ":memory:") else "")
        self._text_indexed = 0
        self._deferred = _Deferred()
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            if path not in ("", ":memory:"):
                # A shadow on disk (see disk_pragmas): one commit per batch of events.
                for name, value in self.disk_pragmas.items():
                    self._db.execute(f"PRAGMA {name}={value}")
            elif path == "":
                # A private temporary database: pages past SQLite's cache go to a file that is
                # deleted on close, so a long replay does not hold the whole store in RAM. Its
                # journal stays in memory, as a ":memory:" database's does.
                self._db.execute("PRAGMA journal_mode=MEMORY")
            self._db.executescript(
                _SCHEMA + (_PRIVATE_INDEXES if self._private else _SHARED_INDEXES)
            )
            # A persistent shadow picks up its replay clock where it left off, so events
            # applied after a restart are written at the time they would have been without.
            # The clock never goes back, so it is the latest of the instants it left: the
            # checkpoint's, the last log row's (the log is appended in seq order, so that row
            # holds the largest seq too: read from the end, +namespace keeping it off
            # key_log_key, which would visit every row of the namespace, once key_log_key
            # says the namespace has a row at all, or the scan would read every other
            # namespace's) and, with no checkpoint, the newest record's (a shadow written
            # before the log was kept).
            checkpoint = self._db.execute(
                "SELECT clock FROM checkpoints WHERE namespace = ?", (namespace,)
            ).fetchone()
            if checkpoint is None:
                checkpoint = self._db.execute(
                    "SELECT max(created_at) FROM records WHERE namespace = ?", (namespace,)
                ).fetchone()
            logged = self._db.execute(
                "SELECT 1 FROM key_log WHERE namespace = ? LIMIT 1", (namespace,)
            ).fetchone()
            log = (
                self._db.execute(
                    "SELECT written_at, seq FROM key_log WHERE +namespace = ?"
                    " ORDER BY rowid DESC LIMIT 1",
                    (namespace,),
                ).fetchone()
                if logged
                else None
            ) or (None, 0)
        except sqlite3.Error as exc:
            raise MemoryAdapterError(f"reference memory at {path}: {exc}") from exc
        left = [at for at in (checkpoint[0], log[0]) if at is not None]
        self._clock = max(left) if left else None
        self._seq = log[1]
        self._last_rid = self._max_rid()
        self._touched = set()
        self._asked_until = None
        self._asked_at = (None, 0.0)
        self._cache = _KeyCache()
        self._cache_complete = False
        self._acyclic = True
        self._depended = None
        self._deadlines = []
        self._deadlines_compact_at = self.deadlines_compact_min
        self._deadlines_loaded = False
        self._expiries = {}
        self._codec = _LogCodec()

    # -- settings -------------------------------------------------------------------------

    def set_ttl(self, domain: Domain, ttl: timedelta) -> None:
        """Change a domain's TTL. Records already written keep the expiry they were given."""
        self.ttl_windows[domain] = ttl

    # -- Memory protocol ------------------------------------------------------------------

    def reset(self) -> None:
        ns = (self.namespace,)
        self._deferred.clear()  # rows of the namespace, about to go
        with self._tx():
            self._db.execute("DELETE FROM checkpoints WHERE namespace = ?", ns)
            ids = "SELECT id FROM records WHERE namespace = ?"
            self._db.execute(f"DELETE FROM records_fts WHERE rowid IN ({ids})", ns)
            self._db.execute(f"DELETE FROM record_meta WHERE record_id IN ({ids})", ns)
            self._db.execute("DELETE FROM record_deps WHERE namespace = ?", ns)
            self._db.execute("DELETE FROM key_removals WHERE namespace = ?", ns)
            self._db.execute("DELETE FROM key_log WHERE namespace = ?", ns)
            self._db.execute("DELETE FROM records WHERE namespace = ?", ns)
        self._clock = None
        self._seq = 0
        self._last_rid = self._max_rid()
        self._text_indexed = 0
        self._touched.clear()
        self._asked_until = None
        self._cache = _KeyCache(dependents_read=None)
        self._cache_complete = True
        self._acyclic = True
        self._depended = set()
        self._deadlines = []
        self._deadlines_compact_at = self.deadlines_compact_min
        self._deadlines_loaded = False

    def apply(self, event: ChangeEvent) -> None:
        self._refuse_if_failed()
        at = _ts(event.timestamp)
        self._clock = at if self._clock is None else max(self._clock, at)
        try:
            if self._deferring():
                self._apply_in_batch(event, at)
            else:
                with self._tx():
                    self._apply(event, at)
        except BaseException as exc:
            # The writes were rolled back: what the cache learnt from them is forgotten too.
            self._cache = _KeyCache()
            self._cache_complete = False
            if self._deferring():
                # The batch's earlier events went with it (their writes were waiting with
                # this one's): this replay cannot go on, and every entry point refuses from
                # now on (close() rolls the batch back; a shadow resumes from its checkpoint).
                self._deferred.clear()
                self._failed = f"{self._named}: a write failed at {event.id}; {self._lost()}"
            if isinstance(exc, sqlite3.Error):
                raise MemoryAdapterError(f"{self._named}: applying {event.id}: {exc}") from exc
            raise

    def close(self) -> None:
        """Close; writes of a batch not yet committed are discarded, so the shadow stays as
        its last checkpoint describes it."""
        if self._db.in_transaction:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        self._db.close()
        # What the cache and the expiry heap hold goes with the database (`healthd evaluate`
        # keeps a closed memory while it replays the next target).
        self._cache = _KeyCache()
        self._cache_complete = False
        self._deadlines = []
        self._touched = set()

    # -- an event: the log entries it writes, then the keys it touches settled ------------

    def _apply_in_batch(self, event: ChangeEvent, at: float) -> None:
        # No savepoint per event: a failed event takes its batch with it (see apply)
        if not self._db.in_transaction:
            self._db.execute("BEGIN")
        self._apply(event, at)
        if self._batched:
            return  # made durable by the caller's commit
        self._pending += 1
        if self._pending >= self.private_batch:
            self._pending = 0
            self._flush()
            self._db.execute("COMMIT")

    def _apply(self, event: ChangeEvent, at: float) -> None:
        fact = event.fact
        if event.type in ("added", "revalidated"):
            self._log_assert(event, fact, at)
        elif event.previous is not None:  # a revision, which the model requires
            previous = event.previous
            if self.supersession:  # whatever the key's cardinality is or becomes
                reason = revised_to(fact.value)
                self._log_end(event, previous, at, "superseded", reason, False)
            self._log_assert(event, fact, at)
        else:
            reason = event.reason or "invalidated"
            self._log_end(event, fact, at, "invalidated", reason, event.multi_valued)
        # Cascades are decided once the whole event is in: a revision that replaces a key's
        # only value never leaves it empty.
        self._settle(event.keys)

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _log_assert(self, event: ChangeEvent, fact: Fact, at: float) -> None:
        op = LogOp(
            self._next_seq(),
            at,
            True,
            fact.value,
            fact.domain,
            "",
            "",
            event.depends_on,
            self._expiry_after(fact.domain),
        )
        self._log(event, fact, op, event.multi_valued)

    def _log_end(
        self, event: ChangeEvent, fact: Fact, at: float, state: str, reason: str, multi: bool
    ) -> None:
        self._log(
            event,
            fact,
            LogOp(
                self._next_seq(),
                at,
                False,
                fact.value,
                fact.domain,
                state,
                reason,
                expiry=self._expiry_after(fact.domain),
            ),
            multi,
        )

    # -- batched writes (Checkpointed) ----------------------------------------------------

    def batch_writes(self) -> None:
        """From now on writes become durable only at :meth:`commit`, all together, and wait
        in the batch until then (or until a read of the tables needs them)."""
        self._flush()
        self._last_rid = self._max_rid()  # deferred inserts number on from the table's
        self._batched = True

    def commit(self, checkpoint: Mapping[str, Any]) -> None:
        """Make every write since the last commit durable, with ``checkpoint`` describing the
        shadow as it is now, in one transaction."""
        self._refuse_if_failed()  # a batch that lost writes is never made durable
        self._flush()
        try:
            if not self._db.in_transaction:
                self._db.execute("BEGIN")
            self._db.execute(
                "INSERT OR REPLACE INTO checkpoints (namespace, clock, body) VALUES (?, ?, ?)",
                (self.namespace, self._clock, json.dumps(checkpoint, sort_keys=True)),
            )
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._cache = _KeyCache()
            self._cache_complete = False
            if self._db.in_transaction:
                try:
                    self._db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            raise MemoryAdapterError(f"{self._named}: committing a batch: {exc}") from exc

    def checkpoint(self) -> dict[str, Any] | None:
        """The checkpoint of the last commit, or None."""
        row = self._db.execute(
            "SELECT body FROM checkpoints WHERE namespace = ?", (self.namespace,)
        ).fetchone()
        if row is None:
            return None
        body = json.loads(row[0])
        return body if isinstance(body, dict) else None

    # -- the per-key cache and the database -----------------------------------------------

    def release(self, keep: int) -> int:
        """Let go of the per-key cache but for the ``keep`` keys read or written last (call
        it between events); what is let go is read back from the tables when next needed,
        so memory follows the keys in use, not every key the shadow has seen. How many keys
        were let go."""
        released = self._cache.release(keep)
        if released:
            self._cache_complete = False  # a key the cache does not hold may have rows now
        return released

    def state_db(self) -> sqlite3.Connection:
        """The shadow's own database, for state a caller keeps beside the shadow (in tables
        of its own): what it writes there in batched mode is made durable by the next
        :meth:`commit`, together with the shadow's writes, or not at all."""
        self._refuse_if_failed()
        self._flush()
        if self._batched and not self._db.in_transaction:
            self._db.execute("BEGIN")
        return self._db


_SWITCHES = {
    "ttl",
    "supersession",
    "propagation",
    "grace",
    "top_k",
    "path",
    "namespace",
    "shadow",
} | {f"ttl_{d}" for d in DOMAINS}


@register_memory("reference")
def reference_memory(options: Mapping[str, Any]) -> ReferenceMemory:
    reject_unknown(options, _SWITCHES, "reference")
    windows: dict[str, timedelta] = {
        d: duration(options, f"ttl_{d}", DEFAULT_TTL[d]) for d in DOMAINS
    }
    try:
        grace = float(options.get("grace", 1.0))
    except ValueError:
        raise TargetError(f"switch grace={options['grace']!r}: expected a number") from None
    if not 0 <= grace < float("inf"):
        raise TargetError(f"switch grace={options['grace']!r}: must be 0 or more")
    return ReferenceMemory(
        path=str(options.get("path", ":memory:")),
        namespace=str(options.get("namespace", DEFAULT_NAMESPACE)),
        shadow=switch(options, "shadow", True),
        ttl=switch(options, "ttl", True),
        supersession=switch(options, "supersession", True),
        propagation=switch(options, "propagation", True),
        ttl_windows=windows,
        grace=grace,
        top_k=integer(options, "top_k", 5),
    )


__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_TTL",
    "FilterOp",
    "MetadataFilter",
    "ReferenceMemory",
    "reference_memory",
]
