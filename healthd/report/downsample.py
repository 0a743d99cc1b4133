"""Downsampling of long metric series for plotting, keeping every extreme a reader would miss.

Series up to the budget are kept whole. Longer ones are cut into equal runs of positions;
each run keeps its first and last position and, for every column, the position of its
smallest and largest value, so a dip or a spike anywhere survives at any length while the
number of points never exceeds the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

T = TypeVar("T")

# first, last, then a minimum and a maximum for each column
_FIXED_PER_RUN = 2


def keep_positions(
    columns: Sequence[Sequence[float | None]], length: int, budget: int
) -> list[int]:
    """Sorted positions in ``range(length)`` to plot; at most ``max(budget, 2)`` of them."""
    if length <= budget:
        return list(range(length))
    per_run = _FIXED_PER_RUN + 2 * len(columns)
    runs = max(1, budget // per_run)
    keep: set[int] = set()
    for run in range(runs):
        start = run * length // runs
        end = (run + 1) * length // runs
        if start >= end:
            continue
        keep.add(start)
        keep.add(end - 1)
        for column in columns:
            present = [(v, p) for p in range(start, end) if (v := column[p]) is not None]
            if present:
                keep.add(min(present)[1])
                keep.add(max(present)[1])
    return sorted(keep)


class StreamingKeep(Generic[T]):
    """:func:`keep_positions` computed while the values arrive, one position at a time in
    order, holding only each run's candidates: the same positions, for a series whose
    ``length`` is known up front but that is never held whole. Each position carries a
    payload; :attr:`kept` maps the kept positions to theirs."""

    def __init__(self, length: int, budget: int, width: int) -> None:
        self._every = length <= budget
        self._length = length
        self._runs = max(1, budget // (_FIXED_PER_RUN + 2 * width))
        self._width = width
        self.kept: dict[int, T] = {}
        self._run = 0
        self._start, self._end = self._bounds(0)
        self._reset()

    def _bounds(self, run: int) -> tuple[int, int]:
        return run * self._length // self._runs, (run + 1) * self._length // self._runs

    def _reset(self) -> None:
        self._low: list[tuple[float, int, T] | None] = [None] * self._width
        self._high: list[tuple[float, int, T] | None] = [None] * self._width

    def add(self, position: int, values: Sequence[float | None], payload: T) -> None:
        if self._every:
            self.kept[position] = payload
            return
        while position >= self._end:  # an empty run (never: length > budget >= runs)
            self._run += 1
            self._start, self._end = self._bounds(self._run)
        if position == self._start:
            self.kept[position] = payload
        for column, value in enumerate(values):
            if value is None:
                continue
            low, high = self._low[column], self._high[column]
            # min() over (value, position) keeps the first of equal values, max() the last
            if low is None or value < low[0]:
                self._low[column] = (value, position, payload)
            if high is None or value >= high[0]:
                self._high[column] = (value, position, payload)
        if position == self._end - 1:
            self.kept[position] = payload
            for found in (*self._low, *self._high):
                if found is not None:
                    self.kept[found[1]] = found[2]
            self._reset()
            self._run += 1
            self._start, self._end = self._bounds(self._run)


#: A span with no event is marked quiet on the charts when it lasts at least this long and
#: more than a tenth of the chart: a dormant repository's idle years, not a quiet weekend.
QUIET_MIN_SECONDS = 30 * 86_400
QUIET_SHARE = 0.1


class QuietSpans:
    """The spans with no event between two stages, found as every stage's time arrives in
    order (so a downsampled series still knows them): ``[from, to]`` epoch seconds."""

    def __init__(self) -> None:
        self._first: int | None = None
        self._last: int | None = None
        self._gaps: list[tuple[int, int]] = []

    def add(self, at: int) -> None:
        if self._first is None:
            self._first = at
        elif self._last is not None and at - self._last >= QUIET_MIN_SECONDS:
            self._gaps.append((self._last, at))
        self._last = at if self._last is None else max(self._last, at)

    def spans(self) -> list[list[int]]:
        if self._first is None or self._last is None:
            return []
        whole = self._last - self._first
        return [[a, b] for a, b in self._gaps if b - a > QUIET_SHARE * whole]
