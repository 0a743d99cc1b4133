"""`repeats`: one history replayed N times, each metric's mean and spread per stage
(healthd.repeats), in `evaluate --format json`, on the table, and on the daemon's gauges
(`healthd_<metric>_ratio` the mean, `_lower`/`_upper` beside it). The stand-in LLM's noise,
and what the alerts make of it, are in tests/test_repeats_noise.py."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from healthd.cli import main
from healthd.errors import TargetError
from healthd.repeats import Repeats, Spread, fold, repeats_option, t975


def test_the_spread_is_mean_min_max_and_a_students_t_interval_clipped_to_a_ratio():
    spread = Spread()
    for value in (0.5, 0.7, 0.9):
        spread.add({"all": {"freshness": value, "forgetting": None, "conflicts": 2}})
    cell = spread.as_json()["all"]["freshness"]
    half = 4.303 * 0.2 / math.sqrt(3)
    assert cell == {
        "n": 3,
        "mean": 0.7,
        "min": 0.5,
        "max": 0.9,
        "lower": round(0.7 - half, 6),
        "upper": 1.0,  # 0.7 + 0.497 clipped: a ratio is at most 1
    }
    # nothing to measure in any replay: null, not 0; a count has no ceiling
    assert spread.as_json()["all"]["forgetting"] is None
    assert spread.as_json()["all"]["conflicts"]["upper"] == 2.0


def test_one_replay_or_equal_replays_have_no_spread():
    once = fold([{"all": {"coverage": 0.8}}])["all"]["coverage"]
    assert once["lower"] == once["upper"] == once["mean"] == 0.8
    same = fold([{"all": {"coverage": 0.8}}] * 4)["all"]["coverage"]
    assert same["lower"] == same["upper"] == 0.8 and same["n"] == 4


def test_a_metric_measured_in_some_replays_only_counts_those():
    cell = fold([{"all": {"forgetting": None}}, {"all": {"forgetting": 0.5}}])["all"]["forgetting"]
    assert cell["n"] == 1 and cell["mean"] == 0.5


def test_t_quantiles_fall_to_the_normal_one():
    assert t975(1) == 12.706 and t975(30) == 2.042 and t975(200) == 1.96


def test_stages_are_folded_by_index_as_they_come():
    repeats = Repeats(2)
    for value in (0.0, 1.0):
        repeats.add_stage(3, {"all": {"coverage": value}})
        repeats.add_stage(1, {"all": {"coverage": 1.0}})
        repeats.add_final({"all": {"coverage": value}})
    block = repeats.as_json()
    assert [s["index"] for s in block["stages"]] == [1, 3]
    assert block["stages"][1]["spread"]["all"]["coverage"]["min"] == 0.0
    assert block["n"] == 2 and block["final"]["all"]["coverage"]["mean"] == 0.5


@pytest.mark.parametrize("value", ["0", "-1", "three", "101", True])
def test_a_bad_repeats_names_the_key(value: object):
    with pytest.raises(TargetError, match="repeats must be a whole number from 1 to 100"):
        repeats_option({"repeats": value})


def digest(target: dict) -> str:
    text = json.dumps([target["stages"], target["final"]], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def evaluate_json(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "out.json"
    assert main(["evaluate", "--format", "json", "--output", str(out), *args]) == 0
    return json.loads(out.read_text())


def test_repeats_1_is_byte_for_byte_the_report_of_before(tmp_path: Path):
    out = tmp_path / "a.json"
    assert main(["evaluate", "--format", "json", "--output", str(out)]) == 0
    once = out.read_bytes()
    assert main(["evaluate", "--format", "json", "--repeats", "1", "--output", str(out)]) == 0
    assert out.read_bytes() == once
    report = json.loads(once)
    assert [digest(t) for t in report["targets"]] == ["9d968d1fcad7", "0d8683c035de"]
    assert all("repeats" not in t for t in report["targets"])


def test_repeats_of_a_deterministic_memory_report_no_spread_and_the_same_stages(tmp_path: Path):
    report = evaluate_json(
        tmp_path, "--target", "reference:supersession=off,repeats=3", "--target", "naive"
    )
    drifted, naive = report["targets"]
    assert digest(drifted) == "d702e005fdb1"  # the first replay, as reported before
    assert "repeats" not in naive
    block = drifted["repeats"]
    assert block["n"] == 3
    assert [s["index"] for s in block["stages"]] == [s["index"] for s in drifted["stages"]]
    for stage, spread in zip(drifted["stages"], block["stages"], strict=True):
        for bucket, row in stage["metrics"].items():
            for name, value in row.items():
                cell = spread["spread"][bucket][name]
                if value is None:
                    assert cell is None
                else:
                    assert cell["min"] == cell["max"] == cell["lower"] == cell["upper"]
                    assert cell["mean"] == pytest.approx(value, abs=1e-6)
    # --repeats on the command line applies to every target
    both = evaluate_json(tmp_path, "--repeats", "2")
    assert [t["repeats"]["n"] for t in both["targets"]] == [2, 2]


def test_the_table_says_the_spread_under_the_target(capsys: pytest.CaptureFixture[str]):
    assert main(["evaluate", "--target", "reference", "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    assert "over 2 replays (the table is the first's), all domains, mean [95% interval]" in out
    assert "consistency 1.000 [1.000, 1.000]" in " ".join(out.split())


def test_a_bad_repeats_switch_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]):
    assert main(["evaluate", "--target", "reference:repeats=0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "repeats must be a whole number" in err
    assert "reference:repeats=0" in err


def samples(text: str, name: str) -> dict[tuple[str, str], float]:
    return {
        (s.labels["target"], s.labels["domain"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


def test_the_daemon_exports_the_mean_and_its_bounds(tmp_path: Path):
    """A daemon target with `repeats = 3` replays the history twice more into private
    shadows; a deterministic memory's bounds are its ratio, and a target without repeats
    exports both bounds equal to its ratio, so the alerts read every target alike."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from healthd.daemon.runner import Runner
    from healthd.daemon.state import StateStore
    from healthd.exporters.prometheus import build_registry
    from healthd.exporters.tracing import build_tracer_provider, get_tracer
    from healthd.settings import load_settings

    config = tmp_path / "healthd.toml"
    config.write_text(
        f"state_path = {json.dumps(str(tmp_path / 'state.sqlite'))}\nexample = true\n"
        "[targets.drifted]\nkind = 'reference'\nshadow = true\nsupersession = 'off'\nrepeats = 3\n"
        "[targets.plain]\nkind = 'reference'\nshadow = true\n"
    )
    settings = load_settings(str(config))
    state = StateStore(settings.state_path)
    runner = Runner(
        settings, state, get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
    )
    registry, _ = build_registry(runner.view)
    try:
        runner.run_once()
        text = generate_latest(registry).decode()
        stored = runner.view()["targets"]["drifted"].results
    finally:
        runner.close()
        state.close()
    assert stored["repeats"]["n"] == 3
    mean = samples(text, "healthd_contamination_ratio")
    lower = samples(text, "healthd_contamination_ratio_lower")
    upper = samples(text, "healthd_contamination_ratio_upper")
    assert mean[("drifted", "all")] == pytest.approx(0.181818, abs=1e-6)
    assert lower == upper == mean and set(mean) >= {("plain", "all"), ("drifted", "decision")}


def test_the_daemon_refuses_repeats_where_it_cannot_make_a_private_shadow():
    """A memory that is a service has one shadow scope, the daemon's own: its extra replays
    would wipe it. `repeats` above 1 is refused there with one line naming the target."""
    from healthd.daemon.state import TargetRow
    from healthd.daemon.targets import TargetRuntime, scratch_spec

    def runtime(kind: str, **options: object) -> TargetRuntime:
        return TargetRuntime("team", kind, dict(options), False, "f", TargetRow("team"))

    for refused in (
        runtime("http", base_url="http://127.0.0.1:1", repeats=3),
        runtime("mem0", deployment="platform", repeats=3),
        runtime("mem0", ingest="messages", mem0={"vector_store": {"provider": "qdrant"}}),
    ):
        with pytest.raises(TargetError, match="target 'team': repeats above 1 in the daemon"):
            scratch_spec(refused)
    private = scratch_spec(runtime("reference", path="/var/lib/healthd/ref.sqlite", repeats=3))
    assert private.options["path"] == ":memory:"  # never the daemon's own shadow file


def test_a_daemon_run_with_refused_repeats_is_a_failed_run_naming_it(tmp_path: Path):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from healthd.daemon.runner import Runner
    from healthd.daemon.state import StateStore
    from healthd.exporters.tracing import build_tracer_provider, get_tracer
    from healthd.settings import load_settings

    config = tmp_path / "healthd.toml"
    config.write_text(
        f"state_path = {json.dumps(str(tmp_path / 'state.sqlite'))}\nexample = true\n"
        "[targets.service]\nkind = 'http'\nshadow = true\nbase_url = 'http://127.0.0.1:9'\nnamespace = 'healthd/shadow'\n"
        "repeats = 2\n"
        "[targets.plain]\nkind = 'reference'\nshadow = true\n"
    )
    settings = load_settings(str(config))
    state = StateStore(settings.state_path)
    tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
    runner = Runner(settings, state, tracer)
    try:
        runner.run_once()
        rows = runner.view()["targets"]
    finally:
        runner.close()
        state.close()
    assert rows["service"].runs_failure == 1 and rows["service"].runs_success == 0
    error = rows["service"].last_error or ""
    assert "repeats above 1 in the daemon" in error and len(error.splitlines()) == 1
    assert rows["plain"].runs_success == 1  # the other targets go on


def test_the_verdict_judges_the_bound_the_alert_compares():
    """The verdict on `/` and in the HTML report reads a replayed target's bounds as the
    alerts do: the noise that straddles a threshold crosses nothing, a drift does."""
    from healthd.verdict import alert_book, ratio_crossings

    book = alert_book()
    noisy = {"consistency": 0.85, "contamination": 0.08}
    assert [c.alert for c in ratio_crossings(book, noisy)] == [
        "HealthdConsistencyLow",
        "HealthdContaminationRising",
    ]
    straddling = {"consistency": (0.75, 0.95), "contamination": (0.02, 0.14)}
    assert ratio_crossings(book, noisy, straddling) == []
    drifted = {"consistency": (0.7, 0.85), "contamination": (0.06, 0.1)}
    crossed = ratio_crossings(book, noisy, drifted)
    assert [c.alert for c in crossed] == ["HealthdConsistencyLow", "HealthdContaminationRising"]
    assert crossed[0].what == "consistency (upper bound) 0.850 < 0.9"
