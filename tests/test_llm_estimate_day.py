"""`healthd check-config --estimate` against what the daemon then spends: a repository whose
last month was alike every day (a dependency bump, an owner rotation, an ADR every other
day), read by a git and an adr source, replayed into Mem0 as conversation turns through the
stand-in LLM (healthd.testing.standin_llm, on 127.0.0.1, not a model). The estimate is taken
first; then a daemon on an hourly schedule runs its first replay and a simulated day of 24
runs (its clock and the sources' wall clock moved an hour a run, the day's commits made as
they fall due), and the calls it spends are read from `healthd_llm_calls_total` and from the
stand-in's own request log."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from healthd.testing.standin_llm import StandInLLM

os.environ["MEM0_TELEMETRY"] = "False"  # read once, when mem0 is first imported
pytest.importorskip("mem0", reason="the mem0 extra is not installed")

from test_llm_accounting import KEY_VAR, mem0_targets, sample

pytestmark = pytest.mark.product

SERVICES = ("billing", "search", "ledger")
OWNERS = ("@ana", "@bo", "@cy", "@di")
HISTORY_DAYS = 31  # days of alike commits before today; the estimate's window is 30 days
# when within each day the commits fall: a bump, an owner rotation, an ADR (every other day)
AT_BUMP, AT_OWNERS, AT_ADR = timedelta(hours=1), timedelta(hours=4), timedelta(hours=7)


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir()
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "Dev")
        self.git("config", "user.email", "dev@example.com")
        self.git("config", "commit.gpgsign", "false")
        self.version = dict.fromkeys(SERVICES, 1)
        self.adrs = 0

    def git(self, *args: str, when: datetime | None = None) -> None:
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(self.path.parent)}
        if when is not None:
            stamp = when.strftime("%Y-%m-%dT%H:%M:%S+0000")
            env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
        subprocess.run(["git", *args], cwd=self.path, env=env, check=True, capture_output=True)

    def commit(self, when: datetime, files: dict[str, str]) -> None:
        for rel, text in files.items():
            (self.path / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.path / rel).write_text(text)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", f"change at {when.isoformat()}", when=when)

    def manifest(self, service: str) -> dict[str, str]:
        deps = {"express": f"^4.{self.version[service]}.0", "pg": "^8.11.0"}
        text = json.dumps({"name": service, "dependencies": deps})
        return {f"services/{service}/package.json": text, f"services/{service}/index.js": "1\n"}

    def owners(self, day: int) -> dict[str, str]:
        lines = [
            f"/services/{s}/ {OWNERS[(day + i) % len(OWNERS)]}" for i, s in enumerate(SERVICES)
        ]
        return {"CODEOWNERS": "\n".join(lines) + "\n"}

    def adr(self, when: datetime) -> dict[str, str]:
        self.adrs += 1
        n = self.adrs
        return {
            f"doc/adr/{n:04d}-use-tool-{n}.md": f"# {n}. Use tool {n}\n\nDate: "
            f"{when:%Y-%m-%d}\n\n## Status\n\nAccepted\n\n## Context\n\nWhy {n}.\n\n"
            f"## Decision\n\nWe use tool {n}.\n\n## Consequences\n\nSo.\n"
        }

    def plan(
        self, start: datetime, day: int
    ) -> list[tuple[datetime, Callable[[], dict[str, str]]]]:
        """Day ``day``'s commits from ``start``: when each falls, and what it writes."""
        service = SERVICES[day % len(SERVICES)]
        due: list[tuple[datetime, Callable[[], dict[str, str]]]] = [
            (start + AT_BUMP, lambda: self._bump(service)),
            (start + AT_OWNERS, lambda: self.owners(day)),
        ]
        if day % 2 == 0:
            due.append((start + AT_ADR, lambda: self.adr(start + AT_ADR)))
        return due

    def _bump(self, service: str) -> dict[str, str]:
        self.version[service] += 1
        return self.manifest(service)


def config_for(tmp_path: Path, repo: Path, base_url: str) -> Path:
    config = tmp_path / "healthd.toml"
    config.write_text(
        f"""
state_path = {json.dumps(str(tmp_path / "state.sqlite"))}

[schedule]
cron = "0 0 * * * *"   # hourly

[sources.repo]
kind = "git"
path = {json.dumps(str(repo))}

[sources.decisions]
kind = "adr"
path = {json.dumps(str(repo))}

{mem0_targets(base_url)}
[llm.prices]
prompt = 0.15
completion = 0.60
embedding = 0.02
"""
    )
    return config


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInLLM]:
    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with StandInLLM() as server:
        yield server


def calls_exported(text: str) -> float:
    return sum(
        sample(text, "healthd_llm_calls_total", target="team-mem0", purpose=p) or 0.0
        for p in ("extraction", "update_decision", "embedding", "unknown")
    )


@pytest.mark.slow
def test_the_estimate_of_a_day_holds_within_a_fifth_of_what_the_daemon_then_spends(
    llm: StandInLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from prometheus_client import generate_latest

    import healthd.sources._gitlog as gitlog
    from healthd.cli import main
    from healthd.daemon.runner import Runner
    from healthd.daemon.state import StateStore
    from healthd.exporters.prometheus import build_registry
    from healthd.exporters.tracing import build_tracer_provider, get_tracer
    from healthd.settings import load_settings

    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    today = now - timedelta(hours=12)  # the simulated day's commits fall in the next 24 h
    repo = Repo(tmp_path / "shop")
    first = today - timedelta(days=HISTORY_DAYS + 1)
    assert first + AT_ADR < now - timedelta(days=30)
    repo.commit(
        first,
        {
            **{k: v for s in SERVICES for k, v in repo.manifest(s).items()},
            **repo.owners(0),
            **repo.adr(first),
        },
    )
    for day in range(HISTORY_DAYS + 1):  # the last is today, its commits already made
        for when, files in repo.plan(today - timedelta(days=HISTORY_DAYS - day), day + 1):
            repo.commit(when, files())
    config = config_for(tmp_path, repo.path, llm.base_url)

    out = io.StringIO()
    with redirect_stdout(out):
        assert (
            main(["check-config", "--config", str(config), "--estimate", "--format", "json"]) == 0
        )
    estimate = json.loads(out.getvalue())
    mem0 = estimate["targets"]["team-mem0"]
    assert len(llm.requests) == 0  # estimating called nothing
    assert estimate["runs_per_day"] == 24 and estimate["history"]["window_days"] == 30
    assert estimate["targets"]["reference"]["per_day"]["calls"] == 0
    assert mem0["money"]["per_day"] > 0 and mem0["money"]["currency"] == "USD"

    # the daemon: its first run now, then a day of hourly runs
    clock = [now.timestamp()]
    monkeypatch.setattr(gitlog, "wall_clock", lambda: datetime.fromtimestamp(clock[0], UTC))
    settings = load_settings(str(config))
    state = StateStore(settings.state_path)
    runner = Runner(
        settings,
        state,
        get_tracer(build_tracer_provider(exporter=InMemorySpanExporter())),
        clock=lambda: clock[0],
    )
    registry, _ = build_registry(runner.view)
    try:
        summary = runner.run_once()
        assert summary is not None and summary.targets["team-mem0"]["result"] == "success"
        first_run = calls_exported(generate_latest(registry).decode())
        first_requests = len(llm.requests)
        # two days: on the first a fact the first run swept is not swept again (its last
        # sweep is less than a whole interval before the next bucket); the second is as
        # every day after it
        due = [
            *repo.plan(today + timedelta(days=1), HISTORY_DAYS + 2),
            *repo.plan(today + timedelta(days=2), HISTORY_DAYS + 3),
        ]
        spent = []
        for hour in range(1, 49):
            clock[0] = (now + timedelta(hours=hour)).timestamp()
            while due and due[0][0].timestamp() <= clock[0]:
                when, files = due.pop(0)
                repo.commit(when, files())
            summary = runner.run_once()
            assert summary is not None and summary.targets["team-mem0"]["result"] == "success"
            if hour % 24 == 0:
                spent.append(
                    (calls_exported(generate_latest(registry).decode()), len(llm.requests))
                )
        assert not due
    finally:
        runner.close()
        state.close()
    exported = [spent[0][0] - first_run, spent[1][0] - spent[0][0]]
    logged = [spent[0][1] - first_requests, spent[1][1] - spent[0][1]]
    assert first_run == first_requests  # the accounting agrees with the stand-in's log
    assert exported == logged
    estimated_now, estimated_day = mem0["now"]["calls"], mem0["per_day"]["calls"]
    print(
        f"estimate: now {estimated_now} calls, per day {estimated_day}; daemon: first run "
        f"{first_requests}, the first day after {logged[0]}, the second {logged[1]}"
    )
    assert abs(estimated_day - logged[1]) <= 0.2 * logged[1]
    assert abs(estimated_now - first_requests) <= 0.2 * first_requests


@pytest.mark.slow
def test_the_shipped_costs_are_what_the_measuring_script_measures_now() -> None:
    """healthd/data/llm_costs.json, which the estimate reads, is not stale: the script that
    wrote it (the bundled example through Mem0 and the stand-in, deterministic) writes the
    same figures with the Mem0 and the stand-in installed now."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, str(root / "scripts" / "measure_llm_costs.py"), "--print"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    shipped = json.loads((root / "healthd" / "data" / "llm_costs.json").read_text())
    assert json.loads(done.stdout) == shipped
