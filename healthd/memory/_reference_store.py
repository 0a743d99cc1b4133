"""The reference memory's tables and how it reads and writes them: the schema, the per-key
cache read from the tables on first use, the key log appended to, and a private replay's
batch of deferred writes flushed before any read (see :mod:`healthd.memory.reference`)."""

from __future__ import annotations

import bisect
import functools
import json
import sqlite3
from contextlib import AbstractContextManager
from typing import Any

from healthd._sqlite import savepoint, transaction
from healthd.errors import MemoryAdapterError
from healthd.memory._reference_records import (
    _ALWAYS,
    _NEVER,
    _Deferred,
    _KeyCache,
    _KeyLog,
    _LogCodec,
    _Origin,
    _Record,
)
from healthd.memory._validity import LogOp
from healthd.model import ChangeEvent, Fact, FactKey

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
# What a shadow reads a key's log, its dependents and its records' deadlines back by once
# its per-key cache has let go of them (after a restart or a release). A private database
# starts with a complete cache: it creates key_log_key when it first reads a log back and
# record_deps_key when it first reads dependents back, and reads deadlines back only at the
# start of a replay, with the table nearly empty.
_LOG_INDEX = "CREATE INDEX IF NOT EXISTS key_log_key ON key_log(namespace, subject, predicate)"
_DEPS_INDEX = (
    "CREATE INDEX IF NOT EXISTS record_deps_key ON record_deps(namespace, subject, predicate)"
)
_SHARED_INDEXES = f"""
{_DEPS_INDEX};
{_LOG_INDEX};
CREATE INDEX IF NOT EXISTS records_expiry ON records(namespace, expires_at);
CREATE INDEX IF NOT EXISTS records_purge ON records(namespace, purge_at);
"""
# A fold that opens a record at an older operation reads where it came from by its seq:
# entries appended in seq order, so this index grows at one end, unlike key_log_key.
_PRIVATE_INDEXES = """
CREATE INDEX IF NOT EXISTS key_log_seq ON key_log(seq);
"""

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
_TEXT_SQL = "INSERT INTO records_fts (rowid, content) VALUES (?, ?)"
_META_SQL = "INSERT INTO record_meta (record_id, key, value) VALUES (?,?,?)"
_VALIDATED_SQL = "UPDATE records SET updated_at = ?, expires_at = ?, purge_at = ? WHERE id = ?"
_UPDATE_SQL = (
    "UPDATE records SET domain = ?, multi = ?, updated_at = ?, expires_at = ?, purge_at = ?,"
    " state = ?, ended_at = ?, end_reason = ? WHERE id = ?"
)
_CHANGED_SQL = (
    "UPDATE records SET domain = ?, multi = ?, updated_at = ?, expires_at = ?, purge_at = ?,"
    " state = ?, ended_at = ?, end_reason = ?, superseded_by = ? WHERE id = ?"
)


def _seq_of(row: tuple[Any, ...]) -> int:
    seq: int = row[3]
    return seq


def _end_of(item: tuple[int, _Record]) -> float:
    end: float = item[1].columns[6]
    return end


@functools.lru_cache(maxsize=4096)
def _deps_json(depends_on: tuple[FactKey, ...]) -> str:
    """A log entry's dependencies as stored: a few distinct lists, written over and over."""
    return json.dumps([list(k) for k in depends_on])


class _Store:
    """The tables of a reference memory and its per-key cache of them. The state below is
    set by :class:`~healthd.memory.reference.ReferenceMemory` (and by its reset)."""

    namespace: str
    _db: sqlite3.Connection
    _batched: bool  # writes wait for commit (batch_writes)
    _private: bool  # a private temporary database (see ReferenceMemory.__init__)
    _failed: str | None  # why a replay cannot go on from its deferred writes
    _named: str  # "reference memory", and the file a shadow on disk is in
    _deferred: _Deferred
    _clock: float | None  # the replay clock: the latest event time applied
    _text_indexed: int  # a private database's records up to this id are in records_fts
    _touched: set[FactKey]  # keys folded again since changed_keys last asked
    _cache: _KeyCache
    # True while every row of the namespace was written by this process, through the
    # cache: a key the cache does not hold then has no rows, and nothing is read back.
    _cache_complete: bool
    _codec: _LogCodec

    def _refuse_if_failed(self) -> None:
        if self._failed is not None:
            raise MemoryAdapterError(self._failed)

    def _deferring(self) -> bool:
        """Whether writes wait for the batch's end (a private database's replay, or a
        batched shadow's, made durable only at its commit): no one reads them before (a read
        of the tables flushes them first), and a record validated again within the batch is
        written once."""
        return self._private or self._batched

    def _lost(self) -> str:
        """What a failed deferred write takes with it."""
        if self._batched:
            return (
                "the batch since the last commit is lost (the shadow resumes from its checkpoint)"
            )
        return "the private replay cannot go on"

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
            if deferred.text:
                self._db.executemany(_TEXT_SQL, deferred.text)
                deferred.text.clear()
            if deferred.meta:
                self._db.executemany(_META_SQL, deferred.meta)
                deferred.meta.clear()
            if deferred.log:
                self._db.executemany(_LOG_SQL, deferred.log)
                deferred.log.clear()
            links = deferred.links
            if deferred.records:
                moved, changed = [], []
                for rid, (record, whole) in deferred.records.items():
                    if whole:  # its replacement with it, however it changed in the batch
                        changed.append((*record.columns, record.superseded_by, rid))
                        links.pop(rid, None)
                    else:
                        moved.append((*record.columns[2:5], rid))
                self._db.executemany(_VALIDATED_SQL, moved)
                self._db.executemany(_CHANGED_SQL, changed)
                deferred.records.clear()
            if links:
                self._db.executemany(
                    "UPDATE records SET superseded_by = ? WHERE id = ?",
                    [(record.superseded_by, rid) for rid, record in links.items()],
                )
                links.clear()
        except Exception as exc:  # SQLite's, or a value it cannot bind (a lone surrogate)
            # the batch's writes are lost with it: the replay cannot go on, and every entry
            # point refuses from now on, so neither the cache nor the open batch is read again
            deferred.clear()
            self._failed = f"{self._named}: writing a batch failed ({exc}); {self._lost()}"
            raise MemoryAdapterError(self._failed) from exc

    def _tx(self) -> AbstractContextManager[None]:
        if not self._batched and not self._db.in_transaction:
            return transaction(self._db)
        if not self._db.in_transaction:
            self._db.execute("BEGIN")
        return savepoint(self._db)  # inside a batch

    def _max_rid(self) -> int:
        row = self._db.execute("SELECT max(id) FROM records").fetchone()
        return int(row[0] or 0)

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
                self._db.execute(_LOG_INDEX)
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
        if origin is not None:
            return origin
        logged = self._deferred.log  # the batch's entries, in seq order
        if logged and logged[0][3] <= seq:
            row = logged[bisect.bisect_left(logged, seq, key=_seq_of)]
            return (row[12], row[13], row[14])
        # written before the batch: read back, with nothing flushed
        row = self._db.execute(
            "SELECT metadata, event_id, written_at FROM key_log WHERE namespace = ?"
            " AND subject = ? AND predicate = ? AND seq = ?",
            (self.namespace, key.subject, key.predicate, seq),
        ).fetchone()
        origin = (row[0], row[1], row[2])
        return origin

    def _records_of(self, key: FactKey) -> dict[int, _Record]:
        """The key's active records, by opener: all an answer or a tail fold reads. Of its
        ended records the cache keeps only when the last one ended (:meth:`_records_since`):
        they, most of a long history's records, are read back when a fold reaches them."""
        live = self._cache.live.get(key)
        if live is None:
            self._cache.touch(key)
            cache = self._cache
            if self._cache_complete:
                live = cache.live[key] = {}  # no row: no ended record let go (floor -inf)
            else:
                self._flush()
                live = cache.live[key] = {
                    opened_by: _Record(rid, list(rest), superseded_by, value, created)
                    for rid, opened_by, superseded_by, value, created, *rest in self._db.execute(
                        _RECORDS_SQL + " AND state = 'active'",
                        (self.namespace, key.subject, key.predicate),
                    )
                }
                cache.ended_floor[key] = _NEVER  # its ended records are in the table
        return live

    def _records_since(self, key: FactKey, since: float) -> dict[int, _Record]:
        """The key's records active or ended at or after ``since``, by opener: those a fold
        that may differ from the records from ``since`` on can change. From the cache when
        it keeps every record of the key that ended then; else the ended ones are read back
        from the table (since the batch's deferred writes, written first, and only the key's
        rows ended then: its whole history when ``since`` is -inf)."""
        records = dict(self._records_of(key))
        cache = self._cache
        ended = cache.ended.get(key, {})
        for opener, record in ended.items():
            end = record.columns[6]
            if end is not None and end >= since:
                records[opener] = record
        if since <= cache.ended_floor.get(key, _ALWAYS):
            self._flush()
            if since == _ALWAYS:
                rows = self._db.execute(_RECORDS_SQL, (self.namespace, key.subject, key.predicate))
            else:
                rows = self._db.execute(
                    _RECORDS_SQL + " AND state != 'active' AND ended_at >= ?",
                    (self.namespace, key.subject, key.predicate, since),
                )
            for rid, opened_by, superseded_by, value, created, *rest in rows:
                if opened_by not in records:
                    record = _Record(rid, list(rest), superseded_by, value, created)
                    records[opened_by] = record
                    if rest[5] != "active":
                        ended = cache.ended.setdefault(key, ended)
                        ended[opened_by] = record
            cache.ended_floor[key] = since
            self._trim_ended(key)
        return records

    ended_kept = 0  # ended records kept per key, about (see _KeyCache.ended)

    def _trim_ended(self, key: FactKey) -> None:
        """Let the key's oldest ended records go past twice ``ended_kept``: they stay in the
        table (or the batch), read back if a fold reaches back to them."""
        ended = self._cache.ended.get(key)
        if ended is None or len(ended) <= 2 * self.ended_kept:
            return
        by_end = sorted(ended.items(), key=_end_of)
        gone = by_end[: len(by_end) - self.ended_kept]
        for opener, _ in gone:
            del ended[opener]
        if not ended:
            del self._cache.ended[key]
        floor = self._cache.ended_floor
        floor[key] = max(floor.get(key, _ALWAYS), gone[-1][1].columns[6])

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

    # -- written to the tables and the cache together -------------------------------------

    def _store_removals(self, key: FactKey, ends: list[float]) -> float | None:
        """Record the instants the key is left with no value; when they changed, the first
        instant at which they differ (a cascade reads nothing different before it)."""
        before = self._removals_of(key)
        if before == ends:
            return None
        self._db.execute(
            "DELETE FROM key_removals WHERE namespace = ? AND subject = ? AND predicate = ?",
            (self.namespace, key.subject, key.predicate),
        )
        self._db.executemany(
            "INSERT INTO key_removals (namespace, subject, predicate, removed_at) VALUES (?,?,?,?)",
            [(self.namespace, key.subject, key.predicate, at) for at in ends],
        )
        self._cache.removals[key] = ends
        return _first_difference(before, ends)

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


def _first_difference(before: list[float], after: list[float]) -> float:
    """The first instant in one of two different sorted lists and not the other."""
    for old, new in zip(before, after, strict=False):
        if old != new:
            return min(old, new)
    longer = before if len(before) > len(after) else after
    return longer[min(len(before), len(after))]
