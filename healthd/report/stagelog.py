"""The daemon's record of a target's stages for its page, bounded however long it runs.

Every stage is offered; the log keeps those whose index is a multiple of a stride that
doubles whenever the log is full (so it keeps at most ``capacity`` evenly spread stages),
plus always the newest, and remembers which keys were declared multi-valued. A kept stage
is its integer counts, packed (a tuple of Python integers took about 1.5 KiB a stage, three
times the array); its metrics are written out only when the page is built.
"""

from __future__ import annotations

from array import array
from datetime import datetime
from typing import Any

from healthd.evaluator import StageResult
from healthd.exporters.report import metrics_json
from healthd.model import ChangeEvent, FactKey
from healthd.report.downsample import QuietSpans
from healthd.scoring import metrics_from_counts
from healthd.timeline import format_timestamp

DEFAULT_CAPACITY = 4096


class _Kept:
    """A stage as the log keeps it: its counts in a machine-integer array."""

    __slots__ = ("counts", "event_id", "index", "timestamp")

    def __init__(self, stage: StageResult) -> None:
        self.index = stage.index
        self.event_id = stage.event_id
        self.timestamp: datetime = stage.timestamp
        self.counts = array("q", stage.counts)


def _entry(stage: _Kept) -> dict[str, Any]:
    return {
        "index": stage.index,
        "event_id": stage.event_id,
        "timestamp": format_timestamp(stage.timestamp),
        "metrics": metrics_json(metrics_from_counts(stage.counts)),
    }


class StageLog:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = max(2, capacity)
        self.stride = 1
        self.multi_valued: set[FactKey] = set()
        self._kept: list[tuple[_Kept, ChangeEvent]] = []
        self._newest: tuple[_Kept, ChangeEvent] | None = None
        self._quiet = QuietSpans()

    def clear(self) -> None:
        self.stride = 1
        self.multi_valued = set()
        self._kept = []
        self._newest = None
        self._quiet = QuietSpans()

    def quiet(self) -> list[list[int]]:
        """The spans with no event among every stage offered (kept or not)."""
        return self._quiet.spans()

    def add(self, stage: StageResult, event: ChangeEvent) -> None:
        if event.multi_valued:
            self.multi_valued.add(event.fact.key)
        kept = _Kept(stage)
        self._newest = (kept, event)
        self._quiet.add(int(stage.timestamp.timestamp()))
        if stage.index % self.stride:
            return
        self._kept.append((kept, event))
        if len(self._kept) > self.capacity:
            self.stride *= 2
            self._kept = [k for k in self._kept if k[0].index % self.stride == 0]

    def stages(self) -> tuple[list[dict[str, Any]], list[ChangeEvent]]:
        """The kept stages in the JSON report's shape, and their events."""
        kept = list(self._kept)
        if self._newest is not None and (not kept or kept[-1][0].index < self._newest[0].index):
            kept.append(self._newest)
        return [_entry(k[0]) for k in kept], [k[1] for k in kept]
