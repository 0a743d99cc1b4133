"""Downsampling of long metric series for plotting, keeping every extreme a reader would miss.

Series up to the budget are kept whole. Longer ones are cut into equal runs of positions;
each run keeps its first and last position and, for every column, the position of its
smallest and largest value, so a dip or a spike anywhere survives at any length while the
number of points never exceeds the budget.
"""

from __future__ import annotations

from collections.abc import Sequence

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
