"""A saved JSON report read in bounded memory: every stage is checked, but only the ones the
charts draw are kept.

A report's stages are most of its size (a stage per event per target, each with every
domain's metrics): a 300 MB report holds hundreds of thousands, over a gigabyte as Python
objects. The file is read twice, as a stream of parse events (:mod:`ijson`): the first
pass builds everything but the stages and counts each target's; the second checks each
stage as it comes and keeps the positions :func:`healthd.report.view.page_model` would keep
of the whole list (:class:`~healthd.report.downsample.StreamingKeep`, which needs the count
up front), as ``series_stages`` with ``stage_count``, ``quiet`` and the final stage, the
shape :class:`healthd.exporters.report.StageSampler` gives ``evaluate --html``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

import ijson

from healthd.errors import ReportShapeError
from healthd.report.downsample import QuietSpans, StreamingKeep
from healthd.report.shape import METRICS, check_report, check_stage
from healthd.scoring import BUCKETS
from healthd.timeline import parse_timestamp

STAGE = "targets.item.stages.item"
_STAGES = "targets.item.stages"
_TARGET = "targets.item"
#: Deeper than any report healthd writes by far; the limit ``json.loads`` would hit later.
MAX_DEPTH = 256
#: Bytes read at a time. ijson's C backend turns a whole chunk into parse events before the
#: first is seen, each with its prefix (``item.item.…``), so a chunk of opening brackets
#: costs its length squared: 9 GB and 11 s of CPU for 60,000 (its 64 KB default) before
#: :data:`MAX_DEPTH` refuses the file. At 1 KB it is 3 MB, and a large report reads as fast.
CHUNK_BYTES = 1024
_VALUE_EVENTS = frozenset({"start_map", "start_array", "null", "boolean", "integer", "double",
                           "number", "string"})  # fmt: skip


class StreamError(ValueError):
    """The file is not JSON ijson can read; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _events(handle: IO[bytes]) -> Iterator[tuple[str, str, Any]]:
    depth = 0
    try:
        for prefix, event, value in ijson.parse(handle, buf_size=CHUNK_BYTES, use_float=True):
            if event in ("start_map", "start_array"):
                depth += 1
                if depth > MAX_DEPTH:
                    raise StreamError("nested too deeply")
            elif event in ("end_map", "end_array"):
                depth -= 1
            yield prefix, event, value
    except ijson.JSONError as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise StreamError(reason) from None
    except UnicodeDecodeError:
        raise StreamError("not UTF-8 text") from None


def _skeleton(handle: IO[bytes]) -> tuple[dict[str, Any], list[int]]:
    """Pass one: the report without its stages (each target's ``stages`` empty), checked,
    and how many stages each target has."""
    builder = ijson.ObjectBuilder()
    counts: list[int] = []
    for prefix, event, value in _events(handle):
        if prefix.startswith(STAGE):
            if prefix == STAGE and event in _VALUE_EVENTS:
                counts[-1] += 1
            continue
        if prefix == _STAGES and event == "start_array":
            counts.append(0)
        builder.event(event, value)
    report = check_report(builder.value)
    if len(counts) != len(report["targets"]):  # a target whose "stages" is not a list was
        raise ReportShapeError("targets: the stages are not where expected")  # refused above
    return report, counts


class _JsonStageSampler:
    """:class:`healthd.exporters.report.StageSampler` for stages already in JSON form."""

    def __init__(self, length: int, targets: int) -> None:
        from healthd.report.view import chart_budget

        budget = chart_budget(targets)
        self._keeps = {
            b: StreamingKeep[dict[str, Any]](length, budget, len(METRICS)) for b in BUCKETS
        }
        self._quiet = QuietSpans()
        self.count = 0

    def add(self, stage: dict[str, Any]) -> None:
        metrics = stage["metrics"]
        for bucket, keep in self._keeps.items():
            row = metrics[bucket]
            keep.add(self.count, [row[name] for name in METRICS], stage)
        self._quiet.add(int(parse_timestamp(stage["timestamp"]).timestamp()))
        self.count += 1

    def fill(self, target: dict[str, Any]) -> None:
        series = {b: [s for _, s in sorted(k.kept.items())] for b, k in self._keeps.items()}
        target["stage_count"] = self.count
        target["series_stages"] = series
        target["quiet"] = self._quiet.spans()
        target["stages"] = series[BUCKETS[0]][-1:] if self.count else []


def read_report(path: str, opener: Any) -> dict[str, Any]:
    """The report at ``path`` (opened by ``opener(path)``, a binary file), checked against
    the documented shape, its stages downsampled for the charts. Raises
    :class:`StreamError` for text that is not JSON, ReportShapeError naming where the
    shape is wrong."""
    with opener(path) as handle:
        report, counts = _skeleton(handle)
    targets = report["targets"]
    with opener(path) as handle:
        stages = ijson.items(handle, STAGE, buf_size=CHUNK_BYTES, use_float=True)
        for t, (target, count) in enumerate(zip(targets, counts, strict=True)):
            sampler = _JsonStageSampler(count, len(targets))
            previous = 0
            for s in range(count):
                stage = next(stages)
                previous = check_stage(stage, f"targets[{t}].stages[{s}]", previous)
                sampler.add(stage)
            sampler.fill(target)
    return report
