"""Ground truth: what was true when, folded from a timeline by event time.

Pure: no I/O, no clock. Events may arrive out of order; each key keeps its operations sorted
by event time (arrival order breaks ties), so a backdated revision that arrives after a newer
one takes its place in history and never replaces the newer value. Ends cascade along
``depends_on``: when a key a fact depends on is left with no value, the fact ends too (a mere
change of that key's value does not cascade).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from healthd._packed import PackedLog, TupleTable, from_micros, to_micros
from healthd.model import DOMAINS, ChangeEvent, Domain, Fact, FactKey, Status

EndKind = Literal["superseded", "invalidated"]
_NO_KEYS: frozenset[FactKey] = frozenset()


class _Op(NamedTuple):
    at: datetime
    seq: int
    assert_: bool  # True: the value holds from `at`; False: it ends at `at`
    value: str
    domain: Domain
    end_kind: EndKind | None
    reason: str | None
    depends_on: tuple[FactKey, ...]


#: Marks a key whose next fold cannot resume from where it stopped (never folded itself).
_REFOLD = _Op(datetime.min, 0, False, "", "tech", None, None, ())


@dataclass(slots=True)
class Interval:
    """One stretch of time during which a key held a value, ends after cascades applied."""

    value: str
    domain: Domain
    start: datetime
    end: datetime | None
    end_kind: EndKind | None
    reason: str | None
    depends_on: tuple[FactKey, ...]


_DOMAINS: dict[str, Domain] = {domain: domain for domain in DOMAINS}
#: How a value's latest interval ended, and its domain: one tuple each, however many values
_ENDED: dict[tuple[EndKind, Domain], tuple[Status, Domain]] = {
    (kind, domain): (kind, domain) for kind in ("superseded", "invalidated") for domain in DOMAINS
}
_END_KINDS: dict[str | None, EndKind | None] = {
    None: None,
    "superseded": "superseded",
    "invalidated": "invalidated",
}


def _op_order(op: _Op) -> tuple[datetime, int]:
    return op.at, op.seq


class _OpCodec:
    """Operations as marshal takes them: the time as integer microseconds (exactly), the
    dependencies as an index into one table of the distinct lists, strings interned back."""

    __slots__ = ("_deps",)

    def __init__(self) -> None:
        self._deps = TupleTable()

    def pack(self, op: _Op) -> tuple[Any, ...]:
        index = self._deps.index(op.depends_on)
        return (
            to_micros(op.at),
            op.seq,
            op.assert_,
            op.value,
            op.domain,
            op.end_kind,
            op.reason,
            index,
        )

    def unpack(self, row: tuple[Any, ...]) -> _Op:
        micros, seq, assert_, value, domain, end_kind, reason, index = row
        return _Op(
            from_micros(micros),
            seq,
            assert_,
            sys.intern(value),
            _DOMAINS[domain],
            _END_KINDS[end_kind],
            None if reason is None else sys.intern(reason),
            self._deps[index],
        )


class _KeyHistory:
    __slots__ = ("asserted", "key", "multi", "ops", "rank", "values")

    def __init__(self, key: FactKey, codec: _OpCodec) -> None:
        self.key = key  # the one object every event's copy of the key is replaced with
        self.ops: PackedLog[_Op] = PackedLog(codec, _op_order)
        self.multi = False
        self.asserted = False
        self.values: dict[str, Domain] = {}
        self.rank: dict[str, int] = {}

    def fold(self, cascade: Callable[[Interval], tuple[datetime, str] | None]) -> _Folded:
        """The key's intervals in order of start. ``cascade`` gives the instant (and reason)
        at which a dependency's removal ends an interval, if it does; an assertion after that
        instant starts the fact afresh."""
        folded = _Folded()
        for op in self.ops:
            folded.step(op, self.multi, cascade)
        folded.close_cuts(None)
        return folded


class _Folded:
    """A key's fold, kept so that an operation landing after every other one (the usual
    case: events mostly arrive in time order) is folded in alone, not from the start.

    A kept fold is compacted: it holds the intervals from the first one still open on, and
    of each value whose latest interval ended only how it ended (what the newest instant
    asks); a past instant is answered from a whole fold, made for the question."""

    __slots__ = (
        "closed",
        "cut_until",
        "cuts",
        "ended",
        "held",
        "intervals",
        "last",
        "open_",
        "span_end",
    )

    def __init__(self) -> None:
        self.intervals: list[Interval] = []  # in order of start
        self.open_: dict[str, Interval] = {}
        # the values whose latest interval ended: their status after it, and its domain
        self.ended: dict[str, tuple[Status, Domain]] = {}
        self.cuts: dict[str, tuple[datetime, str]] = {}
        self.last: tuple[datetime, int] | None = None
        self.cut_until: datetime | None = None  # the latest cascade end applied after `last`
        # open_ as (value, domain) pairs in order of value, once asked
        self.held: tuple[tuple[str, Domain], ...] | None = None
        # what removals() had read of the intervals compact() let go of
        self.closed: list[datetime] = []
        self.span_end: datetime | None = None

    def removals(self) -> list[datetime]:
        """The instants at which the key is left with no value, over the whole fold."""
        return _segment_ends(self.intervals, self.closed, self.span_end)

    def compact(self) -> None:
        """Let go of the ended intervals, keeping what :meth:`removals` read of them. What
        :meth:`resumable` accepts opens after every interval here, so removals go on from
        where they left off; an ended interval that opened after an open one lies within
        that one's span, whatever ends it later (at or after every end here)."""
        kept: list[Interval] = []
        span_end = self.span_end
        for interval in self.intervals:
            if interval.end is None:
                kept.append(interval)
            elif not kept:  # before every open interval: read as removals() reads it
                if span_end is not None and interval.start > span_end:
                    self.closed.append(span_end)
                    span_end = None
                if span_end is None or interval.end > span_end:
                    span_end = interval.end
        self.span_end = span_end
        self.intervals = kept

    def held_values(self) -> tuple[tuple[str, Domain], ...]:
        """The values held after the last operation with their domains, in order of value:
        asked for every scoring of the key's probes, built again only after open_ changed."""
        held = self.held
        if held is None:
            open_ = self.open_
            held = self.held = tuple([(v, open_[v].domain) for v in sorted(open_)])
        return held

    def resumable(self, op: _Op) -> bool:
        return (self.last is None or self.last < (op.at, op.seq)) and (
            self.cut_until is None or self.cut_until <= op.at
        )

    def recut(self, cascade: Callable[[Interval], tuple[datetime, str] | None]) -> bool:
        """Cut the values held again, after the removals of a key they depend on changed,
        when nothing of the fold can change but that: every change of those removals lies
        after the last operation and no cascade end was applied after it. False otherwise
        (the key must be folded from the start)."""
        if self.last is None or (self.cut_until is not None and self.cut_until > self.last[0]):
            return False
        for value, interval in self.open_.items():
            cut = cascade(interval) if interval.depends_on else None
            if cut is not None:
                self.cuts[value] = cut
        self.close_cuts(None)
        self.compact()
        return True

    def close_cuts(self, until: datetime | None) -> None:
        if not self.cuts:
            return
        for value, (at, reason) in list(self.cuts.items()):
            if until is None or at <= until:
                self.held = None
                interval = self.open_.pop(value)
                interval.end, interval.end_kind, interval.reason = at, "invalidated", reason
                self.ended[value] = _ENDED["invalidated", interval.domain]
                del self.cuts[value]
                if until is None and (self.cut_until is None or at > self.cut_until):
                    self.cut_until = at

    def step(
        self,
        op: _Op,
        multi: bool,
        cascade: Callable[[Interval], tuple[datetime, str] | None],
    ) -> None:
        self.last = (op.at, op.seq)
        open_, cuts = self.open_, self.cuts
        if cuts:
            self.close_cuts(op.at)
        if op.assert_:
            if op.value in open_:
                return
            self.held = None
            ended_values = self.ended
            if not multi:
                for other in open_.values():
                    other.end, other.end_kind = op.at, "superseded"
                    other.reason = replaced_by(op.value)
                    ended_values[other.value] = _ENDED["superseded", other.domain]
                open_.clear()
                cuts.clear()
            interval = Interval(op.value, op.domain, op.at, None, None, None, op.depends_on)
            open_[op.value] = interval
            self.intervals.append(interval)
            ended_values.pop(op.value, None)
            cut = cascade(interval) if op.depends_on else None
            if cut is not None:
                cuts[op.value] = cut
        else:
            ended = open_.pop(op.value, None)
            cuts.pop(op.value, None)
            if ended is not None:
                self.held = None
                ended.end, ended.end_kind, ended.reason = op.at, op.end_kind, op.reason
                self.ended[op.value] = _ENDED[op.end_kind or "invalidated", ended.domain]


class GroundTruth:
    """Validity intervals per fact, built incrementally as events arrive.

    An event's keys are folded again at once: only the new operations when they land after
    every other one of the key, else from the start. The keys depending on a key are folded
    again only when the instants at which that key is left with no value changed (that is
    all a cascade reads); a dependent whose operations all lie before the first changed
    instant keeps its fold and only has its held values cut again. Once a dependency cycle
    appears, every change invalidates all dependents instead, and folds that met the cycle
    are not kept.
    """

    def __init__(self, events: Iterable[ChangeEvent] = ()) -> None:
        self._keys: dict[FactKey, _KeyHistory] = {}
        self._codec = _OpCodec()
        self._dependents: dict[FactKey, set[FactKey]] = {}
        self._depends: dict[FactKey, set[FactKey]] = {}
        self._effective: dict[FactKey, _Folded] = {}
        self._removals: dict[FactKey, list[datetime]] = {}
        self._seq = 0
        self._cycle_cut = False
        self._cyclic = False
        # The event's operations by key, and the keys among them given one out of time order
        # (or _REFOLD): those are folded from the start
        self._pushed: dict[FactKey, list[_Op]] = {}
        self._inserted: set[FactKey] = set()
        # Operations pushed since a caller last asked to keep them (see keep_pushed), by key:
        # None until one asks
        self._journal: dict[FactKey, list[_Op]] | None = None
        # Keys whose operations are held, least recently given one or folded first
        self._warm: dict[FactKey, None] = {}
        self.latest: datetime | None = None
        for event in events:
            self.apply(event)

    # -- building -------------------------------------------------------------------------

    def apply(self, event: ChangeEvent) -> set[FactKey]:
        """Fold one event in; return every key whose intervals may have changed (the event's
        own keys and the keys whose cascades that change reaches)."""
        fact, at = event.fact, event.timestamp
        deps = event.depends_on
        self._pushed = {}
        self._inserted = set()
        if event.type in ("added", "revalidated"):
            self._push(
                fact,
                _Op(at, self._next(), True, fact.value, fact.domain, None, None, deps),
                event.multi_valued,
            )
        elif event.previous is not None:  # a revision: the model requires its previous fact
            # A revision ends what it revises at its own time, whatever the key's cardinality
            # is or later becomes (for a single-valued key the new value supersedes at the
            # same instant anyway).
            prev = event.previous
            self._push(
                prev,
                _Op(
                    at,
                    self._next(),
                    False,
                    prev.value,
                    prev.domain,
                    "superseded",
                    replaced_by(fact.value),
                    (),
                ),
                False,
            )
            self._push(
                fact,
                _Op(at, self._next(), True, fact.value, fact.domain, None, None, deps),
                event.multi_valued,
            )
        else:
            self._push(
                fact,
                _Op(
                    at,
                    self._next(),
                    False,
                    fact.value,
                    fact.domain,
                    "invalidated",
                    event.reason or "invalidated",
                    (),
                ),
                event.multi_valued,
            )
        if self.latest is None or at > self.latest:
            self.latest = at
        if self._cyclic:
            touched = self.affected(event.keys)
            for key in touched:
                self._effective.pop(key, None)
                self._removals.pop(key, None)
            return touched
        return self._settle()

    def _settle(self) -> set[FactKey]:
        """Fold the keys the event pushed to, then the dependents of every key whose
        removals changed, transitively."""
        touched: set[FactKey] = set()
        queue = list(self._pushed)
        # The removals each queued key had when its dependents last read them: a key folded
        # early, through a dependent's cascade, must still pass its change on.
        before: dict[FactKey, list[datetime] | None] = {}
        for key in queue:  # (a loop: most events push to one key)
            before[key] = self._removals.get(key)
        # Dependents whose kept fold only needs its held values cut again (Folded.recut)
        recut: set[FactKey] = set()
        while queue:
            key = queue.pop()
            touched.add(key)
            ops = self._pushed.pop(key, None)
            old = before.pop(key, None)
            folded = self._effective.get(key)
            history = self._keys[key]
            if key in recut and folded is not None:
                recut.discard(key)
                if not folded.recut(self._cascade(frozenset({key}))):
                    self._effective.pop(key)
                    folded = self._fold(key)
            elif (
                ops is not None
                and folded is not None
                and key not in self._inserted
                and folded.resumable(ops[0])
            ):
                was_open = bool(folded.open_)
                cascade = self._cascade(frozenset({key}))
                for op in ops:
                    folded.step(op, history.multi, cascade)
                folded.close_cuts(None)
                folded.compact()
                if was_open and folded.open_ and old is not None:
                    continue  # covered before and after, in one span: removals unchanged
            else:
                self._effective.pop(key, None)
                self._removals.pop(key, None)
                folded = self._fold(key)
            new = folded.removals()
            if key in self._effective:
                self._removals[key] = new
            if new != old:
                # nothing a dependent's cascade reads changed before this instant
                since = None if old is None else _first_difference(old, new)
                for dependent in sorted(self._dependents.get(key, ())):
                    kept = self._effective.get(dependent)
                    # its kept fold stands but for the cuts when its operations all lie
                    # before the change (and before any other change it is queued for)
                    fits = (
                        since is not None
                        and kept is not None
                        and kept.last is not None
                        and kept.last[0] < since
                        and dependent not in self._pushed
                    )
                    if dependent not in before:
                        before[dependent] = self._removals.get(dependent)
                        if fits:
                            recut.add(dependent)
                    elif not fits:
                        recut.discard(dependent)
                    if dependent not in recut:
                        self._effective.pop(dependent, None)
                    self._removals.pop(dependent, None)
                    queue.append(dependent)
        return touched

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _history(self, key: FactKey, multi: bool) -> _KeyHistory:
        history = self._keys.get(key)
        if history is None:
            history = self._keys[key] = _KeyHistory(key, self._codec)
        key = history.key
        warm = self._warm
        warm.pop(key, None)
        warm[key] = None
        if multi and not history.multi:
            history.multi = True
            # Becoming multi-valued changes how every earlier assertion folds: no resuming.
            self._pushed.setdefault(key, []).append(_REFOLD)
            self._inserted.add(key)
        return history

    def _push(self, fact: Fact, op: _Op, multi: bool) -> None:
        history = self._history(fact.key, multi)
        key = history.key
        if fact.value not in history.values:
            history.values[fact.value] = fact.domain
            history.rank[fact.value] = len(history.rank)
        history.asserted = history.asserted or op.assert_
        ops = history.ops
        last = ops.last()
        appended = last is None or (
            last.at < op.at or (last.at == op.at and last.seq <= op.seq)  # (at, seq) order
        )
        if appended:
            ops.append(op)
        else:
            ops.insort(op)
            self._inserted.add(key)
        self._pushed.setdefault(key, []).append(op)
        if self._journal is not None:
            self._journal.setdefault(key, []).append(op)
        for dep in op.depends_on:
            dependents = self._dependents.get(dep)
            if dependents is None:
                dependents = self._dependents[dep] = set()
            if key not in dependents:
                dependents.add(key)
                self._depends.setdefault(key, set()).add(dep)
                # a new edge closes a cycle only through a key something already depends on:
                # for a key given its dependencies before any dependent, as most are, no walk
                if not self._cyclic and (
                    dep == key or (key in self._dependents and key in self._reaches(dep))
                ):
                    self._cyclic = True
                    self._effective.clear()
                    self._removals.clear()

    def _reaches(self, start: FactKey) -> set[FactKey]:
        """Every key ``start`` depends on, transitively."""
        seen: set[FactKey] = set()
        stack = [start]
        while stack:
            for dep in self._depends.get(stack.pop(), ()):
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        return seen

    def affected(self, keys: Iterable[FactKey]) -> set[FactKey]:
        """The keys given plus every key that depends on them, transitively."""
        seen: set[FactKey] = set()
        stack = list(keys)
        while stack:
            key = stack.pop()
            if key in seen:
                continue
            seen.add(key)
            stack.extend(sorted(self._dependents.get(key, ())))  # same order every run
        return seen

    # -- reading --------------------------------------------------------------------------

    def keys(self) -> Iterable[FactKey]:
        return self._keys.keys()

    def asserted(self, key: FactKey) -> bool:
        history = self._keys.get(key)
        return history is not None and history.asserted

    def multi_valued(self, key: FactKey) -> bool:
        history = self._keys.get(key)
        return bool(history and history.multi)

    def values(self, key: FactKey) -> dict[str, Domain]:
        """Every value the key has been given, with its domain, in the order first given."""
        history = self._keys.get(key)
        return dict(history.values) if history else {}

    def has_value(self, key: FactKey, value: str) -> bool:
        history = self._keys.get(key)
        return history is not None and value in history.values

    def value_rank(self, key: FactKey) -> Callable[[str], int]:
        """Orders a key's values as :meth:`values` lists them."""
        return self._keys[key].rank.__getitem__

    def open_values(self, key: FactKey) -> Iterable[str]:
        """The values the key holds from its latest event on (``current`` at ``latest``)."""
        return (self._effective.get(key) or self._fold(key)).open_.keys()

    def status(self, fact: Fact, at: datetime) -> Status:
        return self.status_of(fact.key, fact.value, at)

    def status_of(self, key: FactKey, value: str, at: datetime) -> Status:
        """:meth:`state_of`'s status (asked for every fact of every score)."""
        if self.latest is None or at < self.latest:
            return self._past_state(key, value, at)[0]
        folded = self._effective.get(key) or self._fold(key)
        if value in folded.open_:
            return "current"
        return folded.ended.get(value, _UNKNOWN)[0]

    def state_of(self, key: FactKey, value: str, at: datetime) -> tuple[Status, Domain | None]:
        """The value's status at ``at`` and the domain of the interval that gives it (the
        one that holds, or that held last and ended): the domain an ended fact is filed
        under, whatever domain other events gave the same value."""
        if self.latest is None or at < self.latest:
            return self._past_state(key, value, at)
        # every interval starts by the latest event, and every end is an event's time
        folded = self._effective.get(key) or self._fold(key)
        interval = folded.open_.get(value)
        if interval is not None:
            return "current", interval.domain
        return folded.ended.get(value, _UNKNOWN)

    def _past_state(self, key: FactKey, value: str, at: datetime) -> tuple[Status, Domain | None]:
        best = None  # the latest of the value's intervals to start by `at`
        for interval in self._whole_fold(key).intervals:
            if interval.start > at:
                break
            if interval.value == value:
                best = interval
        if best is None:
            return _UNKNOWN
        if best.end is None or best.end > at:
            return "current", best.domain
        return best.end_kind or "invalidated", best.domain

    def current(self, key: FactKey, at: datetime) -> list[Fact]:
        """The facts the key holds at ``at``, in order of value."""
        return [Fact(key.subject, key.predicate, v, d) for v, d in self.held(key, at)]

    def held(self, key: FactKey, at: datetime) -> tuple[tuple[str, Domain], ...]:
        """The values the key holds at ``at`` with their domains, in order of value: what
        :meth:`current` gives, without a fact built for each (asked at every score)."""
        if self.latest is not None and at >= self.latest:
            return (self._effective.get(key) or self._fold(key)).held_values()
        found = {
            i.value: i.domain
            for i in self._whole_fold(key).intervals
            if i.start <= at and (i.end is None or i.end > at)
        }
        return tuple([(v, found[v]) for v in sorted(found)])

    def _whole_fold(self, key: FactKey) -> _Folded:
        """The key's fold with every interval it ever had: what a past instant asks of it
        (kept folds let the ended ones go). Made for the question, not kept."""
        history = self._keys.get(key)
        if history is None:
            return _Folded()
        outer_cut, self._cycle_cut = self._cycle_cut, False
        whole = history.fold(self._cascade(frozenset({key})))
        self._cycle_cut = outer_cut
        return whole

    def _fold(self, key: FactKey, visiting: frozenset[FactKey] = _NO_KEYS) -> _Folded:
        """The key's kept fold, folded now if none is kept (a caller reading the newest
        instant looks in ``_effective`` first itself: this is asked for every score)."""
        cached = self._effective.get(key)
        if cached is not None:
            return cached
        history = self._keys.get(key)
        if history is None:
            return _Folded()
        warm = self._warm
        warm.pop(key, None)
        warm[key] = None
        visiting = visiting | {key}
        outer_cut, self._cycle_cut = self._cycle_cut, False
        own = history.fold(self._cascade(visiting))
        own.compact()
        if not self._cycle_cut:  # a result that depends on where a cycle was entered is not kept
            self._effective[key] = own
        self._cycle_cut = self._cycle_cut or outer_cut
        return own

    def _cascade(
        self, visiting: frozenset[FactKey]
    ) -> Callable[[Interval], tuple[datetime, str] | None]:
        def cascade(interval: Interval) -> tuple[datetime, str] | None:
            first: tuple[datetime, str] | None = None
            for dep in interval.depends_on:
                if dep in visiting:
                    self._cycle_cut = True  # a dependency cycle cascades nothing
                    continue
                removed = self._first_removal(dep, interval.start, visiting)
                if removed is not None and (first is None or removed < first[0]):
                    first = (removed, was_removed(dep))
            return first

        return cascade

    def _first_removal(
        self, key: FactKey, after: datetime, visiting: frozenset[FactKey]
    ) -> datetime | None:
        removals = self._removals.get(key)
        if removals is None:
            removals = self._fold(key, visiting).removals()
            if key in self._effective:
                self._removals[key] = removals
        index = bisect.bisect_right(removals, after)
        return removals[index] if index < len(removals) else None

    # -- a key's own operations, out and back in (a restart without the events) -----------

    def operations(self, key: FactKey) -> list[Operation]:
        """The key's operations in order of event time, as :meth:`from_stored` reads them."""
        return [Operation(*op) for op in self._keys[key].ops]

    def keep_pushed(self) -> None:
        """Keep the operations pushed from now on (those kept so far are dropped), for
        :meth:`pushed_since_kept`."""
        self._journal = {}

    def pushed_since_kept(self, key: FactKey) -> list[Operation] | None:
        """The key's operations pushed since :meth:`keep_pushed`, in the order pushed; None
        if it was never called (read :meth:`operations` then)."""
        if self._journal is None:
            return None
        return [Operation(*op) for op in self._journal.get(key, ())]

    def release(self, keep: int, load: Callable[[FactKey], Iterable[OperationRow]]) -> int:
        """Let go of the operations and folds of every key but the ``keep`` given an
        operation or folded last; ``load`` reads a key's operations back when it is next
        needed, so every operation of the keys let go must be where ``load`` reads (as
        :meth:`from_stored`). What a key's dependents' cascades read (the instants it is
        left with no value) is kept. How many keys were let go."""
        warm = self._warm
        cold = list(itertools.islice(warm, max(0, len(warm) - keep)))
        for key in cold:
            del warm[key]
            history = self._keys[key]
            listed = history._listed if isinstance(history, _StoredHistory) else None
            stored = _StoredHistory(key, load, self._codec, listed)
            stored.multi, stored.asserted = history.multi, history.asserted
            if listed is None:  # else its values are still as stored, not decoded
                stored.values, stored.rank = history.values, history.rank
            self._keys[key] = stored
            self._effective.pop(key, None)
        return len(cold)

    @classmethod
    def from_stored(
        cls,
        keys: Iterable[StoredKey],
        depends: Iterable[tuple[FactKey, FactKey]],
        seq: int,
        latest: datetime | None,
        load: Callable[[FactKey], Iterable[OperationRow]],
    ) -> GroundTruth:
        """The truth a caller stored: per key whether it is multi-valued, asserted, and its
        values with their domains in the order first given (or that list as JSON text, read
        when the key's values are first asked for); each (key, key it depends on); the last
        operation's ``seq`` and the latest event time. A key's operations are read with
        ``load`` (each with :class:`Operation`'s fields) only when first needed, so this
        costs the number of keys, not of operations. Nothing is folded until read."""
        truth = cls()
        codec = truth._codec
        for key, multi, asserted, values in keys:
            if isinstance(values, str):
                history = _StoredHistory(key, load, codec, values)
            else:
                history = _StoredHistory(key, load, codec)
                history.values = dict(values)
                history.rank = {value: rank for rank, (value, _) in enumerate(values)}
            history.multi, history.asserted = multi, asserted
            truth._keys[key] = history
        for key, dep in depends:
            truth._dependents.setdefault(dep, set()).add(key)
            truth._depends.setdefault(key, set()).add(dep)
        truth._seq, truth.latest = seq, latest
        truth._cyclic = _has_cycle(truth._depends)
        return truth


def _has_cycle(depends: dict[FactKey, set[FactKey]]) -> bool:
    """Whether the dependency graph has a cycle, in time linear in its edges (Kahn's
    algorithm: peel off keys nothing left depends on; a cycle is what cannot be peeled)."""
    dependents_left = {key: 0 for key in depends}
    for deps in depends.values():
        for dep in deps:
            dependents_left[dep] = dependents_left.get(dep, 0) + 1
    free = [key for key, n in dependents_left.items() if n == 0]
    peeled = 0
    while free:
        key = free.pop()
        peeled += 1
        for dep in depends.get(key, ()):
            dependents_left[dep] -= 1
            if dependents_left[dep] == 0:
                free.append(dep)
    return peeled < len(dependents_left)


@functools.lru_cache(maxsize=4096)
def replaced_by(value: str) -> str:
    """The reason a superseded value ended: one string per value, not one per revision
    (every revision's operation and interval keeps one, for the whole history)."""
    return f"replaced by {value!r}"


@functools.lru_cache(maxsize=4096)
def was_removed(key: FactKey) -> str:
    """The reason a cascade ended a fact, shared as :func:`replaced_by`."""
    return f"{key} was removed"


def _first_difference(before: list[datetime], after: list[datetime]) -> datetime:
    """The first instant in one of two different sorted lists and not the other."""
    for old, new in zip(before, after, strict=False):
        if old != new:
            return min(old, new)
    return (before if len(before) > len(after) else after)[min(len(before), len(after))]


def _segment_ends(
    intervals: list[Interval], closed: list[datetime], seg_end: datetime | None
) -> list[datetime]:
    """The instants at which a key is left with no value: ends of its maximal covered spans
    (after ``closed`` and a span ending at ``seg_end``, read from intervals before these;
    ``intervals`` in order of start)."""
    ends = list(closed)
    for interval in intervals:
        if seg_end is not None and interval.start > seg_end:
            ends.append(seg_end)
            seg_end = None
        if interval.end is None:
            return ends
        if seg_end is None or interval.end > seg_end:
            seg_end = interval.end
    if seg_end is not None:
        ends.append(seg_end)
    return ends


class Operation(NamedTuple):
    """One operation on a key's history, as :meth:`GroundTruth.operations` exports it."""

    at: datetime
    seq: int
    assert_: bool
    value: str
    domain: Domain
    end_kind: EndKind | None
    reason: str | None
    depends_on: tuple[FactKey, ...]


#: :class:`Operation`'s fields as a plain tuple, as :meth:`GroundTruth.from_stored` reads them.
OperationRow = tuple[
    datetime, int, bool, str, Domain, EndKind | None, str | None, tuple[FactKey, ...]
]
#: A stored key: (key, multi-valued, asserted, [(value, domain)] in the order first given).
StoredKey = tuple[FactKey, bool, bool, list[tuple[str, Domain]] | str]

_UNKNOWN: tuple[Status, None] = ("unknown", None)

_OPS_SLOT: Any = _KeyHistory.__dict__["ops"]  # the slot a stored history fills when read
_VALUES_SLOT: Any = _KeyHistory.__dict__["values"]
_RANK_SLOT: Any = _KeyHistory.__dict__["rank"]


_Slotted = TypeVar("_Slotted")


class _ReadOnFirstUse(Generic[_Slotted]):
    """One of :class:`_KeyHistory`'s slots on a :class:`_StoredHistory`: reading it decodes
    the stored values first, while they are still the stored text; setting it drops that
    text."""

    __slots__ = ("_slot",)

    def __init__(self, slot: Any) -> None:
        self._slot = slot

    def __get__(self, history: _StoredHistory, owner: object = None) -> _Slotted:
        if history._listed is not None:
            history._read_values()
        return self._slot.__get__(history)  # type: ignore[no-any-return]

    def __set__(self, history: _StoredHistory, value: _Slotted) -> None:
        history._listed = None
        self._slot.__set__(history, value)


class _StoredHistory(_KeyHistory):
    """A key's history whose operations are read from where they were stored when first
    needed (after a restart most keys are never touched again)."""

    __slots__ = ("_codec", "_listed", "_load")

    def __init__(
        self,
        key: FactKey,
        load: Callable[[FactKey], Iterable[OperationRow]],
        codec: _OpCodec,
        listed: str | None = None,
    ) -> None:
        # what _KeyHistory's constructor sets, but no log, nor values, until they are read:
        # most of a restart's keys are not touched by its run
        self.key = key
        self.multi = self.asserted = False
        self._codec = codec
        self._load: Callable[[FactKey], Iterable[OperationRow]] | None = load
        self._listed = listed  # its values and their domains as stored, until first read
        if listed is None:
            _VALUES_SLOT.__set__(self, {})
            _RANK_SLOT.__set__(self, {})

    def _read_values(self) -> None:
        listed = self._listed
        assert listed is not None
        self._listed = None
        pairs = json.loads(listed)
        _VALUES_SLOT.__set__(self, dict(pairs))
        _RANK_SLOT.__set__(self, {value: rank for rank, (value, _) in enumerate(pairs)})

    values: _ReadOnFirstUse[dict[str, Domain]] = _ReadOnFirstUse(_VALUES_SLOT)
    rank: _ReadOnFirstUse[dict[str, int]] = _ReadOnFirstUse(_RANK_SLOT)

    @property
    def ops(self) -> PackedLog[_Op]:
        load = self._load
        if load is not None:
            self._load = None
            ops = [_Op(*row) for row in load(self.key)]
            ops.sort()  # by (at, seq): seq is unique, so no later field is compared
            log: PackedLog[_Op] = PackedLog(self._codec, _op_order)
            log.replace(ops)
            _OPS_SLOT.__set__(self, log)
            return log
        return _OPS_SLOT.__get__(self)  # type: ignore[no-any-return]

    @ops.setter
    def ops(self, value: PackedLog[_Op]) -> None:
        self._load = None
        _OPS_SLOT.__set__(self, value)
