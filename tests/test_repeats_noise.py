"""Run-to-run variance told apart from drift, end to end (issue 42, item 5): Mem0 as a team
runs it (`ingest = "messages"`), its LLM the stand-in (healthd.testing.standin_llm, not a
model) with a seeded `noise` (a share of its extractions skipped or phrased otherwise on each
replay of the same turns), replayed with `repeats`. Without noise every replay is the same;
with it the spread is not 0. The daemon exports the mean and its bounds, and the shipped
rules, run by promtool on those very series, page on a real drift and not on the noise.

The history is the bundled example's first weeks (39 events: the services, their owners
and decisions, a revalidation sweep), then its next ten (four owners and a decision changed,
each revision leaving the old value ended): Mem0 2.2 adds only, so it keeps serving what
ended. Every figure here is the stand-in's choices as much as Mem0's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from test_llm_accounting import KEY_VAR, mem0_targets

from healthd.testing.standin_llm import StandInLLM

os.environ["MEM0_TELEMETRY"] = "False"  # read once, when mem0 is first imported
pytest.importorskip("mem0", reason="the mem0 extra is not installed")

pytestmark = [pytest.mark.product, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "healthd" / "data" / "example_timeline.jsonl"
ALERTS = ROOT / "alerts"
QUIET, CHANGED = 39, 49  # events before the first revision; after ten more
RATIOS = ("freshness", "consistency", "coverage", "forgetting", "contamination")
ALERTS_ON_RATIOS = (
    "HealthdFreshnessLow",
    "HealthdConsistencyLow",
    "HealthdConsistencyDropped",
    "HealthdContaminationRising",
    "HealthdCoverageCollapsing",
)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")


def history(path: Path, events: int) -> Path:
    lines = EXAMPLE.read_text().splitlines(keepends=True)[:events]
    path.write_text("".join(lines))
    return path


def config(tmp_path: Path, base_url: str, timeline: Path, repeats: int = 3) -> Path:
    path = tmp_path / "healthd.toml"
    targets = mem0_targets(base_url, f"repeats = {repeats}\n")
    path.write_text(
        f"""
state_path = {json.dumps(str(tmp_path / "state.sqlite"))}

[sources.history]
kind = "file"
path = {json.dumps(str(timeline))}

{targets}"""
    )
    return path


def evaluate(tmp_path: Path, noise: float) -> tuple[dict[str, Any], StandInLLM]:
    from healthd.cli import main

    timeline = history(tmp_path / "history.jsonl", QUIET)
    with StandInLLM(noise=noise) as llm:
        out = tmp_path / "report.json"
        args = ["evaluate", "--config", str(config(tmp_path, llm.base_url, timeline))]
        assert main([*args, "--format", "json", "--output", str(out)]) == 0
    targets = {t["name"]: t for t in json.loads(out.read_text())["targets"]}
    return targets["team-mem0"], llm


def cells(block: dict[str, Any]) -> Iterator[dict[str, Any]]:
    spreads = [block["final"], *(s["spread"] for s in block["stages"])]
    for spread in spreads:
        for row in spread.values():
            yield from (c for c in row.values() if c is not None)


def test_without_noise_every_replay_is_the_same(tmp_path: Path):
    target, llm = evaluate(tmp_path, noise=0.0)
    block = target["repeats"]
    assert block["n"] == 3
    # Mem0 extracted every turn three times: one chat request per event and replay
    assert llm.counts()["/v1/chat/completions"] == 3 * QUIET
    assert target["llm"]["by_purpose"]["extraction"]["calls"] == 3 * QUIET
    assert all(c["min"] == c["max"] and c["lower"] == c["upper"] for c in cells(block))
    final = target["final"]["metrics"]["all"]
    assert block["final"]["all"]["freshness"]["mean"] == pytest.approx(final["freshness"])


def test_with_noise_the_replays_differ_and_the_report_says_by_how_much(tmp_path: Path):
    target, llm = evaluate(tmp_path, noise=0.3)
    block = target["repeats"]
    assert llm.counts()["/v1/chat/completions"] == 3 * QUIET
    moved = [c for c in cells(block) if c["max"] > c["min"]]
    assert moved, "noise 0.3 moved no metric at any stage"
    final = block["final"]["all"]
    assert any(final[r]["max"] > final[r]["min"] for r in RATIOS if final[r] is not None)
    for cell in cells(block):
        assert cell["lower"] <= cell["mean"] <= cell["upper"]
        assert cell["min"] <= cell["mean"] <= cell["max"]


def exported(text: str) -> dict[tuple[str, str], float]:
    """``(series name, target)`` -> value of the pooled (``domain="all"``) ratio gauges."""
    return {
        (s.name, s.labels["target"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("healthd_")
        and s.name.removeprefix("healthd_").split("_ratio")[0] in RATIOS
        and s.name.endswith(("_ratio", "_ratio_lower", "_ratio_upper"))
        and not s.name.startswith("healthd_last_change_")
        and s.labels.get("domain") == "all"
    }


def daemon_scrapes(tmp_path: Path) -> tuple[dict[Any, float], dict[Any, float], dict[str, Any]]:
    """The daemon's /metrics after a run on the quiet weeks, and after one on the ten
    changes that follow, with the stand-in's noise at 0.3 throughout."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from prometheus_client import generate_latest

    from healthd.daemon.runner import Runner
    from healthd.daemon.state import StateStore
    from healthd.exporters.prometheus import build_registry
    from healthd.exporters.tracing import build_tracer_provider, get_tracer
    from healthd.settings import load_settings

    timeline = history(tmp_path / "history.jsonl", QUIET)
    scrapes: list[dict[Any, float]] = []
    with StandInLLM(noise=0.3) as llm:
        settings = load_settings(str(config(tmp_path, llm.base_url, timeline)))
        state = StateStore(settings.state_path)
        tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
        runner = Runner(settings, state, tracer)
        registry, _ = build_registry(runner.view)
        try:
            runner.run_once()
            scrapes.append(exported(generate_latest(registry).decode()))
            quiet = runner.view()["targets"]["team-mem0"].results["repeats"]
            history(timeline, CHANGED)  # the source gains the next ten events
            runner.run_once()
            scrapes.append(exported(generate_latest(registry).decode()))
        finally:
            runner.close()
            state.close()
    return scrapes[0], scrapes[1], quiet


def promtool_case(
    before: dict[Any, float], after: dict[Any, float], expect_after: dict[str, list[str]]
) -> dict[str, Any]:
    # an alert's $value: the bound its expression compares (HealthdContaminationRising's
    # level: the lower bound)
    value = {"HealthdContaminationRising": "healthd_contamination_ratio_lower"}
    """Two hours of the first scrape, then two hours of the second, sampled each minute;
    nothing fires in the first two hours, ``expect_after`` (alert -> targets) at the end."""
    series = []
    for name, target in sorted(before):
        role = "baseline" if target == "naive" else "subject"
        who = f'job="healthd",instance="h:9479",target="{target}",role="{role}",domain="all"'
        values = f"{before[(name, target)]}x120 {after.get((name, target), 'stale')}x120"
        series.append({"series": f"{name}{{{who}}}", "values": values})
    checks: list[dict[str, Any]] = [
        {"eval_time": "1h55m", "alertname": alert, "exp_alerts": []} for alert in ALERTS_ON_RATIOS
    ]
    for alert, targets in expect_after.items():
        checks.append(
            {
                "eval_time": "3h55m",
                "alertname": alert,
                "exp_alerts": [
                    {
                        "exp_labels": {"severity": rule(alert)["labels"]["severity"], **labels(t)},
                        "exp_annotations": annotations(alert, t, after[(value[alert], t)]),
                    }
                    for t in targets
                ],
            }
        )
    return {"interval": "1m", "input_series": series, "alert_rule_test": checks}


def rule(alert: str) -> dict[str, Any]:
    rules = yaml.safe_load((ALERTS / "alerts.rules.yml").read_text())["groups"][0]["rules"]
    return next(r for r in rules if r["alert"] == alert)


def annotations(alert: str, target: str, value: float) -> dict[str, str]:
    """The shipped rule's annotations as Prometheus renders them for ``target`` at
    ``value`` (``humanizePercentage`` is Go's ``%.4g%%`` of the value times 100)."""
    out = {}
    for key, text in rule(alert)["annotations"].items():
        text = text.replace("{{ $labels.target }}", target)
        out[key] = text.replace("{{ $value | humanizePercentage }}", f"{value * 100:.4g}%")
    return out


def labels(target: str) -> dict[str, str]:
    return {
        "job": "healthd",
        "instance": "h:9479",
        "target": target,
        "role": "subject",
        "domain": "all",
    }


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_the_shipped_rules_page_on_a_drift_and_not_on_the_noise(tmp_path: Path):
    before, after, quiet = daemon_scrapes(tmp_path)
    mem0 = "team-mem0"
    # the noise is real: the quiet weeks' replays differ, and the gauges carry the spread
    assert any(
        quiet["final"]["all"][r]["max"] > quiet["final"]["all"][r]["min"]
        for r in RATIOS
        if quiet["final"]["all"][r] is not None
    )
    for r in RATIOS:
        if (f"healthd_{r}_ratio", mem0) in before:
            low, mean, high = (
                before[(f"healthd_{r}_ratio{b}", mem0)] for b in ("_lower", "", "_upper")
            )
            assert low <= mean <= high
    # the drift is real: after the changes Mem0 keeps serving what ended, beyond the noise
    assert after[("healthd_contamination_ratio_lower", mem0)] > 0.05
    assert before[("healthd_contamination_ratio_upper", mem0)] <= 0.05
    # the reference memory, replayed once, exports its ratio as both bounds
    for r in RATIOS:
        key = f"healthd_{r}_ratio"
        if (key, "reference") in after:
            assert after[(key + "_lower", "reference")] == after[(key, "reference")]
    case = promtool_case(before, after, {"HealthdContaminationRising": [mem0]})
    test_file = tmp_path / "variance_test.yml"
    test_file.write_text(
        yaml.safe_dump(
            {
                "rule_files": [
                    str(ALERTS / "alerts.rules.yml"),
                    str(ALERTS / "recording.rules.yml"),
                ],
                "evaluation_interval": "1m",
                "tests": [case],
            },
            sort_keys=False,
        )
    )
    proc = subprocess.run(
        ["promtool", "test", "rules", str(test_file)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
