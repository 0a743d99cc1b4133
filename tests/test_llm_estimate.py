"""`healthd check-config --estimate`: the sweeps the schedule implies, the money a price table
gives, the waits a batched target pays, a configuration without an LLM-backed target, and
bad price tables refused in one line. (Against what the daemon then spends, with Mem0 and the
stand-in LLM: tests/test_llm_estimate_day.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from healthd.estimate import TargetInput, estimate, sweeps_per_fact_per_day
from healthd.llm_prices import LLMConfig
from healthd.model import ChangeEvent, Fact

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)


def healthd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )


def hourly(days: int = 7) -> list[datetime]:
    return [NOW + timedelta(hours=h) for h in range(24 * days)]


@pytest.mark.parametrize(
    ("runs", "interval", "per_day"),
    [
        (hourly(), timedelta(days=1), 1.0),  # the default: once a day
        (hourly(), timedelta(0), 24.0),  # "PT0S": every run
        (hourly(), timedelta(hours=6), 4.0),
        (hourly(), timedelta(days=7), 1 / 7),
        ([NOW + timedelta(days=d) for d in range(7)], timedelta(hours=1), 1.0),  # daily runs
        ([], timedelta(days=1), 0.0),
    ],
)
def test_sweeps_per_fact_follow_the_schedule_and_the_interval(
    runs: list[datetime], interval: timedelta, per_day: float
) -> None:
    assert sweeps_per_fact_per_day(runs, 7, interval) == pytest.approx(per_day)


def event(n: int, kind: str, days_ago: float, key: str = "") -> ChangeEvent:
    fact = Fact(key or f"svc{n}", "language", "go", "tech")
    at = NOW - timedelta(days=days_ago)
    return ChangeEvent(f"e{n}", kind, at, "repo", fact)  # type: ignore[arg-type]


#: A product measured as writing 10 prompt + 1 completion tokens and 2 embedding tokens per
#: added event (one extraction call, one embedding call), and reading 3 embedding tokens per
#: probe asked, every active probe asked at every stage.
PROFILES = {
    "profiles": {
        "mem0:messages": {
            "writes": {
                "added": {
                    "events": 2,
                    "by_purpose": {
                        "extraction": {"calls": 2, "prompt_tokens": 20, "completion_tokens": 2},
                        "embedding": {"calls": 2, "prompt_tokens": 4, "completion_tokens": 0},
                    },
                }
            },
            "reads": {
                "answers": 4,
                "active_sum": 4,
                "by_purpose": {
                    "embedding": {"calls": 4, "prompt_tokens": 12, "completion_tokens": 0}
                },
            },
        }
    }
}


def run_estimate(events: list[ChangeEvent], targets: list[TargetInput], llm: LLMConfig) -> dict:
    return estimate(
        events,
        now=NOW,
        runs=hourly(),
        run_days=7,
        intervals={},
        targets=targets,
        profiles=PROFILES,
        llm=llm,
        probe_keys=frozenset(e.fact.key for e in events),
    )


def test_calls_tokens_and_money_follow_the_measured_costs_and_the_price_table() -> None:
    # 3 facts added 40, 20 and 10 days ago: 2 in the last 30 days, 1/15 a day
    events = [event(1, "added", 40), event(2, "added", 20), event(3, "added", 10)]
    llm = LLMConfig.model_validate(
        {
            "prices": {
                "prompt": 1.0,
                "completion": 2.0,
                "embedding": 0.5,
                "by_target": {"pricey": {"prompt": 10.0, "completion": 20.0, "embedding": 5.0}},
            }
        }
    )
    targets = [
        TargetInput("team", "mem0", {"ingest": "messages"}),
        TargetInput("pricey", "mem0", {"ingest": "messages"}),
        TargetInput("ref", "reference", {}),
    ]
    data = run_estimate(events, targets, llm)
    assert data["events"]["per_day"]["by_kind"] == {"added": pytest.approx(2 / 30, abs=1e-3)}
    team = data["targets"]["team"]
    # now: 3 writes, and 1 + 2 + 3 probes asked after them
    assert team["now"]["by_purpose"] == {
        "extraction": {"calls": 3, "prompt_tokens": 30, "completion_tokens": 3},
        "embedding": {"calls": 3 + 6, "prompt_tokens": 6 + 18, "completion_tokens": 0},
    }
    # 30 prompt + 3 completion + 24 embedding tokens; a day: 1/15 of an added event (its
    # 10 + 1 + 2 tokens) and a stage asking the 3 probes (3 tokens each)
    day = (10 / 15 * 1.0 + 1 / 15 * 2.0 + (2 / 15 + 3 * 3 / 15) * 0.5) / 1e6
    assert team["money"] == {
        "currency": "USD",
        "now": pytest.approx((30 * 1.0 + 3 * 2.0 + 24 * 0.5) / 1e6, rel=1e-3),
        "per_day": pytest.approx(day, rel=1e-3),
    }
    assert data["targets"]["pricey"]["money"]["now"] == pytest.approx(10 * team["money"]["now"])
    assert data["targets"]["ref"]["per_day"]["calls"] == 0
    assert "money" not in data["targets"]["ref"]


def test_a_batched_target_waits_once_per_batch_and_an_uncounted_one_says_so() -> None:
    events = [event(n, "added", 1) for n in range(25)]
    agentcore = TargetInput(
        "ac",
        "agentcore",
        {"consistency_wait_seconds": 2, "batch_events": 10},
        not_counted="AgentCore's own model calls are made inside the service",
    )
    data = run_estimate(events, [agentcore], LLMConfig())
    row = data["targets"]["ac"]
    assert row["stages"]["now"] == 3 and row["wait_seconds"]["now"] == 6
    assert row["note"].startswith("not estimated: AgentCore's own model calls")
    assert "now" not in row  # no calls claimed for what healthd cannot see


def test_check_config_estimate_on_a_configuration_without_an_llm(tmp_path: Path) -> None:
    config = tmp_path / "healthd.toml"
    config.write_text(
        'example = true\n[schedule]\ncron = "@hourly"\n'
        '[targets.reference]\nkind = "reference"\nshadow = true\n'
    )
    plain = healthd("check-config", "--config", str(config))
    assert plain.returncode == 0 and plain.stdout.count("\n") == 1
    text = healthd("check-config", "--config", str(config), "--estimate")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(plain.stdout)  # the check's line, then the estimate
    assert "target reference (reference): now 0 calls; per day 0 calls" in text.stdout
    done = healthd("check-config", "--config", str(config), "--estimate", "--format", "json")
    data = json.loads(done.stdout)
    assert data["events"]["now"]["total"] == 135  # the bundled example's events
    assert data["runs_per_day"] == 24
    assert data["targets"]["reference"]["note"] == "calls no LLM or embedding endpoint"


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ("[llm.prices]\nprompt = -1\ncompletion = 1\nembedding = 0\n", "llm.prices.prompt"),
        ("[llm.prices]\nprompt = 1\ncompletion = 1\n", "llm.prices.embedding: Field required"),
        (
            "[llm.prices]\nprompt = 1\ncompletion = 1\nembedding = 0\ninput = 2\n",
            "llm.prices.input: unknown key",
        ),
        (
            "[llm.prices]\nprompt = 1\ncompletion = 1\nembedding = 0\n"
            "[llm.prices.by_target.gone]\nprompt = 1\ncompletion = 1\nembedding = 0\n",
            "llm.prices.by_target.gone: no target 'gone' is configured",
        ),
        (
            "[llm.prices]\nprompt = 1\ncompletion = 1\nembedding = 0\n"
            "[llm.prices.by_target.reference]\ncurrency = 'EUR'\nprompt = 1\ncompletion = 1\n"
            "embedding = 0\n",
            "differs from prices.currency 'USD'",
        ),
    ],
)
def test_a_bad_price_table_is_one_line_exit_2(tmp_path: Path, table: str, says: str) -> None:
    config = tmp_path / "healthd.toml"
    config.write_text(
        f'example = true\n[targets.reference]\nkind = "reference"\nshadow = true\n{table}'
    )
    done = healthd("check-config", "--config", str(config), "--estimate")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


@pytest.mark.parametrize(
    "args", [["--format", "json"], ["--print", "--estimate"], ["--print", "--format", "json"]]
)
def test_switches_that_do_not_go_together_are_one_line_exit_2(args: list[str]) -> None:
    done = healthd("check-config", *args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr


@pytest.mark.parametrize(
    ("cron", "per_day"),
    [("@hourly", 24), ("0 9 * * 1-5", 5 / 7), ("*/5 * * * * *", 17280), ("@weekly", 1 / 7)],
)
def test_runs_a_day_are_the_schedules(cron: str, per_day: float) -> None:
    from healthd._estimate_cli import schedule_runs

    runs, days = schedule_runs(cron, NOW)
    assert len(runs) / days == pytest.approx(per_day)
    assert all(NOW <= run < NOW + timedelta(days=days) for run in runs)


def test_the_budgets_say_how_many_runs_and_days_the_first_replay_takes() -> None:
    events = [event(n, "added", 1) for n in range(10)]
    # now: 10 extractions + 10 embedding writes + 55 probe reads = 75 calls; tokens
    # 10 * (10 + 1 + 2) + 55 * 3 = 295. A day (those 10 changes came within one): 10 writes
    # (130 tokens) and 10 stages asking the 10 probes (300): 430, over the 100
    budgeted = {"ingest": "messages", "max_llm_calls_per_run": 30, "max_llm_tokens_per_day": 100}
    data = run_estimate(events, [TargetInput("team", "mem0", budgeted)], LLMConfig())
    team = data["targets"]["team"]
    assert team["now"]["calls"] == 75
    assert team["budgets"] == {
        "max_llm_calls_per_run": {"limit": 30, "first_replay_runs": 3},
        "max_llm_tokens_per_day": {"limit": 100, "first_replay_days": 3, "a_day_fits": False},
    }


@pytest.mark.parametrize(("sweeps", "writes"), [("subject", 2), ("each", 4), ("off", 0)])
def test_a_sweep_costs_the_writes_the_targets_sweeps_option_makes_of_it(
    sweeps: str, writes: int
) -> None:
    """Four facts about two subjects, swept once a day: one write per subject, one per fact
    or none, now (the sweep in the history) and per day (the schedule's)."""
    facts = [Fact(s, p, "x", "tech") for s in ("auth", "billing") for p in ("language", "db")]
    added = [
        ChangeEvent(f"a{i}", "added", NOW - timedelta(days=40), "repo", f)
        for i, f in enumerate(facts)
    ]
    swept = [
        ChangeEvent(f"s{i}", "revalidated", NOW - timedelta(days=1), "repo", f,
                    metadata={"revalidation": "sweep"})
        for i, f in enumerate(facts)
    ]  # fmt: skip
    data = estimate(
        added + swept,
        now=NOW,
        runs=hourly(),
        run_days=7,
        intervals={"repo": timedelta(days=1)},
        targets=[TargetInput("team", "mem0", {"ingest": "messages", "sweeps": sweeps})],
        profiles=PROFILES,
        llm=LLMConfig(),
        probe_keys=frozenset(),
    )
    team = data["targets"]["team"]
    assert team["sweeps"] == sweeps
    assert data["sweeps"]["repo"]["subjects_held"] == 2
    assert team["per_day"]["by_purpose"].get("extraction", {"calls": 0})["calls"] == writes
    assert team["now"]["by_purpose"]["extraction"]["calls"] == len(added) + writes
