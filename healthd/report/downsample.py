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
            low_at = high_at = -1
            low = high = 0.0
            for position in range(start, end):
                value = column[position]
                if value is None:
                    continue
                if low_at < 0 or value < low:
                    low_at, low = position, value
                if high_at < 0 or value > high:
                    high_at, high = position, value
            if low_at >= 0:
                keep.add(low_at)
                keep.add(high_at)
    return sorted(keep)
