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

import bisect
import functools
import heapq
import itertools
import json
import re
import sqlite3
import sys
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from healthd._packed import DependencyTable, PackedLog
from healthd._sqlite import savepoint, transaction
from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError
from healthd.memory import register_memory
from healthd.memory._options import duration, integer, reject_unknown, switch
from healthd.memory._validity import (
    Cut,
    Folding,
    LogOp,
    Validity,
    removals,
    revised_to,
    was_removed,
)
from healthd.model import (
    DOMAINS,
    HISTORICAL,
    SOFT_EXPIRED,
    Answer,
    ChangeEvent,
    Domain,
    Fact,
    FactKey,
    Probe,
    RetrievedFact,
)

DEFAULT_TTL: Mapping[str, timedelta] = {
    "ownership": timedelta(days=30),
    "tech": timedelta(days=90),
    "decision": timedelta(days=180),
    "requirement": timedelta(days=365),
}
DEFAULT_NAMESPACE = "healthd/shadow"

FilterOp = Literal["equals", "contains", "before", "after"]
_COLUMNS = {"subject", "predicate", "value", "domain"}
_TIME_COLUMNS = {"created_at": "created_at", "updated_at": "updated_at"}


@dataclass(frozen=True)
class MetadataFilter:
    """A pre-filter applied before ranking: ``field`` is a record column (subject, predicate,
    value, domain), a time (created_at, updated_at) or any event metadata key."""

    field: str
    op: FilterOp
    value: str | datetime


_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    value TEXT NOT NULL,
    domain TEXT NOT NULL,
    multi INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    expires_at REAL,
    purge_at REAL,
    state TEXT NOT NULL DEFAULT 'active',
    ended_at REAL,
    superseded_by INTEGER,
    end_reason TEXT,
    event_id TEXT NOT NULL,
    opened_by INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS records_key ON records(namespace, subject, predicate, state);
CREATE TABLE IF NOT EXISTS record_deps (
    record_id INTEGER NOT NULL,
    namespace TEXT NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS record_deps_key ON record_deps(namespace, subject, predicate);
CREATE TABLE IF NOT EXISTS record_meta (
    record_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS record_meta_key ON record_meta(key, value);
CREATE TABLE IF NOT EXISTS key_removals (
    namespace TEXT NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    removed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS key_log (
    namespace TEXT NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at REAL NOT NULL,
    asserts INTEGER NOT NULL,
    value TEXT NOT NULL,
    domain TEXT NOT NULL,
    multi INTEGER NOT NULL,
    end_state TEXT NOT NULL,
    reason TEXT NOT NULL,
    depends_on TEXT NOT NULL,
    metadata TEXT NOT NULL,
    event_id TEXT NOT NULL,
    written_at REAL NOT NULL,
    expires_after REAL,
    purge_after REAL
);
CREATE INDEX IF NOT EXISTS key_removals_key ON key_removals(namespace, subject, predicate);
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(content, tokenize = 'porter unicode61');
CREATE TABLE IF NOT EXISTS checkpoints (
    namespace TEXT PRIMARY KEY,
    clock REAL,
    body TEXT NOT NULL
);
"""
# What a shadow reads a key's log and its records' deadlines back by once its per-key cache
# has let go of them (after a restart or a release). A private database starts with a
# complete cache: it creates key_log_key when it first reads a log back, and reads deadlines
# back only at the start of a replay, with the table nearly empty.
_SHARED_INDEXES = """
CREATE INDEX IF NOT EXISTS key_log_key ON key_log(namespace, subject, predicate);
CREATE INDEX IF NOT EXISTS records_expiry ON records(namespace, expires_at);
CREATE INDEX IF NOT EXISTS records_purge ON records(namespace, purge_at);
"""
# A fold that opens a record at an older operation reads where it came from by its seq:
# entries appended in seq order, so this index grows at one end, unlike key_log_key.
_PRIVATE_INDEXES = """
CREATE INDEX IF NOT EXISTS key_log_seq ON key_log(seq);
"""

_TOKEN = re.compile(r"\w+", re.UNICODE)
_SEPARATORS = re.compile(r"[_\-:./]+")


def _ts(at: datetime) -> float:
    return at.timestamp()


def _dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, tz=UTC)


def _content(subject: str, predicate: str, value: str) -> str:
    return " ".join((subject, _SEPARATORS.sub(" ", predicate), value))


class ReferenceMemory:
    """SQLite-backed shadow memory. Writes only to its own namespace, which must be shadow."""

    kind = "reference"
    deadlines_compact_min = 4096  # entries in the expiry heap before it is first compacted
    private_batch = 1000  # events per transaction on a private temporary database

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
        self._failed: str | None = None
        self._text_indexed = 0  # a private database's records up to this id are in records_fts
        self._deferred = _Deferred()
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            if path not in ("", ":memory:"):
                # A shadow on disk: the write-ahead log and one fsync per committed batch,
                # not per event; a crash loses at most the batch after the last checkpoint.
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
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
        self._clock: float | None = max(left) if left else None
        self._seq: int = log[1]
        # A private replay's largest record id, its deferred inserts included: each takes the
        # id SQLite would give it (one past the largest in the table)
        self._last_rid = self._max_rid()
        self._touched: set[FactKey] = set()
        self._asked_until: float | None = None
        self._asked_at: tuple[datetime | None, float] = (None, 0.0)
        self._cache = _KeyCache()
        # True while every row of the namespace was written by this process, through the
        # cache: a key the cache does not hold then has no rows, and nothing is read back.
        self._cache_complete = False
        self._acyclic = True  # no dependency cycle seen: a key's fold may be resumed
        # keys some record depends on (None: not read from record_deps yet); only a walk
        # along dependencies from one of them can reach a key, so no other needs one
        self._depended: set[FactKey] | None = None
        # (expiry or purge, key, opener) of every record written: a min-heap
        self._deadlines: list[tuple[float, FactKey, int]] = []
        self._deadlines_compact_at = self.deadlines_compact_min
        self._deadlines_loaded = False
        self._expiries: dict[tuple[timedelta, float], _Expiry] = {}
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
        self._cache = _KeyCache()
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
            if self._private and not self._batched:
                self._apply_in_batch(event, at)
            else:
                with self._tx():
                    self._apply(event, at)
        except BaseException as exc:
            # The writes were rolled back: what the cache learnt from them is forgotten too.
            self._cache = _KeyCache()
            self._cache_complete = False
            if self._private and not self._batched:
                # The batch's earlier events went with it: this replay cannot go on, and
                # every entry point refuses from now on (close() rolls the batch back).
                self._deferred.clear()
                self._failed = (
                    f"reference memory: a write failed at {event.id}; the private replay "
                    "cannot go on"
                )
            if isinstance(exc, sqlite3.Error):
                raise MemoryAdapterError(f"reference memory: applying {event.id}: {exc}") from exc
            raise

    def _refuse_if_failed(self) -> None:
        if self._failed is not None:
            raise MemoryAdapterError(self._failed)

    def _apply_in_batch(self, event: ChangeEvent, at: float) -> None:
        if not self._db.in_transaction:
            self._db.execute("BEGIN")
        self._apply(event, at)
        self._pending += 1
        if self._pending >= self.private_batch:
            self._pending = 0
            self._flush()
            self._db.execute("COMMIT")

    def _deferring(self) -> bool:
        """Whether writes wait for the batch's end (a private database's replay): no one
        reads them before, and a record validated again within the batch is written once."""
        return self._private and not self._batched

    def _flush(self, *, dependencies_only: bool = False) -> None:
        """Write what the batch deferred; called before every read of the tables (before a
        read of the dependencies alone, only those and the records inserted)."""
        deferred = self._deferred
        try:
            if deferred.inserts:  # first: the updates below and a cascade's join read them
                self._db.executemany(_INSERT_SQL, [insert.row() for insert in deferred.inserts])
                deferred.inserts.clear()
            if deferred.deps:
                self._db.executemany(_DEPS_SQL, deferred.deps)
                deferred.deps.clear()
            if dependencies_only:
                return
            if deferred.log:
                self._db.executemany(_LOG_SQL, deferred.log)
                deferred.log.clear()
            if deferred.records:
                moved, changed = [], []
                for record, whole in deferred.records.values():
                    if whole:
                        changed.append((*record.columns, record.rid))
                    else:
                        moved.append((*record.columns[2:5], record.rid))
                self._db.executemany(_VALIDATED_SQL, moved)
                self._db.executemany(_UPDATE_SQL, changed)
                deferred.records.clear()
        except sqlite3.Error as exc:
            # the batch's writes are lost with it: the replay cannot go on, and every entry
            # point refuses from now on, so neither the cache nor the open batch is read again
            deferred.clear()
            self._failed = (
                f"reference memory: writing a batch failed ({exc}); the private replay cannot go on"
            )
            raise MemoryAdapterError(self._failed) from exc

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

    def answer(self, probe: Probe, at: datetime) -> Answer:
        # A probe names its key, so the pre-filter leaves only that key's records, ranked
        # live before soft-expired, newest first. Text relevance is not used here: bm25
        # weighs terms by statistics over the whole store, so unrelated writes could reorder
        # a key's records, which no change to the key would explain.
        self._refuse_if_failed()
        return Answer(probe.id, tuple(self._key_records(probe.key, at, self.top_k)))

    def changed_keys(self, at: datetime) -> set[FactKey]:
        self._refuse_if_failed()
        until = _ts(at)
        changed = self._touched
        self._touched = set()
        since = self._asked_until
        if since is not None and until > since:
            # Keys with an active record whose expiry or purge falls in (since, until]: read
            # from the instants writes pushed, each checked against the record as it is now.
            if not self._deadlines_loaded:
                self._load_deadlines(since)
            heap = self._deadlines
            while heap and heap[0][0] <= until:
                deadline, key, opener = heapq.heappop(heap)
                record = self._live_deadline(key, opener, deadline)
                if record is None:
                    continue
                purge = record.columns[4]
                if purge is not None and purge != deadline:  # its expiry: the purge is next
                    heapq.heappush(heap, (purge, key, opener))
                if deadline > since:
                    changed.add(key)
        if self._asked_until is None or until > self._asked_until:
            self._asked_until = until
        return changed

    def _load_deadlines(self, since: float) -> None:
        """Deadlines of records written before this process: read once."""
        self._flush()
        for subject, predicate, opener, expires, purge in self._db.execute(
            "SELECT subject, predicate, opened_by, expires_at, purge_at FROM records"
            " WHERE namespace = ? AND state = 'active'"
            " AND (expires_at > ? OR purge_at > ?)",
            (self.namespace, since, since),
        ):
            self._push_deadlines(FactKey(subject, predicate), opener, expires, purge)
        self._deadlines_loaded = True

    def _push_deadlines(
        self, key: FactKey, opener: int, expires: float | None, purge: float | None
    ) -> None:
        """Push the first instant at which the answer of an active record's key changes by
        itself: its expiry (its purge is pushed when the expiry comes: most records are
        validated again before they expire, and never need it)."""
        at = expires if expires is not None else purge
        if at is None:
            return
        heap = self._deadlines
        heapq.heappush(heap, (at, key, opener))
        if len(heap) >= self._deadlines_compact_at:
            self._compact_deadlines()

    def _compact_deadlines(self) -> None:
        """Drop the instants a re-validation has since replaced (most of the heap, in a
        history of frequent re-validations); keys not in the cache keep theirs unchecked."""
        live = self._cache.live
        heap = [
            (at, key, opener)
            for at, key, opener in self._deadlines
            if key not in live or self._live_deadline(key, opener, at) is not None
        ]
        heapq.heapify(heap)
        self._deadlines = heap
        self._deadlines_compact_at = max(self.deadlines_compact_min, 2 * len(heap))

    def _live_deadline(self, key: FactKey, opener: int, at: float) -> _Record | None:
        """The record ``opener`` opened, if it is active and still expires or is purged at
        ``at`` (a re-validation pushes its new instants and leaves the old ones to be skipped
        here; the instants of an ended record change no answer)."""
        record = self._records_of(key).get(opener)
        if record is not None and (record.columns[3] == at or record.columns[4] == at):
            return record
        return None

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

    # -- batched writes (Checkpointed) ----------------------------------------------------

    def batch_writes(self) -> None:
        """From now on writes become durable only at :meth:`commit`, all together."""
        self._flush()
        self._batched = True

    def commit(self, checkpoint: Mapping[str, Any]) -> None:
        """Make every write since the last commit durable, with ``checkpoint`` describing the
        shadow as it is now, in one transaction."""
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
            raise MemoryAdapterError(f"reference memory: committing a batch: {exc}") from exc

    def checkpoint(self) -> dict[str, Any] | None:
        """The checkpoint of the last commit, or None."""
        row = self._db.execute(
            "SELECT body FROM checkpoints WHERE namespace = ?", (self.namespace,)
        ).fetchone()
        if row is None:
            return None
        body = json.loads(row[0])
        return body if isinstance(body, dict) else None

    # -- retrieval ------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        at: datetime,
        k: int = 5,
        filters: Sequence[MetadataFilter] = (),
        history: bool = False,
    ) -> list[RetrievedFact]:
        """Rank the records that pass every filter by full-text relevance to ``query``.

        Filters run before ranking. Live records come first, soft-expired ones after them;
        with ``history`` ended and purged records are returned too, flagged ``historical``.
        """
        self._refuse_if_failed()
        now = _ts(at)
        self._flush()
        if self._private:
            self._index_text()
        where = ["r.namespace = ?"]
        params: list[Any] = [self.namespace]
        for flt in filters:
            clause, values = self._filter_sql(flt)
            where.append(clause)
            params.extend(values)
        if not history:
            where.append("r.state = 'active' AND (r.purge_at IS NULL OR r.purge_at > ?)")
            params.append(now)
        # bm25 reads every matching row to weigh the terms, so rank only when there is a
        # choice to make: filters narrow to candidates first, full-text ranking orders them.
        rows = self._db.execute(
            "SELECT r.id, r.subject, r.predicate, r.value, r.domain, r.created_at, r.updated_at,"
            f" r.expires_at, r.purge_at, r.state FROM records r WHERE {' AND '.join(where)}",
            params,
        ).fetchall()
        terms = " OR ".join(f'"{t}"' for t in dict.fromkeys(_TOKEN.findall(query.lower())))
        scores: dict[int, float] = {}
        if terms and len(rows) > 1:
            ids = ",".join(str(r[0]) for r in rows)
            scores = dict(
                self._db.execute(
                    "SELECT rowid, bm25(records_fts) FROM records_fts WHERE records_fts MATCH ? "
                    f"AND rowid IN ({ids})",
                    (terms,),
                )
            )
        return _ranked(rows, scores, now, k)

    def _index_text(self) -> None:
        """Bring the full-text index up to the records table. A private database fills it
        only when a search reads it: a probe's answer never does (see :meth:`answer`)."""
        with self._tx():
            rows = self._db.execute(
                "SELECT id, subject, predicate, value FROM records WHERE id > ? ORDER BY id",
                (self._text_indexed,),
            ).fetchall()
            self._db.executemany(
                "INSERT INTO records_fts (rowid, content) VALUES (?, ?)",
                [(rid, _content(s, p, v)) for rid, s, p, v in rows],
            )
        if rows:
            self._text_indexed = rows[-1][0]

    _KEY_SQL = (
        "SELECT r.id, r.subject, r.predicate, r.value, r.domain, r.created_at, r.updated_at,"
        " r.expires_at, r.purge_at, r.state FROM records r WHERE r.namespace = ? AND"
        " r.subject = ? AND r.predicate = ? AND r.state = 'active' AND"
        " (r.purge_at IS NULL OR r.purge_at > ?)"
    )

    def _key_records(self, key: FactKey, at: datetime, k: int) -> list[RetrievedFact]:
        """``search("", filters=[subject equals, predicate equals])``, without building
        the filters for each probe: a probe names its key."""
        if at is not self._asked_at[0]:  # a stage asks its probes at one instant
            self._asked_at = (at, _ts(at))
        now = self._asked_at[1]
        records = self._cache.live.get(key)
        if records is None:
            self._flush()
            rows = self._db.execute(
                self._KEY_SQL, (self.namespace, key.subject, key.predicate, now)
            ).fetchall()
            return _ranked(rows, {}, now, k)
        # The key's active records as the cache holds them, in step with the table: the rows
        # the query above would read, without the query, ranked as _ranked ranks them.
        if len(records) == 1 and k > 0:  # most keys: one value held, nothing to rank
            (record,) = records.values()
            _, _, _, expires, purge = record.columns[:5]
            if purge is not None and purge <= now:
                return []
            return [record.served(key, expires is not None and expires <= now)]
        ranked = []
        for record in records.values():
            _, _, updated, expires, purge = record.columns[:5]
            if purge is None or purge > now:
                soft = expires is not None and expires <= now
                ranked.append((soft, -updated, -record.rid, record))
        ranked.sort(key=_rank_key)
        return [record.served(key, soft) for soft, _, _, record in ranked[:k]]

    def _max_rid(self) -> int:
        row = self._db.execute("SELECT max(id) FROM records").fetchone()
        return int(row[0] or 0)

    def _filter_sql(self, flt: MetadataFilter) -> tuple[str, list[Any]]:
        if flt.op in ("before", "after"):
            column = _TIME_COLUMNS.get(flt.field)
            if column is None or not isinstance(flt.value, datetime):
                raise MemoryAdapterError(
                    f"filter {flt.field} {flt.op}: before/after take "
                    "created_at or updated_at and a datetime"
                )
            return f"r.{column} {'<' if flt.op == 'before' else '>'} ?", [_ts(flt.value)]
        value = str(flt.value)
        if flt.field in _COLUMNS:
            if flt.op == "equals":
                return f"r.{flt.field} = ?", [value]
            return f"instr(r.{flt.field}, ?) > 0", [value]
        if flt.op == "equals":
            return (
                "EXISTS (SELECT 1 FROM record_meta m WHERE m.record_id = r.id AND "
                "m.key = ? AND m.value = ?)"
            ), [flt.field, value]
        return (
            "EXISTS (SELECT 1 FROM record_meta m WHERE m.record_id = r.id AND "
            "m.key = ? AND instr(m.value, ?) > 0)"
        ), [flt.field, value]

    # -- writing --------------------------------------------------------------------------

    def _tx(self) -> AbstractContextManager[None]:
        if not self._batched and not self._db.in_transaction:
            return transaction(self._db)
        if not self._db.in_transaction:
            self._db.execute("BEGIN")
        return savepoint(self._db)  # inside a batch

    # -- the per-key cache: what the tables say about a key, read once, kept in step ------

    def _log_of(self, key: FactKey) -> _KeyLog:
        self._cache.touch(key)
        log = self._cache.logs.get(key)
        if log is None:
            log = _KeyLog(self._codec)
            if self._cache_complete:
                self._cache.logs[key] = log
                return log
            self._flush()
            if self._private:
                self._db.execute(_SHARED_INDEXES.strip().splitlines()[0])  # key_log_key
            for (
                seq,
                at,
                asserts,
                value,
                domain,
                is_multi,
                end_state,
                reason,
                deps,
                expires_after,
                purge_after,
            ) in self._db.execute(
                "SELECT seq, at, asserts, value, domain, multi, end_state, reason, depends_on,"
                " expires_after, purge_after FROM key_log"
                " WHERE namespace = ? AND subject = ? AND predicate = ? ORDER BY at, seq",
                (self.namespace, key.subject, key.predicate),
            ):
                depends_on = tuple(FactKey(s, p) for s, p in json.loads(deps))
                expiry = self._codec.expiry((expires_after, purge_after))
                op = LogOp(
                    seq, at, bool(asserts), value, domain, end_state, reason, depends_on, expiry
                )
                log.add(op, None, bool(is_multi))
            self._cache.logs[key] = log
        return log

    def _origin(self, key: FactKey, log: _KeyLog, seq: int) -> _Origin:
        """Where operation ``seq`` of the key came from, for the record it opens."""
        origin = log.origins.get(seq)
        if origin is None:
            self._flush()
            row = self._db.execute(
                "SELECT metadata, event_id, written_at FROM key_log WHERE namespace = ?"
                " AND subject = ? AND predicate = ? AND seq = ?",
                (self.namespace, key.subject, key.predicate, seq),
            ).fetchone()
            origin = (row[0], row[1], row[2])
        return origin

    def _records_of(self, key: FactKey) -> dict[int, _Record]:
        """The key's active records, by opener: all an answer or a tail fold reads. Ended
        records are not kept (most of a long history's records); a full refold reads them
        back with :meth:`_every_record`."""
        live = self._cache.live.get(key)
        if live is None:
            self._cache.touch(key)
            if self._cache_complete:
                live = self._cache.live[key] = {}
            else:
                self._flush()
                live = self._cache.live[key] = {
                    opened_by: _Record(rid, list(rest), superseded_by, value, created)
                    for rid, opened_by, superseded_by, value, created, *rest in self._db.execute(
                        _RECORDS_SQL + " AND state = 'active'",
                        (self.namespace, key.subject, key.predicate),
                    )
                }
        return live

    def _every_record(self, key: FactKey) -> dict[int, _Record]:
        """Every record of the key, by opener: the active ones as the cache holds them, the
        ended ones read back from the table, once the batch's deferred inserts and updates
        are written (a record inserted and ended within the batch is in neither otherwise)."""
        records = dict(self._records_of(key))
        self._flush()
        for rid, opened_by, superseded_by, value, created, *rest in self._db.execute(
            _RECORDS_SQL, (self.namespace, key.subject, key.predicate)
        ):
            if opened_by not in records:
                records[opened_by] = _Record(rid, list(rest), superseded_by, value, created)
        return records

    def _removals_of(self, key: FactKey) -> list[float]:
        known = self._cache.removals.get(key)
        if known is None:
            self._cache.touch(key)
        if known is None and self._cache_complete:
            known = self._cache.removals[key] = []
        elif known is None:
            known = [
                at
                for (at,) in self._db.execute(
                    "SELECT removed_at FROM key_removals WHERE namespace = ? AND subject = ? "
                    "AND predicate = ? ORDER BY removed_at",
                    (self.namespace, key.subject, key.predicate),
                )
            ]
            self._cache.removals[key] = known
        return known

    # -- writing, continued ---------------------------------------------------------------

    def _expiry_after(self, domain: str) -> _Expiry:
        """How long after a validation a record soft-expires and is purged, as set now: the
        log keeps it with each entry, so a later TTL change touches only later writes."""
        if not self.ttl:
            return _NO_EXPIRY
        window = self.ttl_windows[domain]
        found = self._expiries.get((window, self.grace))
        if found is None:  # one pair of floats per setting, not per logged operation
            ttl = window.total_seconds()
            found = self._expiries[window, self.grace] = (ttl, ttl * (1.0 + self.grace))
        return found

    def _log(self, event: ChangeEvent, fact: Fact, op: LogOp, multi: bool) -> None:
        expires, purge = op.expiry
        log = self._log_of(fact.key)
        meta = json.dumps(dict(sorted(event.metadata.items()))) if event.metadata else "{}"
        row = (
            self.namespace,
            fact.subject,
            fact.predicate,
            op.seq,
            op.at,
            int(op.asserts),
            op.value,
            op.domain,
            int(multi),
            op.end_state,
            op.reason,
            _deps_json(op.depends_on),
            meta,
            event.id,
            self._clock,
            expires,
            purge,
        )
        if self._deferring():
            self._deferred.log.append(row)
        else:
            self._db.execute(_LOG_SQL, row)
        assert self._clock is not None
        log.add(op, (meta, event.id, self._clock), multi)

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

    def _settle(self, keys: Iterable[FactKey]) -> None:
        """Re-derive the records of ``keys`` from their logs, then of every key whose cascade
        reads a key whose removals changed, until nothing changes."""
        queue = deque(dict.fromkeys(keys))
        queued = set(queue)
        while queue:
            key = queue.popleft()
            queued.discard(key)
            if self._refold(key) and self.propagation:
                for dependent in self._dependents(key):
                    self._cache.folds.pop(dependent, None)  # its cascades read this key
                    if dependent not in queued:
                        queue.append(dependent)
                        queued.add(dependent)

    def _refold(self, key: FactKey) -> bool:
        """Fold the key's log into records; True when the instants at which the key is left
        with no value changed (the keys depending on it must then be folded again).

        When the operations logged since the key's last fold all land after it, only they
        are folded in, and only the records they can change (those held before, those they
        open) are compared and written."""
        log = self._log_of(key)
        fresh, log.fresh = log.fresh, []
        folding = self._cache.folds.pop(key, None)
        if (
            folding is not None
            and fresh
            and self._acyclic
            and folding.multi == log.multi
            and all(appended for _, appended in fresh)
            and folding.resumable(fresh[0][0])
        ):
            return self._fold_tail(key, log, folding, [op for op, _ in fresh])
        folding = Folding(multi=log.multi, supersession=self.supersession)
        cascade = self._cascade(frozenset({key})) if self.propagation else _no_cut
        for op in log.ops:
            folding.step(op, cascade)
        folding.close()
        intervals = folding.intervals

        records = self._every_record(key)
        existing = dict(records)
        for interval in intervals:
            existing.pop(interval.opener.seq, None)
        self._write(key, log, intervals, records)
        merged = [record.rid for record in existing.values()]  # openers now re-validating
        if merged:
            live = self._cache.live[key]
            for seq in existing:
                del records[seq]
                live.pop(seq, None)
            self._flush()
            marks = ",".join("?" * len(merged))
            self._db.execute(f"DELETE FROM records_fts WHERE rowid IN ({marks})", merged)
            self._db.execute(f"DELETE FROM record_meta WHERE record_id IN ({marks})", merged)
            self._db.execute(f"DELETE FROM record_deps WHERE record_id IN ({marks})", merged)
            self._db.execute(f"DELETE FROM records WHERE id IN ({marks})", merged)
            self._last_rid = self._max_rid()
        self._cache.deps[key] = {d for i in intervals for d in i.opener.depends_on}
        ends = removals(intervals)
        folding.compact()
        self._cache.folds[key] = folding
        self._touched.add(key)
        return self._store_removals(key, ends)

    def _fold_tail(self, key: FactKey, log: _KeyLog, folding: Folding, ops: list[LogOp]) -> bool:
        held_before = list(folding.held.values())
        was_held = bool(held_before)
        count = len(folding.intervals)
        cascade = self._cascade(frozenset({key})) if self.propagation else _no_cut
        for op in ops:
            folding.step(op, cascade)
        folding.close()
        opened = folding.intervals[count:]
        self._write(key, log, [*held_before, *opened], self._records_of(key))
        deps = self._depends_on(key)
        for interval in opened:
            deps.update(interval.opener.depends_on)
        self._cache.folds[key] = folding
        self._touched.add(key)
        if was_held and folding.held:
            folding.compact()
            return False  # covered before and after, in one span: removals unchanged
        ends = folding.removals()
        folding.compact()
        return self._store_removals(key, ends)

    def _write(
        self,
        key: FactKey,
        log: _KeyLog,
        intervals: Sequence[Validity],
        records: dict[int, _Record],
    ) -> None:
        """Insert or update the records of ``intervals`` where they differ from the table
        (``records``: the key's records that may be among them, by opener; not changed)."""
        multi = int(log.multi)
        live = self._cache.live[key]
        by_opener: dict[int, _Record] = {}  # the records of ``intervals``
        for interval in intervals:
            opener, validated = interval.opener, interval.validated
            expires_after, purge_after = validated.expiry
            wanted: list[Any] = [
                opener.domain,
                multi,
                validated.at,
                None if expires_after is None else validated.at + expires_after,
                None if purge_after is None else validated.at + purge_after,
                interval.end_state or "active",
                interval.end,
                interval.end_reason,
            ]
            found = records.get(opener.seq)
            if found is None:
                meta, event_id, written = self._origin(key, log, opener.seq)
                record = by_opener[opener.seq] = self._insert(
                    key, opener, wanted, meta, event_id, written
                )
                if wanted[5] == "active":
                    live[opener.seq] = record
                    self._push_deadlines(key, opener.seq, wanted[3], wanted[4])
                continue
            by_opener[opener.seq] = found
            if found.columns != wanted:
                pushed = found.columns[3:5] == wanted[3:5] and found.columns[5] == "active"
                # a re-validation moves only the validation and its expiry instants
                whole = found.columns[:2] != wanted[:2] or found.columns[5:] != wanted[5:]
                if self._deferring():
                    if not self._deferred.inserting(found.rid):  # else inserted as it is then
                        known = self._deferred.records.get(found.rid)
                        whole = whole or (known is not None and known[1])
                        self._deferred.records[found.rid] = (found, whole)
                elif whole:
                    self._db.execute(_UPDATE_SQL, (*wanted, found.rid))
                else:
                    self._db.execute(_VALIDATED_SQL, (*wanted[2:5], found.rid))
                found.columns = wanted
                if wanted[5] == "active":
                    live[opener.seq] = found
                    if not pushed:  # after the record holds them: a compaction checks against it
                        self._push_deadlines(key, opener.seq, wanted[3], wanted[4])
                else:
                    live.pop(opener.seq, None)
                    found._served = None  # an ended record is not served as active again
        for interval in intervals:
            if interval.superseded_by is not None:
                record = by_opener[interval.opener.seq]
                replacement = by_opener[interval.superseded_by].rid
                if record.superseded_by != replacement:
                    record.superseded_by = replacement
                    if not self._deferring() or not self._deferred.inserting(record.rid):
                        self._db.execute(
                            "UPDATE records SET superseded_by = ? WHERE id = ?",
                            (replacement, record.rid),
                        )

    def _store_removals(self, key: FactKey, ends: list[float]) -> bool:
        """Record the instants the key is left with no value; True when they changed."""
        if self._removals_of(key) == ends:
            return False
        self._db.execute(
            "DELETE FROM key_removals WHERE namespace = ? AND subject = ? AND predicate = ?",
            (self.namespace, key.subject, key.predicate),
        )
        self._db.executemany(
            "INSERT INTO key_removals (namespace, subject, predicate, removed_at) VALUES (?,?,?,?)",
            [(self.namespace, key.subject, key.predicate, at) for at in ends],
        )
        self._cache.removals[key] = ends
        return True

    def _insert(
        self,
        key: FactKey,
        opener: LogOp,
        wanted: list[Any],
        meta: str,
        event_id: str,
        written: float,
    ) -> _Record:
        if self._deferring():
            rid = self._last_rid = self._last_rid + 1
            record = _Record(rid, wanted, None, opener.value, written)
            deferred = self._deferred
            if not deferred.inserts:
                deferred.inserted_after = rid - 1
            deferred.inserts.append(_Insert(record, self.namespace, key, opener.seq, event_id))
        else:
            cur = self._db.execute(
                "INSERT INTO records (namespace, subject, predicate, value, domain, multi,"
                " created_at, updated_at, expires_at, purge_at, state, ended_at, end_reason,"
                " event_id, opened_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    self.namespace,
                    key.subject,
                    key.predicate,
                    opener.value,
                    *wanted[:2],
                    written,
                    *wanted[2:],
                    event_id,
                    opener.seq,
                ),
            )
            row_id = cur.lastrowid
            assert row_id is not None
            rid = row_id
            record = _Record(rid, wanted, None, opener.value, written)
        if not self._private or rid <= self._text_indexed:  # a rolled-back id used again
            self._db.execute(
                "INSERT INTO records_fts (rowid, content) VALUES (?, ?)",
                (rid, _content(key.subject, key.predicate, opener.value)),
            )
        if opener.depends_on:
            known = self._depends_on(key)
            if any(
                d not in known
                and (d == key or (self._is_depended_on(key) and key in self._reachable(d)))
                for d in opener.depends_on
            ):
                self._acyclic = False  # a new cycle: earlier cascades may read differently
            if self._depended is not None:
                self._depended.update(opener.depends_on)
            deps = [(rid, self.namespace, d.subject, d.predicate) for d in opener.depends_on]
            if self._deferring():
                self._deferred.deps.extend(deps)
            else:
                self._db.executemany(_DEPS_SQL, deps)
        metadata: dict[str, str] = json.loads(meta) if meta != "{}" else {}
        if metadata:
            self._db.executemany(
                "INSERT INTO record_meta (record_id, key, value) VALUES (?,?,?)",
                [(rid, k, v) for k, v in metadata.items()],
            )
        return record

    def _cascade(self, visiting: frozenset[FactKey]) -> Callable[[LogOp], Cut | None]:
        """For an assertion in the fold of the keys in ``visiting``: the first instant after
        it at which one of its dependencies was left with no value. A dependency cycle
        cascades nothing around itself: a dependency that leads back to a key being folded
        is judged by its own log, without what it depends on in that cycle."""

        def cut(op: LogOp) -> Cut | None:
            first: Cut | None = None
            for dep in op.depends_on:
                if dep in visiting:
                    self._acyclic = False
                    continue
                if any(map(self._is_depended_on, visiting)) and self._reachable(dep) & visiting:
                    self._acyclic = False
                    known = self._removals_within(dep, visiting | {dep})
                else:
                    known = self._removals_of(dep)
                index = bisect.bisect_right(known, op.at)
                if index < len(known) and (first is None or known[index] < first[0]):
                    first = (known[index], was_removed(dep))
            return first

        return cut

    def _removals_within(self, key: FactKey, visiting: frozenset[FactKey]) -> list[float]:
        """The key's removals folded afresh, with the cycle through ``visiting`` cut."""
        log = self._log_of(key)
        folding = Folding(multi=log.multi, supersession=self.supersession)
        cascade = self._cascade(visiting) if self.propagation else _no_cut
        for op in log.ops:
            folding.step(op, cascade)
        folding.close()
        return removals(folding.intervals)

    def _depends_on(self, key: FactKey) -> set[FactKey]:
        """The keys the key's records depend on."""
        deps = self._cache.deps.get(key)
        if deps is None:
            log = self._log_of(key)
            openers = {
                opened_by
                for (opened_by,) in self._db.execute(
                    "SELECT opened_by FROM records WHERE namespace = ? AND subject = ?"
                    " AND predicate = ?",
                    (self.namespace, key.subject, key.predicate),
                )
            }
            deps = {d for op in log.ops if op.seq in openers for d in op.depends_on}
            self._cache.deps[key] = deps
        return deps

    def _is_depended_on(self, key: FactKey) -> bool:
        """Whether a record depends on the key (or did: a merged record's may be gone)."""
        if self._depended is None:
            self._flush(dependencies_only=True)
            self._depended = {
                FactKey(s, p)
                for s, p in self._db.execute(
                    "SELECT DISTINCT subject, predicate FROM record_deps WHERE namespace = ?",
                    (self.namespace,),
                )
            }
        return key in self._depended

    def _reachable(self, start: FactKey) -> set[FactKey]:
        """Every key ``start`` depends on, transitively, through its records."""
        seen: set[FactKey] = set()
        stack = [start]
        while stack:
            for dep in self._depends_on(stack.pop()):
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        return seen

    def _dependents(self, key: FactKey) -> list[FactKey]:
        self._flush(dependencies_only=True)
        rows = self._db.execute(
            "SELECT DISTINCT r.subject, r.predicate FROM record_deps d JOIN records r "
            "ON r.id = d.record_id WHERE d.namespace = ? AND d.subject = ? AND d.predicate = ? "
            "ORDER BY r.subject, r.predicate",
            (self.namespace, key.subject, key.predicate),
        )
        return [FactKey(s, p) for s, p in rows]

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


_LOG_SQL = (
    "INSERT INTO key_log (namespace, subject, predicate, seq, at, asserts, value, domain,"
    " multi, end_state, reason, depends_on, metadata, event_id, written_at,"
    " expires_after, purge_after) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_INSERT_SQL = (
    "INSERT INTO records (id, namespace, subject, predicate, value, domain, multi, created_at,"
    " updated_at, expires_at, purge_at, state, ended_at, end_reason, event_id, opened_by,"
    " superseded_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_RECORDS_SQL = (
    "SELECT id, opened_by, superseded_by, value, created_at, domain, multi, updated_at,"
    " expires_at, purge_at, state, ended_at, end_reason FROM records"
    " WHERE namespace = ? AND subject = ? AND predicate = ?"
)
_DEPS_SQL = "INSERT INTO record_deps (record_id, namespace, subject, predicate) VALUES (?,?,?,?)"
_VALIDATED_SQL = "UPDATE records SET updated_at = ?, expires_at = ?, purge_at = ? WHERE id = ?"
_UPDATE_SQL = (
    "UPDATE records SET domain = ?, multi = ?, updated_at = ?, expires_at = ?, purge_at = ?,"
    " state = ?, ended_at = ?, end_reason = ? WHERE id = ?"
)


@dataclass(slots=True)
class _Deferred:
    """A private replay's writes not yet made: log entries and dependencies to insert, and
    the records whose columns changed (each written once, as it is then; ``True`` when more
    than its validation moved)."""

    log: list[tuple[Any, ...]] = field(default_factory=list)
    deps: list[tuple[Any, ...]] = field(default_factory=list)
    records: dict[int, tuple[_Record, bool]] = field(default_factory=dict)
    # records to insert, ids above ``inserted_after``: written as they are at the flush
    inserts: list[_Insert] = field(default_factory=list)
    inserted_after: int = 0

    def inserting(self, rid: int) -> bool:
        """Whether record ``rid`` waits to be inserted."""
        return bool(self.inserts) and rid > self.inserted_after

    def clear(self) -> None:
        self.log.clear()
        self.deps.clear()
        self.records.clear()
        self.inserts.clear()


@dataclass(slots=True)
class _Insert:
    """A record not yet inserted, written as it is when the batch is flushed."""

    record: _Record
    namespace: str
    key: FactKey
    opened_by: int
    event_id: str

    def row(self) -> tuple[Any, ...]:
        record = self.record
        columns = record.columns
        return (
            record.rid,
            self.namespace,
            self.key.subject,
            self.key.predicate,
            record.value,
            *columns[:2],
            record.created_at,
            *columns[2:],
            self.event_id,
            self.opened_by,
            record.superseded_by,
        )


_Expiry = tuple[float | None, float | None]  # soft expiry and purge, after a validation
_DOMAINS: dict[str, Domain] = {domain: domain for domain in DOMAINS}
_NO_EXPIRY: _Expiry = (None, None)
_Origin = tuple[str, str, float]  # metadata, event id, written at: a new record's columns


def _log_order(op: LogOp) -> tuple[float, int]:
    return op.at, op.seq


class _LogCodec:
    """Log entries as marshal takes them: the dependencies and the expiry as indexes into
    tables of the distinct ones, strings interned back."""

    __slots__ = ("_deps", "_expiries")

    def __init__(self) -> None:
        self._deps = DependencyTable()
        self._expiries: dict[_Expiry, _Expiry] = {}

    def expiry(self, expiry: _Expiry) -> _Expiry:
        """One tuple for each distinct expiry, however many entries share it."""
        return self._expiries.setdefault(expiry, expiry)

    def pack(self, op: LogOp) -> tuple[Any, ...]:
        index = self._deps.index(op.depends_on)
        return (
            op.seq,
            op.at,
            op.asserts,
            op.value,
            op.domain,
            op.end_state,
            op.reason,
            index,
            op.expiry,
        )

    def unpack(self, row: tuple[Any, ...]) -> LogOp:
        seq, at, asserts, value, domain, end_state, reason, index, expiry = row
        return LogOp(
            seq,
            at,
            asserts,
            sys.intern(value),
            _DOMAINS[domain],
            sys.intern(end_state),
            sys.intern(reason),
            self._deps[index],
            self.expiry(expiry),
        )


class _KeyLog:
    """One key's log as the key_log table holds it, in event-time order. Where each
    operation came from is kept only until it is folded (the records it opens are written
    then); a later fold that opens a record at an older operation reads it from key_log."""

    __slots__ = ("fresh", "multi", "ops", "origins")

    def __init__(self, codec: _LogCodec) -> None:
        self.ops: PackedLog[LogOp] = PackedLog(codec, _log_order)
        self.fresh: list[tuple[LogOp, bool]] = []  # logged since the last fold; appended?
        self.origins: dict[int, _Origin] = {}
        self.multi = False

    def add(self, op: LogOp, origin: _Origin | None, multi: bool) -> None:
        if not self.fresh:  # everything logged before was folded, its records written
            self.origins.clear()
        ops = self.ops
        last = ops.last()
        appended = last is None or (last.at, last.seq) <= (op.at, op.seq)
        if appended:
            ops.append(op)
        else:
            ops.insort(op)
        self.fresh.append((op, appended))
        if origin is not None:
            self.origins[op.seq] = origin
        self.multi = self.multi or multi


@dataclass(slots=True)
class _Record:
    rid: int
    columns: list[Any]  # domain, multi, updated_at, expires_at, purge_at, state, ended_at, reason
    superseded_by: int | None
    value: str
    created_at: float
    # the last fact served from this record while active, with its validation and softness:
    # a record is served again and again between the writes that change it
    _served: tuple[float, bool, RetrievedFact] | None = None

    def served(self, key: FactKey, soft: bool) -> RetrievedFact:
        """The record as an active one is served (the row _ranked would turn into it)."""
        updated = self.columns[2]
        last = self._served
        if last is not None and last[0] == updated and last[1] == soft:
            return last[2]
        fact = RetrievedFact(
            key.subject,
            key.predicate,
            self.value,
            self.columns[0],
            f"ref-{self.rid}",
            _dt(self.created_at) if last is None else last[2].written_at,
            _dt(updated),
            _FLAGS[soft, False],
        )
        self._served = (updated, soft, fact)
        return fact


@dataclass(slots=True)
class _KeyCache:
    """What the tables hold per key, read on first use and kept in step with every write,
    so applying an event reads nothing back. Dropped whenever a write is rolled back."""

    logs: dict[FactKey, _KeyLog] = field(default_factory=dict)
    # The key's active records by opener: what an answer reads, so its cost does not grow
    # with the key's ended and superseded past, nor the memory with its length.
    live: dict[FactKey, dict[int, _Record]] = field(default_factory=dict)
    removals: dict[FactKey, list[float]] = field(default_factory=dict)
    deps: dict[FactKey, set[FactKey]] = field(default_factory=dict)
    folds: dict[FactKey, Folding] = field(default_factory=dict)
    # The keys held above, least recently read or written first (see ReferenceMemory.release)
    warm: dict[FactKey, None] = field(default_factory=dict)

    def touch(self, key: FactKey) -> None:
        warm = self.warm
        warm.pop(key, None)
        warm[key] = None

    def release(self, keep: int) -> int:
        """Forget every key but the ``keep`` used last; how many were forgotten."""
        warm = self.warm
        cold = list(itertools.islice(warm, max(0, len(warm) - keep)))
        for key in cold:
            del warm[key]
            for table in (self.logs, self.live, self.removals, self.deps):
                table.pop(key, None)
            self.folds.pop(key, None)
        return len(cold)


_FLAGS = {
    (soft, historical): frozenset(
        flag for flag, on in ((SOFT_EXPIRED, soft), (HISTORICAL, historical)) if on
    )
    for soft in (False, True)
    for historical in (False, True)
}


def _rank_key(entry: tuple[bool, float, int, _Record]) -> tuple[bool, float, int]:
    return entry[0], entry[1], entry[2]


def _ranked(
    rows: list[Any], scores: Mapping[int, float], now: float, k: int
) -> list[RetrievedFact]:
    """Live before soft-expired, then by relevance, newest validation, newest record."""
    rows.sort(key=lambda r: (r[7] is not None and r[7] <= now, scores.get(r[0], 0.0), -r[6], -r[0]))
    del rows[k:]
    out = []
    for rid, subject, predicate, value, domain, created, updated, expires, purge, state in rows:
        soft = expires is not None and expires <= now
        historical = state != "active" or (purge is not None and purge <= now)
        out.append(
            RetrievedFact(
                subject,
                predicate,
                value,
                domain,
                f"ref-{rid}",
                _dt(created),
                _dt(updated),
                _FLAGS[soft, historical],
            )
        )
    return out


@functools.lru_cache(maxsize=4096)
def _deps_json(depends_on: tuple[FactKey, ...]) -> str:
    """A log entry's dependencies as stored: a few distinct lists, written over and over."""
    return json.dumps([list(k) for k in depends_on])


def _no_cut(op: LogOp) -> Cut | None:
    return None


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
