"""The `healthd evaluate` report: the JSON contract other tools read, and a readable table."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import IO, Any

from rich.console import Console
from rich.table import Table

from healthd.evaluator import ProbeReport, StageResult, TargetResult
from healthd.llm_usage import summary_text
from healthd.memory import target_role
from healthd.model import INVENTED
from healthd.reading import ItemReading
from healthd.scoring import BUCKETS, Metrics
from healthd.timeline import format_timestamp

_RATIOS = ("freshness", "consistency", "coverage", "forgetting", "contamination")


def metrics_json(metrics: dict[str, Metrics]) -> dict[str, dict[str, Any]]:
    return {bucket: metrics[bucket].as_dict() for bucket in BUCKETS}


def probe_json(report: ProbeReport) -> dict[str, Any]:
    """A probe's final answer. A retrieved fact flagged ``invented`` (a value its key has
    never held, read from a served item's text) carries that item's ``text`` (where the
    served items are at hand: a daemon resumed from its state has not asked again yet)."""
    probe = report.probe
    return {
        "id": probe.id,
        "question": probe.question,
        "subject": probe.subject,
        "predicate": probe.predicate,
        "domain": probe.domain,
        "expected": list(report.expected),
        "expected_facts": [{"value": f.value, "domain": f.domain} for f in report.expected_facts],
        "retrieved": _retrieved_json(report),
        **({"served": [served_json(r) for r in report.served]} if report.served else {}),
    }


class ProbeView(Mapping[str, Any]):
    """A final probe in the JSON report's shape (:func:`probe_json`), each value made when
    read: the HTML report reads every probe once to find the failing ones, and holding
    them all as JSON doubled what the results hold (a baseline's long answers)."""

    __slots__ = ("_report",)

    def __init__(self, report: ProbeReport) -> None:
        self._report = report

    def _keys(self) -> tuple[str, ...]:
        keys = ("id", "question", "subject", "predicate", "domain", "expected")
        return (*keys, "expected_facts", "retrieved", *(("served",) if self._report.served else ()))

    def __getitem__(self, key: str) -> Any:
        report = self._report
        if key in ("id", "question", "subject", "predicate", "domain"):
            return getattr(report.probe, key)
        if key == "expected":
            return list(report.expected)
        if key not in self._keys():
            raise KeyError(key)
        if key == "expected_facts":
            return [{"value": f.value, "domain": f.domain} for f in report.expected_facts]
        if key == "served":
            return [served_json(r) for r in report.served]
        return _retrieved_json(report)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


def _retrieved_json(report: ProbeReport) -> list[dict[str, Any]]:
    texts = {r.item.record_id: r.item.text for r in report.served if r.reading.other}
    return [
        {
            "subject": f.subject,
            "predicate": f.predicate,
            "value": f.value,
            "domain": f.domain,
            "status": status,
            "validated_at": format_timestamp(f.last_validated),
            "flags": sorted(f.flags),
            **(
                {"text": texts[f.record_id]} if INVENTED in f.flags and f.record_id in texts else {}
            ),
        }
        for f, status in report.retrieved
    ]


def served_json(reading: ItemReading) -> dict[str, Any]:
    """A served item as the memory gave it and how the reader read it."""
    item = reading.item
    return {
        "text": item.text,
        "record_id": item.record_id,
        "written_at": format_timestamp(item.written_at) if item.written_at else None,
        "validated_at": format_timestamp(item.validated_at) if item.validated_at else None,
        "read_as": reading.read_as(),
    }


def stage_json(stage: StageResult) -> dict[str, Any]:
    return {
        "index": stage.index,
        "event_id": stage.event_id,
        "timestamp": format_timestamp(stage.timestamp),
        "metrics": metrics_json(stage.metrics),
    }


def report_json(
    results: Sequence[TargetResult],
    probe_set_version: str,
    probe_count: int,
    roles: Mapping[str, str] | None = None,
    *,
    probe_views: bool = False,
) -> dict[str, Any]:
    """The report; ``roles`` (by target name) say which targets are baselines, else their
    kind does. ``probe_views``: the final probes as :class:`ProbeView` (for a page), not
    JSON objects."""
    probe: Callable[[ProbeReport], Mapping[str, Any]] = ProbeView if probe_views else probe_json
    return {
        "probe_set": {"version": probe_set_version, "count": probe_count},
        "targets": [
            {
                "name": result.name,
                "kind": result.kind,
                "reader": result.reader,
                "reading": result.reading.as_dict(),
                "role": (roles or {}).get(result.name) or target_role(result.kind),
                "stages": [stage_json(s) for s in result.stages],
                "final": {
                    "metrics": metrics_json(result.metrics),
                    "probes": [probe(p) for p in result.probes],
                },
                "retrieval": {
                    **result.retrieval.as_json(),
                    "fingerprint": result.retrieval.id,
                    "changed_items": result.retrieval_changed,
                },
                **({"llm": result.llm} if result.llm is not None else {}),
                **({"repeats": result.repeats} if result.repeats is not None else {}),
                **({"upper_bound": result.upper_bound} if result.upper_bound is not None else {}),
                **(
                    {"last_change": stage_json(result.last_change)}
                    if result.last_change is not None
                    else {}
                ),
                **(
                    {"event_expiry": result.event_expiry} if result.event_expiry is not None else {}
                ),
            }
            for result in results
        ],
    }


_STAGE_DEPTH = 4  # report > targets > target > stages > stage, as json.dump(indent=1) nests


class StageSpool:
    """One target's stages, written as JSON to a temporary file as they come, so a report
    over a long timeline never holds every stage in memory."""

    def __init__(self, spool: IO[str]) -> None:
        self._spool = spool
        self.count = 0
        self._counts: tuple[int, ...] | None = None
        self._metrics = ""

    def add(self, stage: StageResult) -> None:
        """Writes what ``json.dumps(stage_json(stage), indent=1)`` gives, indented to its
        depth in the report; the metrics' text is made again only when the counts change."""
        indent = " " * _STAGE_DEPTH
        if stage.counts != self._counts:
            self._counts, self._metrics = stage.counts, _metrics_text(stage.metrics, "\n " + indent)
        lines = (
            "{",
            f' "index": {stage.index},',
            f' "event_id": {json.dumps(stage.event_id)},',
            f' "timestamp": {json.dumps(format_timestamp(stage.timestamp))},',
            f' "metrics": {self._metrics}',
            "}",
        )
        self._spool.write((",\n" if self.count else "") + indent + ("\n" + indent).join(lines))
        self.count += 1

    def copy_to(self, out: IO[str]) -> None:
        if not self.count:
            out.write("[]")
            return
        out.write("[\n")
        self._spool.seek(0)
        while chunk := self._spool.read(1 << 16):
            out.write(chunk)
        out.write("\n" + " " * (_STAGE_DEPTH - 1) + "]")


class StageView(Mapping[str, Any]):
    """A stage in the JSON report's shape (:func:`stage_json`), each value made when read."""

    __slots__ = ("_stage",)
    _KEYS = ("index", "event_id", "timestamp", "metrics")

    def __init__(self, stage: StageResult) -> None:
        self._stage = stage

    def __getitem__(self, key: str) -> Any:
        stage = self._stage
        if key == "index":
            return stage.index
        if key == "event_id":
            return stage.event_id
        if key == "timestamp":
            return format_timestamp(stage.timestamp)
        if key == "metrics":
            return metrics_json(stage.metrics)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._KEYS)

    def __len__(self) -> int:
        return len(self._KEYS)


class StageSampler:
    """One target's stages as the HTML report draws them, downsampled per domain as they
    come (the positions :func:`healthd.report.view.page_model` would keep of the whole
    list), so a report over a long timeline holds a few thousand stages, not all of them.
    ``length``: the stages the replay will give; ``targets``: how many share the page."""

    def __init__(self, length: int, targets: int) -> None:
        from healthd.report.downsample import QuietSpans, StreamingKeep
        from healthd.report.shape import METRICS
        from healthd.report.view import chart_budget

        budget = chart_budget(targets)
        self._names = METRICS
        self._keeps = {b: StreamingKeep[StageResult](length, budget, len(METRICS)) for b in BUCKETS}
        self._quiet = QuietSpans()  # from every stage's time, not only the kept ones
        self.count = 0

    def add(self, stage: StageResult) -> None:
        for bucket, keep in self._keeps.items():
            row = stage.metrics[bucket].as_dict()
            keep.add(self.count, [row[name] for name in self._names], stage)
        self._quiet.add(int(stage.timestamp.timestamp()))
        self.count += 1

    def event_ids(self) -> set[str]:
        return {s.event_id for keep in self._keeps.values() for s in keep.kept.values()}

    def fill(self, target: dict[str, Any]) -> None:
        """Put the kept stages into ``target`` (one target of :func:`report_json`, built
        without stages) the way :func:`healthd.report.view.page_model` reads them: as views
        whose metrics are written out when read, not held (a stage's metrics as JSON are
        a few KiB; its counts a tuple)."""
        views: dict[int, StageView] = {}
        series: dict[str, list[Mapping[str, Any]]] = {}
        for bucket, keep in self._keeps.items():
            series[bucket] = [
                views.setdefault(id(s), StageView(s)) for _, s in sorted(keep.kept.items())
            ]
        target["stage_count"] = self.count
        target["series_stages"] = series
        target["quiet"] = self._quiet.spans()
        last = series[BUCKETS[0]][-1:] if self.count else []
        target["stages"] = last  # the final stage, which every series keeps


_quoted = functools.cache(json.dumps)


def _metrics_text(metrics: dict[str, Metrics], newline: str) -> str:
    """``json.dumps(metrics_json(metrics), indent=1)`` with each line break ``newline``, its
    numbers encoded in one call (the indenting encoder takes a Python step per value)."""
    rows = {bucket: metrics[bucket].as_dict() for bucket in BUCKETS}
    numbers = iter(json.dumps([v for row in rows.values() for v in row.values()])[1:-1].split(", "))
    blocks = [
        f"{newline} {_quoted(bucket)}: {{"
        + ",".join(f"{newline}  {_quoted(name)}: {next(numbers)}" for name in row)
        + f"{newline} }}"
        for bucket, row in rows.items()
    ]
    return "{" + ",".join(blocks) + f"{newline}}}"


def write_report_json(
    out: IO[str],
    results: Sequence[TargetResult],
    spools: Sequence[StageSpool],
    probe_set_version: str,
    probe_count: int,
    roles: Mapping[str, str] | None = None,
) -> None:
    """The bytes ``json.dump(report_json(...), out, indent=1)`` writes, with each target's
    stages streamed from its spool and its final probes written one at a time, so the
    report is never held whole."""
    bare = [dataclasses.replace(result, stages=[], probes=[]) for result in results]
    report = report_json(bare, probe_set_version, probe_count, roles)
    for i, target in enumerate(report["targets"]):
        target["stages"] = f"\x00stages {i}\x00"
        target["final"]["probes"] = f"\x00probes {i}\x00"
    text = json.dumps(report, indent=1)
    for i, (result, spool) in enumerate(zip(results, spools, strict=True)):
        head, text = text.split(json.dumps(f"\x00stages {i}\x00"), 1)
        out.write(head)
        spool.copy_to(out)
        head, text = text.split(json.dumps(f"\x00probes {i}\x00"), 1)
        out.write(head)
        _write_probes(out, result.probes)
    out.write(text)
    out.write("\n")


_PROBE_DEPTH = 5  # report > targets > target > final > probes > probe


def _write_probes(out: IO[str], probes: Sequence[ProbeReport]) -> None:
    if not probes:
        out.write("[]")
        return
    pad = " " * _PROBE_DEPTH
    out.write("[")
    for n, probe in enumerate(probes):
        text = json.dumps(probe_json(probe), indent=1).replace("\n", "\n" + pad)
        out.write(("," if n else "") + "\n" + pad + text)
    out.write("\n" + " " * (_PROBE_DEPTH - 1) + "]")


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def render_table(
    results: Sequence[TargetResult], probe_set_version: str, probe_count: int, console: Console
) -> None:
    """One table per target: a row per domain, a column per metric, at the final stage."""
    for result in results:
        when = format_timestamp(result.at) if result.at else "no events"
        table = Table(
            title=f"{result.name}  ({result.events} events, final stage {when})",
            title_justify="left",
        )
        table.add_column("domain", no_wrap=True, min_width=11)
        for name in _RATIOS:
            table.add_column(name, justify="right", no_wrap=True, min_width=len(name))
        table.add_column("conflicts", justify="right", no_wrap=True, min_width=9)
        for bucket in BUCKETS:
            m = result.metrics[bucket]
            table.add_row(
                bucket,
                *(_cell(getattr(m, n)) for n in _RATIOS),
                str(m.conflicts),
                style="bold" if bucket == "all" else None,
            )
        console.print(table)
        if result.upper_bound is not None:
            console.print(f"  upper bound, not the product's own figure: {result.upper_bound}")
        llm = summary_text(result.llm) if result.llm and result.llm.get("calls") else None
        if llm is not None:
            console.print(f"  {llm}")
        if result.repeats is not None:
            console.print(f"  {_spread_text(result.repeats)}")
        if result.last_change is not None:
            before = result.last_change.metrics["all"]
            console.print(
                f"  before the revalidation sweeps, at the last change "
                f"(stage {result.last_change.index}, "
                f"{format_timestamp(result.last_change.timestamp)}): "
                + ", ".join(f"{n} {_cell(getattr(before, n))}" for n in _RATIOS)
                + f", conflicts {before.conflicts}"
            )
    if len(results) > 1:
        console.print(_comparison(results))
    console.print(
        f"probe set {probe_set_version} ({probe_count} probes); — means nothing to measure yet"
    )


def _spread_text(repeats: Mapping[str, Any]) -> str:
    """The ``all`` row's spread over the replays: the table above is the first replay's."""
    row = repeats["final"]["all"]
    cells = [
        f"{n} {_cell(c['mean'])} [{_cell(c['lower'])}, {_cell(c['upper'])}]"
        for n in _RATIOS
        if (c := row.get(n)) is not None
    ]
    return (
        f"over {repeats['n']} replays (the table is the first's), all domains, mean "
        f"[95% interval]: " + ", ".join(cells)
    )


def _comparison(results: Sequence[TargetResult]) -> Table:
    """Every target's ``all`` row side by side."""
    table = Table(title="comparison (all domains)", title_justify="left")
    table.add_column("target", no_wrap=True, overflow="ellipsis", max_width=26)
    for name in _RATIOS:
        table.add_column(name, justify="right", no_wrap=True, min_width=len(name))
    table.add_column("conflicts", justify="right", no_wrap=True, min_width=9)
    for result in results:
        m = result.metrics["all"]
        table.add_row(result.name, *(_cell(getattr(m, n)) for n in _RATIOS), str(m.conflicts))
    return table
