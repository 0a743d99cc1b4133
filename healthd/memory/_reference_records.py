"""The reference memory's records and key logs as it holds them in memory: a record as the
cache keeps it, a key's log and the codec that packs it, the per-key cache, and what a
private replay defers until its batch is flushed (see :mod:`healthd.memory.reference`)."""

from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from healthd._packed import PackedLog, TupleTable
from healthd.memory._validity import Folding, LogOp
from healthd.model import DOMAINS, HISTORICAL, SOFT_EXPIRED, Domain, FactKey, RetrievedFact

_SEPARATORS = re.compile(r"[_\-:./]+")


# The instant converted last, as a datetime and in seconds (one pair, replaced whole): an
# event's time is converted for its write, again for the changes and answers asked at it,
# and back for each record served as validated then. Kept only for a UTC datetime whose
# seconds convert back to it exactly (within 2**32 s of the epoch a float holds the instant
# to less than half a microsecond).
_LAST: list[tuple[datetime, float]] = [(datetime(1970, 1, 1, tzinfo=UTC), 0.0)]
_EXACT = float(2**32)


def _ts(at: datetime) -> float:
    last = _LAST[0]
    if at is last[0]:
        return last[1]
    value = at.timestamp()
    if type(at) is datetime and at.tzinfo is UTC and not at.fold and -_EXACT < value < _EXACT:
        _LAST[0] = (at, value)
    return value


def _dt(value: float) -> datetime:
    last = _LAST[0]
    if value == last[1]:
        return last[0]
    return datetime.fromtimestamp(value, tz=UTC)


def _content(subject: str, predicate: str, value: str) -> str:
    return " ".join((subject, _SEPARATORS.sub(" ", predicate), value))


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
    # records inserted before the batch whose replacement (superseded_by) changed in it
    links: dict[int, _Record] = field(default_factory=dict)
    # rows of records_fts (rowid, content) and of record_meta (record_id, key, value)
    text: list[tuple[int, str]] = field(default_factory=list)
    meta: list[tuple[int, str, str]] = field(default_factory=list)

    def inserting(self, rid: int) -> bool:
        """Whether record ``rid`` waits to be inserted."""
        return bool(self.inserts) and rid > self.inserted_after

    def clear(self) -> None:
        self.log.clear()
        self.deps.clear()
        self.records.clear()
        self.inserts.clear()
        self.links.clear()
        self.text.clear()
        self.meta.clear()


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
_Origin = tuple[str, str, float]  # metadata, event id, written at: a new record's columns
_NEVER = float("inf")
_ALWAYS = float("-inf")


def _log_order(op: LogOp) -> tuple[float, int]:
    return op.at, op.seq


class _LogCodec:
    """Log entries as marshal takes them: the dependencies and the expiry as indexes into
    tables of the distinct ones, strings interned back."""

    __slots__ = ("_deps", "_expiries")

    def __init__(self) -> None:
        self._deps = TupleTable()
        self._expiries = TupleTable()

    def expiry(self, expiry: _Expiry) -> _Expiry:
        """One tuple for each distinct expiry, however many entries share it."""
        return self._expiries[self._expiries.index(expiry)]

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
            self._expiries.index(op.expiry),
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
            self._expiries[expiry],
        )


class _KeyLog:
    """One key's log as the key_log table holds it, in event-time order. Where each
    operation came from is kept only until it is folded (the records it opens are written
    then); a later fold that opens a record at an older operation reads it from key_log."""

    __slots__ = ("changed_from", "fresh", "fresh_appended", "multi", "ops", "origins")

    def __init__(self, codec: _LogCodec) -> None:
        self.ops: PackedLog[LogOp] = PackedLog(codec, _log_order)
        self.fresh: list[LogOp] = []  # logged since the last fold
        self.fresh_appended = True  # each of them at the log's end when logged
        self.origins: dict[int, _Origin] = {}
        self.multi = False
        # The earliest instant from which the key's fold may differ from its records as
        # written (an operation logged there, a dependency's removals changed there): every
        # record that ended before it is as the next fold would write it
        self.changed_from = _NEVER

    def add(self, op: LogOp, origin: _Origin | None, multi: bool) -> None:
        if not self.fresh:  # everything logged before was folded, its records written
            self.origins.clear()
            self.fresh_appended = True
        ops = self.ops
        last = ops.last()
        if last is None or last.at < op.at or (last.at == op.at and last.seq <= op.seq):
            ops.append(op)
        else:
            ops.insort(op)
            self.fresh_appended = False
        self.fresh.append(op)
        if origin is not None:
            self.origins[op.seq] = origin
        self.changed_from = min(self.changed_from, op.at)
        if multi and not self.multi:  # every earlier assertion folds differently
            self.multi = True
            self.changed_from = _ALWAYS


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
    # The key's records ended last, by opener (none by default): what a fold done again from
    # an instant compares besides the active ones. At most about ``ended_kept`` (the oldest
    # let go in bulk), and every record of the key that ended after ``ended_floor[key]`` is
    # among them (the latest end let go; -inf: none; +inf for a key read back from the
    # tables): a fold reaching back to that instant reads the key's rows ended since
    ended: dict[FactKey, dict[int, _Record]] = field(default_factory=dict)
    ended_floor: dict[FactKey, float] = field(default_factory=dict)
    # For each key, the keys with records depending on it and how many such records (as
    # record_deps holds them), kept in step with every write: every key's when
    # ``dependents_read`` is None (the namespace was empty when the cache was made), else
    # only those of the keys in it, each read from the tables when first asked for (a
    # restarted shadow does not read a million rows for its first cascade)
    dependents: dict[FactKey, dict[FactKey, int]] = field(default_factory=dict)
    dependents_read: set[FactKey] | None = field(default_factory=set)

    def holds_dependents(self, key: FactKey) -> bool:
        return self.dependents_read is None or key in self.dependents_read

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
            for table in (self.logs, self.live, self.removals, self.deps, self.ended):
                table.pop(key, None)
            self.folds.pop(key, None)
            self.ended_floor.pop(key, None)
        return len(cold)


_FLAGS = {
    (soft, historical): frozenset(
        flag for flag, on in ((SOFT_EXPIRED, soft), (HISTORICAL, historical)) if on
    )
    for soft in (False, True)
    for historical in (False, True)
}
