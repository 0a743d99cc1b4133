"""LLM budgets on an LLM-backed target (`max_llm_calls_per_run`, `max_llm_tokens_per_day`):
a run that would exceed one stops before the call that would, keeps what it replayed, fails
with one line naming the budget (log, `/`, `evaluate`'s exit code and stderr line), and the
next run resumes where it stopped; `healthd_llm_budget_remaining` says what is left. Run on
the bundled example through Mem0 messages, with the stand-in LLM (healthd.testing.standin_llm,
on 127.0.0.1, not a model) behind Mem0's own clients; the calls are checked against the
stand-in's own log of what it received."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from healthd.logging import configure_logging
from healthd.testing.standin_llm import StandInLLM

os.environ["MEM0_TELEMETRY"] = "False"  # read once, when mem0 is first imported
pytest.importorskip("mem0", reason="the mem0 extra is not installed")

from test_llm_accounting import KEY_VAR, mem0_config, sample

pytestmark = pytest.mark.product


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInLLM]:
    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with StandInLLM() as server:
        yield server


def config_in(directory: Path, base_url: str) -> Path:
    directory.mkdir()
    return mem0_config(directory, base_url)


def budgeted(directory: Path, base_url: str, budget: str) -> Path:
    config = config_in(directory, base_url)
    text = config.read_text()
    assert 'ingest = "messages"\n' in text
    config.write_text(text.replace('ingest = "messages"\n', f'ingest = "messages"\n{budget}\n'))
    return config


def daemon_runs(
    config: Path,
    runs: int,
    clock: Callable[[], float] = time.time,
    between: Callable[[], None] = lambda: None,
    target: str = "team-mem0",
) -> tuple[list[dict[str, Any]], list[Any], list[tuple[str, str]]]:
    """A daemon started on ``config``'s state file, up to ``runs`` runs until one succeeds,
    then stopped: each run's outcome for ``target`` (the Mem0 one), its log, and the metrics
    scraped and the page at / after each."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from prometheus_client import generate_latest

    from healthd.daemon.runner import Runner
    from healthd.daemon.state import StateStore
    from healthd.exporters.prometheus import build_registry
    from healthd.exporters.tracing import build_tracer_provider, get_tracer
    from healthd.report.live import live_html
    from healthd.settings import load_settings

    settings = load_settings(str(config))
    state = StateStore(settings.state_path)
    tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
    runner = Runner(settings, state, tracer, clock=clock)
    registry, _ = build_registry(runner.view)
    configure_logging("info", "json", io.StringIO())
    outcomes: list[dict[str, Any]] = []
    logs: list[Any] = []
    scraped: list[tuple[str, str]] = []
    try:
        for run in range(runs):
            if run:
                between()
            with capture_logs() as captured:
                summary = runner.run_once()
            assert summary is not None
            outcomes.append(summary.targets[target])
            logs.append(captured)
            scraped.append(
                (generate_latest(registry).decode(), live_html(runner.view(), ready=True))
            )
            if outcomes[-1]["result"] == "success":
                break
    finally:
        runner.close()
        state.close()
    return outcomes, logs, scraped


@pytest.mark.slow
def test_a_calls_budget_stops_a_run_and_the_next_runs_resume_to_the_unbudgeted_scores(
    llm: StandInLLM, tmp_path: Path
) -> None:
    """Unbudgeted, the example costs Mem0 2921 calls in one run. With 1200 calls a run, the
    first two runs fail naming the budget and the third finishes: together they sent the
    stand-in exactly the calls of the unbudgeted run (no event replayed twice, none lost)
    and the final scores are the same."""
    (free,), _, _ = daemon_runs(config_in(tmp_path / "free", llm.base_url), 1)
    unbudgeted_calls = len(llm.requests)
    assert free["result"] == "success" and unbudgeted_calls > 2400
    llm.requests.clear()

    budget = 1200
    config = budgeted(tmp_path / "budgeted", llm.base_url, f"max_llm_calls_per_run = {budget}")
    outcomes, logs, scraped = daemon_runs(config, 5)
    assert [o["result"] for o in outcomes] == ["failure", "failure", "success"]
    assert len(llm.requests) == unbudgeted_calls
    assert outcomes[-1]["metrics"] == free["metrics"]
    for outcome, captured, (metrics, page) in zip(outcomes[:2], logs, scraped, strict=False):
        (line,) = [e for e in captured if e["event"] == "run failed"]
        assert line["target"] == "team-mem0"
        error = outcome["error"]
        assert error == line["error"] and "\n" not in error
        assert error.startswith("LLM budget max_llm_calls_per_run reached: ")
        assert "the next run resumes from there" in error
        # reads (the probes scoring the last stage) are never refused: a run may go past
        # the budget by them, never by a write
        assert budget <= line["llm_calls"] < budget + 100
        assert f"calls this run, of {budget}: stopped before the call" in error
        assert error in page
        assert sample(metrics, "healthd_runs_total", target="team-mem0", result="failure")
        left = sample(
            metrics,
            "healthd_llm_budget_remaining",
            target="team-mem0",
            budget="max_llm_calls_per_run",
        )
        assert left == 0
    left = sample(
        scraped[-1][0],
        "healthd_llm_budget_remaining",
        target="team-mem0",
        budget="max_llm_calls_per_run",
    )
    assert left == budget - outcomes[-1]["llm"]["calls"] > 0


@pytest.mark.slow
def test_a_tokens_budget_holds_for_the_utc_day_across_a_restart_and_resumes_the_next_day(
    llm: StandInLLM, tmp_path: Path
) -> None:
    """The day's tokens are kept in the state file: a daemon restarted the same day sends
    nothing more (its first write is refused at once); the next UTC day it replays (from
    the start: its Mem0 shadow lived in the stopped process), runs out again, and its next
    run, the day after, resumes where it stopped and ends on the unbudgeted scores."""
    (free,), _, _ = daemon_runs(config_in(tmp_path / "free", llm.base_url), 1)
    llm.requests.clear()
    budget = 400_000  # the example's run reports some 730,000 prompt tokens
    config = budgeted(tmp_path / "budgeted", llm.base_url, f"max_llm_tokens_per_day = {budget}")
    day = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    name = "max_llm_tokens_per_day"

    (first,), _, ((metrics, _),) = daemon_runs(config, 1, clock=lambda: day)
    assert first["result"] == "failure"
    assert first["error"].startswith(f"LLM budget {name} reached: ")
    assert f"tokens today (UTC), of {budget}: stopped before the call" in first["error"]
    spent = len(llm.requests)
    assert 0 < spent < 2400
    assert sample(metrics, "healthd_llm_budget_remaining", target="team-mem0", budget=name) == 0

    (again,), _, _ = daemon_runs(config, 1, clock=lambda: day + 3600)  # restarted, same day
    assert again["result"] == "failure" and again["error"].startswith(
        f"LLM budget {name} reached: "
    )
    assert "0 of 135 events replayed" in again["error"]
    assert len(llm.requests) == spent  # not one call more

    now = [day + 86_400]

    def next_day() -> None:
        now[0] += 86_400

    outcomes, _, scraped = daemon_runs(config, 2, clock=lambda: now[0], between=next_day)
    assert [o["result"] for o in outcomes] == ["failure", "success"]
    assert outcomes[-1]["metrics"] == free["metrics"]
    left = sample(scraped[-1][0], "healthd_llm_budget_remaining", target="team-mem0", budget=name)
    assert left is not None and 0 < left < budget


@pytest.mark.parametrize(
    ("target", "says"),
    [
        (
            "reference:max_llm_calls_per_run=5",
            "max_llm_calls_per_run: a reference target makes no LLM call healthd counts",
        ),
        ("mem0:max_llm_calls_per_run=0", "max_llm_calls_per_run must be a whole number"),
        ("mem0:max_llm_calls_per_run=lots", "max_llm_calls_per_run must be a whole number"),
        ("mem0:max_llm_tokens_per_day=-3", "max_llm_tokens_per_day must be a whole number"),
    ],
)
def test_a_budget_a_target_cannot_keep_is_one_line_and_exit_2(
    target: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from healthd.cli import main

    assert main(["evaluate", "--target", target]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("healthd: error: target ") and says in line


def test_changing_a_budget_replays_nothing_again(tmp_path: Path) -> None:
    """The budgets are not part of the target's fingerprint: raising one keeps the shadow."""
    from healthd.settings import load_settings, target_fingerprint

    prints = []
    for budget in ("", "max_llm_calls_per_run = 10", "max_llm_calls_per_run = 5000"):
        config = budgeted(tmp_path / f"b{len(prints)}", "http://127.0.0.1:9/v1", budget)
        settings = load_settings(str(config), deep=False)
        options = settings.targets["team-mem0"].options
        prints.append(target_fingerprint(settings, "team-mem0", options, ""))
    assert len(set(prints)) == 1
    assert "max_llm_calls_per_run" in options


def test_evaluate_past_its_budget_exits_2_with_one_line_naming_it(
    llm: StandInLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evaluate` keeps nothing between runs: past a budget it stops, exit 2, one line; the
    stand-in received exactly the budget's calls (the refused one was never sent)."""
    from healthd.cli import main

    config = budgeted(tmp_path / "c", llm.base_url, "max_llm_calls_per_run = 50")
    out = tmp_path / "report.json"
    code = main(["evaluate", "--config", str(config), "--format", "json", "--output", str(out)])
    assert code == 2 and not out.exists()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        "healthd: error: LLM budget max_llm_calls_per_run reached: 50 calls this run, of 50: "
        "stopped before the call that would exceed it"
    )
    assert len(llm.requests) == 50
