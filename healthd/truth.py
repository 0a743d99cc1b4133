"""Ground truth: what was true when, folded from a timeline by event time.

Pure: no I/O, no clock. Events may arrive out of order; each key keeps its operations sorted
by event time (arrival order breaks ties), so a backdated revision that arrives after a newer
one takes its place in history and never replaces the newer value. Ends cascade along
``depends_on``: when a key a fact depends on is left with no value, the fact ends too (a mere
change of that key's value does not cascade).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, NamedTuple

from healthd.model import ChangeEvent, Domain, Fact, FactKey, Status

EndKind = Literal["superseded", "invalidated"]


class _Op(NamedTuple):
    at: datetime
    seq: int
    assert_: bool  # True: the value holds from `at`; False: it ends at `at`
    value: str
    domain: Domain
    end_kind: EndKind | None
    reason: str | None
    depends_on: tuple[FactKey, ...]


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


class _KeyHistory:
    __slots__ = ("asserted", "multi", "ops", "values")

    def __init__(self) -> None:
        self.ops: list[_Op] = []
        self.multi = False
        self.asserted = False
        self.values: dict[str, Domain] = {}

    def fold(self, cascade: Callable[[Interval], tuple[datetime, str] | None]) -> list[Interval]:
        """The key's intervals in order of start. ``cascade`` gives the instant (and reason)
        at which a dependency's removal ends an interval, if it does; an assertion after that
        instant starts the fact afresh."""
        out: list[Interval] = []
        open_: dict[str, Interval] = {}
        cuts: dict[str, tuple[datetime, str]] = {}

        def close_cut(until: datetime | None) -> None:
            for value, (at, reason) in list(cuts.items()):
                if until is None or at <= until:
                    interval = open_.pop(value)
                    interval.end, interval.end_kind, interval.reason = at, "invalidated", reason
                    del cuts[value]

        for op in self.ops:
            close_cut(op.at)
            if op.assert_:
                if op.value in open_:
                    continue
                if not self.multi:
                    for other in open_.values():
                        other.end, other.end_kind = op.at, "superseded"
                        other.reason = f"replaced by {op.value!r}"
                    open_.clear()
                    cuts.clear()
                interval = Interval(op.value, op.domain, op.at, None, None, None, op.depends_on)
                open_[op.value] = interval
                out.append(interval)
                cut = cascade(interval) if op.depends_on else None
                if cut is not None:
                    cuts[op.value] = cut
            else:
                ended = open_.pop(op.value, None)
                cuts.pop(op.value, None)
                if ended is not None:
                    ended.end, ended.end_kind, ended.reason = op.at, op.end_kind, op.reason
        close_cut(None)
        return out


class GroundTruth:
    """Validity intervals per fact, built incrementally as events arrive."""

    def __init__(self, events: Iterable[ChangeEvent] = ()) -> None:
        self._keys: dict[FactKey, _KeyHistory] = {}
        self._dependents: dict[FactKey, set[FactKey]] = {}
        self._effective: dict[FactKey, list[Interval]] = {}
        self._removals: dict[FactKey, list[datetime]] = {}
        self._seq = 0
        self._cycle_cut = False
        self.latest: datetime | None = None
        for event in events:
            self.apply(event)

    # -- building -------------------------------------------------------------------------

    def apply(self, event: ChangeEvent) -> set[FactKey]:
        """Fold one event in; return every key whose intervals may have changed (the event's
        own keys and, transitively, the keys that depend on them)."""
        fact, at = event.fact, event.timestamp
        deps = event.depends_on
        if event.type in ("added", "revalidated"):
            self._push(
                fact,
                _Op(at, self._next(), True, fact.value, fact.domain, None, None, deps),
                event.multi_valued,
            )
        elif event.previous is not None:  # a revision: the model requires its previous fact
            prev = event.previous
            history = self._history(fact.key, event.multi_valued)
            if prev.key != fact.key or history.multi:
                self._push(
                    prev,
                    _Op(
                        at,
                        self._next(),
                        False,
                        prev.value,
                        prev.domain,
                        "superseded",
                        f"replaced by {fact.value!r}",
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
        touched = self.affected(event.keys)
        for key in touched:
            self._effective.pop(key, None)
            self._removals.pop(key, None)
        return touched

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _history(self, key: FactKey, multi: bool) -> _KeyHistory:
        history = self._keys.get(key)
        if history is None:
            history = self._keys[key] = _KeyHistory()
        if multi:
            history.multi = True
        return history

    def _push(self, fact: Fact, op: _Op, multi: bool) -> None:
        history = self._history(fact.key, multi)
        history.values.setdefault(fact.value, fact.domain)
        history.asserted = history.asserted or op.assert_
        ops = history.ops
        if not ops or (ops[-1].at, ops[-1].seq) <= (op.at, op.seq):
            ops.append(op)
        else:
            bisect.insort(ops, op, key=lambda o: (o.at, o.seq))
        for dep in op.depends_on:
            self._dependents.setdefault(dep, set()).add(fact.key)

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
        """Every value the key has been given, with its domain."""
        history = self._keys.get(key)
        return dict(history.values) if history else {}

    def status(self, fact: Fact, at: datetime) -> Status:
        return self.status_of(fact.key, fact.value, at)

    def status_of(self, key: FactKey, value: str, at: datetime) -> Status:
        best: Interval | None = None
        for interval in self._intervals(key, frozenset()):
            if (
                interval.value == value
                and interval.start <= at
                and (best is None or interval.start >= best.start)
            ):
                best = interval
        if best is None:
            return "unknown"
        if best.end is None or best.end > at:
            return "current"
        return best.end_kind or "invalidated"

    def current(self, key: FactKey, at: datetime) -> list[Fact]:
        """The facts the key holds at ``at``, in order of value."""
        found = {
            i.value: i.domain
            for i in self._intervals(key, frozenset())
            if i.start <= at and (i.end is None or i.end > at)
        }
        return [Fact(key.subject, key.predicate, v, found[v]) for v in sorted(found)]

    def _intervals(self, key: FactKey, visiting: frozenset[FactKey]) -> list[Interval]:
        cached = self._effective.get(key)
        if cached is not None:
            return cached
        history = self._keys.get(key)
        if history is None:
            return []
        visiting = visiting | {key}
        outer_cut, self._cycle_cut = self._cycle_cut, False

        def cascade(interval: Interval) -> tuple[datetime, str] | None:
            first: tuple[datetime, str] | None = None
            for dep in interval.depends_on:
                if dep in visiting:
                    self._cycle_cut = True  # a dependency cycle cascades nothing
                    continue
                removed = self._first_removal(dep, interval.start, visiting)
                if removed is not None and (first is None or removed < first[0]):
                    first = (removed, f"{dep} was removed")
            return first

        own = history.fold(cascade)
        if not self._cycle_cut:  # a result that depends on where a cycle was entered is not kept
            self._effective[key] = own
        self._cycle_cut = self._cycle_cut or outer_cut
        return own

    def _first_removal(
        self, key: FactKey, after: datetime, visiting: frozenset[FactKey]
    ) -> datetime | None:
        removals = self._removals.get(key)
        if removals is None:
            removals = _segment_ends(self._intervals(key, visiting))
            if key in self._effective:
                self._removals[key] = removals
        index = bisect.bisect_right(removals, after)
        return removals[index] if index < len(removals) else None


def _segment_ends(intervals: list[Interval]) -> list[datetime]:
    """The instants at which a key is left with no value: ends of its maximal covered spans."""
    ends: list[datetime] = []
    seg_end: datetime | None = None
    open_ended = False
    for interval in sorted(intervals, key=lambda i: i.start):
        if open_ended:
            break
        if seg_end is not None and interval.start > seg_end:
            ends.append(seg_end)
            seg_end = None
        if interval.end is None:
            open_ended = True
        elif seg_end is None or interval.end > seg_end:
            seg_end = interval.end
    if not open_ended and seg_end is not None:
        ends.append(seg_end)
    return ends
