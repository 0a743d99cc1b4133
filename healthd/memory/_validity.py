"""How the reference memory folds one key's log into validity intervals, in event time.

Pure: no I/O, no clock. Operations are taken in event-time order (arrival order breaks ties),
whatever order they arrived in, so a late, backdated event lands where it happened and never
overrides a record observed later. The reference memory stores the log and re-folds a key
whenever it changes, which is what makes every arrival order give the same records.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from healthd.model import Domain, FactKey

#: (instant, reason) at which a dependency's removal ends an interval.
Cut = tuple[float, str]


class LogOp(NamedTuple):
    """One entry of a key's log: an assertion of a value, or the end of one (a tuple: one is
    made for every event applied, and a frozen dataclass costs several times as much)."""

    seq: int  # arrival order, global to the memory
    at: float  # event time
    asserts: bool
    value: str
    domain: Domain
    end_state: str = "invalidated"  # for an end: "invalidated" or "superseded"
    reason: str = ""
    depends_on: tuple[FactKey, ...] = ()
    # for an assertion: how long after it a record soft-expires and is purged (None: never),
    # as the memory's settings were when it was logged
    expiry: tuple[float | None, float | None] = (None, None)


@dataclass(slots=True)
class Validity:
    """A stretch of event time during which the key held ``value``; becomes one record."""

    opener: LogOp
    validated: LogOp  # the newest assertion within the stretch (its time stamps the expiry)
    end: float | None = None
    end_state: str | None = None
    end_reason: str | None = None
    superseded_by: int | None = None  # the opener seq of the interval that replaced it


@functools.lru_cache(maxsize=4096)
def revised_to(value: str) -> str:
    """The reason a revision ended a record: one string per value, not one per revision
    (every revision's log entry and interval keeps one, for the whole history)."""
    return f"revised to {value!r}"


@functools.lru_cache(maxsize=4096)
def was_removed(key: FactKey) -> str:
    """The reason a cascade ended a record, shared as :func:`revised_to`."""
    return f"{key} was removed"


class Folding:
    """A key's log folded into its intervals (in order of start), one operation at a time.

    Operations are stepped in event-time order (``(at, seq)``), then :meth:`close` applies
    the cascade ends still pending. An assertion of a value already held re-validates it.
    With ``supersession`` a new value of a single-valued key ends the values held. An end
    closes its value if held. ``cascade`` gives, for an opening assertion, the first instant
    after it at which a dependency was left with no value: the interval ends there unless
    something ends it first, and an assertion at or after that instant starts the value
    afresh. The fold is kept between calls: an operation that lands after every other one
    of its key (and after every cascade end already applied) is folded in alone and gives
    what folding the whole log again would give."""

    __slots__ = (
        "closed",
        "cut_until",
        "cuts",
        "held",
        "intervals",
        "last",
        "multi",
        "replaced",
        "span_end",
        "supersession",
    )

    def __init__(self, *, multi: bool, supersession: bool) -> None:
        self.multi = multi
        self.supersession = supersession
        self.intervals: list[Validity] = []
        self.held: dict[str, Validity] = {}
        self.cuts: dict[str, Cut] = {}
        self.last: tuple[float, int] | None = None
        self.cut_until: float | None = None  # the latest cascade end applied by close()
        # what removals() had read of the intervals compact() let go of
        self.closed: list[float] = []
        self.span_end: float | None = None
        # the interval the last operation ended as superseded: a revision's end, whose
        # assertion (the next operation, if on this key) is what replaced it
        self.replaced: tuple[int, Validity] | None = None

    def removals(self) -> list[float]:
        """The instants at which the key is left with no value, over the whole fold."""
        return removals(self.intervals, self.closed, self.span_end)

    def compact(self) -> None:
        """Let go of the ended intervals (a key revised for years keeps only the values it
        holds), keeping what :func:`removals` read of them. What :meth:`resumable` accepts
        opens after every interval here, so removals goes on from where they left it; an
        ended interval that opened after a held one lies within that one's span, whatever
        ends it later (at or after every end here), and changes no removal."""
        kept: list[Validity] = []
        span_end = self.span_end
        for interval in self.intervals:
            if interval.end is None:
                kept.append(interval)
            elif not kept:  # before every held interval: read as removals() reads it
                if span_end is not None and interval.opener.at > span_end:
                    self.closed.append(span_end)
                    span_end = None
                if span_end is None or interval.end > span_end:
                    span_end = interval.end
        self.span_end = span_end
        self.intervals = kept

    def resumable(self, op: LogOp) -> bool:
        return (self.last is None or self.last < (op.at, op.seq)) and (
            self.cut_until is None or self.cut_until <= op.at
        )

    def close(self) -> None:
        """Apply the cascade ends still pending (they lie after the last operation)."""
        if self.cuts:
            self._apply_cuts(None)

    def _apply_cuts(self, until: float | None) -> None:
        for value, (at, reason) in list(self.cuts.items()):
            if until is None or at <= until:
                closed = self.held.pop(value)
                closed.end, closed.end_state, closed.end_reason = at, "invalidated", reason
                del self.cuts[value]
                if until is None and (self.cut_until is None or at > self.cut_until):
                    self.cut_until = at

    def step(self, op: LogOp, cascade: Callable[[LogOp], Cut | None]) -> None:
        self.last = (op.at, op.seq)
        held, cuts = self.held, self.cuts
        if cuts:
            self._apply_cuts(op.at)
        current = held.get(op.value)
        revised, self.replaced = self.replaced, None
        if op.asserts:
            if revised is not None and revised[0] == op.seq - 1:  # the same revision's end
                revised[1].superseded_by = current.opener.seq if current else op.seq
            if current is not None:
                # a re-validation re-stamps, at its own instant too (with the TTL of its
                # moment); a backdated one leaves the newer validation
                if op.at >= current.validated.at:
                    current.validated = op
                return
            if self.supersession and not self.multi:
                for replaced in held.values():
                    replaced.end, replaced.end_state = op.at, "superseded"
                    replaced.end_reason = revised_to(op.value)
                    replaced.superseded_by = op.seq
                held.clear()
                cuts.clear()
            opened = Validity(op, op)
            held[op.value] = opened
            self.intervals.append(opened)
            cut = cascade(op) if op.depends_on else None
            if cut is not None:
                cuts[op.value] = cut
        elif current is not None:
            del held[op.value]
            cuts.pop(op.value, None)
            current.end, current.end_state, current.end_reason = op.at, op.end_state, op.reason
            if op.end_state == "superseded":
                self.replaced = (op.seq, current)


def removals(
    intervals: Sequence[Validity], closed: Sequence[float] = (), span_end: float | None = None
) -> list[float]:
    """The instants at which the key is left with no value: ends of its covered spans
    (after ``closed`` and a span ending at ``span_end``, read from intervals before these)."""
    out: list[float] = list(closed)
    for interval in sorted(intervals, key=lambda i: i.opener.at):
        start = interval.opener.at
        if span_end is not None and start > span_end:
            out.append(span_end)
            span_end = None
        if interval.end is None:
            return out
        if span_end is None or interval.end > span_end:
            span_end = interval.end
    if span_end is not None:
        out.append(span_end)
    return out
