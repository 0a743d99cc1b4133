"""Repeated replays: one history replayed N times into N fresh shadows, and each metric's
mean and spread per stage.

A memory whose writes go through an LLM does not store the same thing twice: the same
history replayed again extracts other memories, so its scores move with no drift in the
memory at all. ``repeats = N`` on a target (``--repeats N`` on ``healthd evaluate``) replays
it N times, one after the other, each into a freshly reset shadow; this module folds the
replays' metrics, stage by stage (stages are matched by index: the same timeline gives the
same stages), into their mean, min, max and a 95 % interval of the mean (Student's t on the
replays' sample deviation, clipped to what the metric can take: 0..1 for a ratio, >= 0 for
conflicts). With one replay the interval is the value itself. Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from healthd.errors import TargetError

#: the target option (``[targets.NAME] repeats = N``, ``--target KIND:repeats=N``)
REPEATS = "repeats"
MAX_REPEATS = 100
RATIOS = ("freshness", "consistency", "coverage", "forgetting", "contamination")
COUNTS = ("conflicts",)
#: Student's t at 97.5 % by degrees of freedom (1..30); 1.96 beyond
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
_DIGITS = 6


def repeats_option(options: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """A target's options without ``repeats``, and the repeats asked for (1 when not given;
    TargetError naming the key when not a whole number from 1 to :data:`MAX_REPEATS`)."""
    rest = {k: v for k, v in options.items() if k != REPEATS}
    if REPEATS not in options:
        return rest, 1
    value = options[REPEATS]
    try:
        number = int(str(value))
    except ValueError:
        number = 0
    if isinstance(value, bool) or not 1 <= number <= MAX_REPEATS:
        raise TargetError(
            f"{REPEATS} must be a whole number from 1 to {MAX_REPEATS}, not {value!r}"
        )
    return rest, number


def t975(df: int) -> float:
    return _T975[df - 1] if 1 <= df <= len(_T975) else 1.96


class _Moments:
    """Welford's running mean and deviation, with min and max, of one metric."""

    __slots__ = ("high", "low", "m2", "mean", "n")

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.low = math.inf
        self.high = -math.inf

    def add(self, value: float) -> None:
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (value - self.mean)
        self.low = min(self.low, value)
        self.high = max(self.high, value)

    def as_json(self, ceiling: float | None) -> dict[str, Any]:
        half = 0.0
        if self.n > 1:
            half = t975(self.n - 1) * math.sqrt(self.m2 / (self.n - 1)) / math.sqrt(self.n)
        lower, upper = max(0.0, self.mean - half), self.mean + half
        if ceiling is not None:
            upper = min(ceiling, upper)
        return {
            "n": self.n,
            "mean": round(self.mean, _DIGITS),
            "min": round(self.low, _DIGITS),
            "max": round(self.high, _DIGITS),
            "lower": round(lower, _DIGITS),
            "upper": round(upper, _DIGITS),
        }


Metrics = Mapping[str, Mapping[str, float | int | None]]  # bucket -> metric -> value


class Spread:
    """The spread of one metrics table (bucket -> metric -> value) over the replays. A
    metric with nothing to measure in a replay (``None``) is left out of that replay's
    count: ``n`` says how many replays measured it, and a metric none measured is null."""

    def __init__(self) -> None:
        self._cells: dict[str, dict[str, _Moments]] = {}
        self._order: dict[str, list[str]] = {}

    def add(self, metrics: Metrics) -> None:
        for bucket, row in metrics.items():
            cells = self._cells.setdefault(bucket, {})
            order = self._order.setdefault(bucket, [])
            for name, value in row.items():
                if name not in cells:
                    cells[name] = _Moments()
                    order.append(name)
                if value is not None:
                    cells[name].add(float(value))

    def as_json(self) -> dict[str, dict[str, Any]]:
        return {
            bucket: {
                name: (
                    self._cells[bucket][name].as_json(1.0 if name in RATIOS else None)
                    if self._cells[bucket][name].n
                    else None
                )
                for name in self._order[bucket]
            }
            for bucket in self._cells
        }


class Repeats:
    """N replays' stages and final metrics, folded as they come: memory grows with the
    stages, not with N."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._stages: dict[int, Spread] = {}
        self._final = Spread()
        self.replays = 0

    def add_stage(self, index: int, metrics: Metrics) -> None:
        self._stages.setdefault(index, Spread()).add(metrics)

    def add_final(self, metrics: Metrics) -> None:
        self._final.add(metrics)
        self.replays += 1

    def as_json(self) -> dict[str, Any]:
        """The ``repeats`` block of ``evaluate --format json``."""
        return {
            "n": self.replays,
            "final": self._final.as_json(),
            "stages": [
                {"index": index, "spread": spread.as_json()}
                for index, spread in sorted(self._stages.items())
            ],
        }


def bounds(spread: Mapping[str, Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """``{bucket: {metric: (lower, upper)}}`` of a final spread, for the gauges."""
    out: dict[str, dict[str, Any]] = {}
    for bucket, row in (spread or {}).items():
        out[bucket] = {
            name: (cell["lower"], cell["upper"]) for name, cell in row.items() if cell is not None
        }
    return out


def means(spread: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """A final spread's means in the shape of a metrics table (conflicts rounded to the
    nearest whole probe, as the gauge is a count)."""
    out: dict[str, dict[str, Any]] = {}
    for bucket, row in spread.items():
        out[bucket] = {}
        for name, cell in row.items():
            mean = None if cell is None else cell["mean"]
            out[bucket][name] = round(mean or 0) if name in COUNTS else mean
    return out


def fold(tables: Iterable[Metrics]) -> dict[str, dict[str, Any]]:
    """The spread of several metrics tables at once."""
    spread = Spread()
    for table in tables:
        spread.add(table)
    return spread.as_json()
