"""The `healthd evaluate` report: the JSON contract other tools read, and a readable table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from healthd.evaluator import ProbeReport, TargetResult
from healthd.scoring import BUCKETS, Metrics
from healthd.timeline import format_timestamp

_RATIOS = ("freshness", "consistency", "coverage", "forgetting", "contamination")


def metrics_json(metrics: dict[str, Metrics]) -> dict[str, dict[str, Any]]:
    return {bucket: metrics[bucket].as_dict() for bucket in BUCKETS}


def probe_json(report: ProbeReport) -> dict[str, Any]:
    probe = report.probe
    return {
        "id": probe.id,
        "question": probe.question,
        "subject": probe.subject,
        "predicate": probe.predicate,
        "domain": probe.domain,
        "expected": list(report.expected),
        "expected_facts": [{"value": f.value, "domain": f.domain} for f in report.expected_facts],
        "retrieved": [
            {
                "subject": f.subject,
                "predicate": f.predicate,
                "value": f.value,
                "domain": f.domain,
                "status": status,
                "validated_at": format_timestamp(f.last_validated),
                "flags": sorted(f.flags),
            }
            for f, status in report.retrieved
        ],
    }


def report_json(
    results: Sequence[TargetResult], probe_set_version: str, probe_count: int
) -> dict[str, Any]:
    return {
        "probe_set": {"version": probe_set_version, "count": probe_count},
        "targets": [
            {
                "name": result.name,
                "kind": result.kind,
                "stages": [
                    {
                        "index": s.index,
                        "event_id": s.event_id,
                        "timestamp": format_timestamp(s.timestamp),
                        "metrics": metrics_json(s.metrics),
                    }
                    for s in result.stages
                ],
                "final": {
                    "metrics": metrics_json(result.metrics),
                    "probes": [probe_json(p) for p in result.probes],
                },
            }
            for result in results
        ],
    }


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
    if len(results) > 1:
        console.print(_comparison(results))
    console.print(
        f"probe set {probe_set_version} ({probe_count} probes); — means nothing to measure yet"
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
