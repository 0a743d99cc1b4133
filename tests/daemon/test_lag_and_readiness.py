"""Lag and the last real change in the daemon, start-up runs that are not missed runs, and
runs whose every source failed (issue 22, point 4)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from datetime import UTC, datetime, timedelta

import pytest
from daemon_helpers import EXAMPLE, Daemon, free_port, parse_metrics, sample, toml_config
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import generate_latest

from healthd.daemon.runner import Runner
from healthd.daemon.state import StateStore
from healthd.exporters.prometheus import build_registry
from healthd.exporters.tracing import build_tracer_provider, get_tracer
from healthd.report.live import live_html
from healthd.settings import load_settings, shadow_path

DAY = 86400.0


def _event(n: int, kind: str, at: datetime, subject: str, **extra: object) -> str:
    fact = {"subject": subject, "predicate": "language", "value": "go", "domain": "tech"}
    return json.dumps(
        {
            "id": f"e{n}",
            "type": kind,
            "timestamp": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "source": "git",
            "fact": fact,
            "depends_on": [],
            "metadata": extra.get("metadata", {}),
        }
    )


def _dormant_repository(path, now: datetime) -> None:
    """Two modules: one last changed 300 days ago, one 105 days ago; today's revalidation
    sweep re-observes both (what the git source emits for a dormant repository)."""
    sweep = {"revalidation": "sweep"}
    lines = [
        _event(1, "added", now - timedelta(days=300), "old-svc"),
        _event(2, "added", now - timedelta(days=105), "new-svc"),
        _event(3, "revalidated", now - timedelta(hours=2), "old-svc", metadata=sweep),
        _event(4, "revalidated", now - timedelta(hours=2), "new-svc", metadata=sweep),
    ]
    path.write_text("\n".join(lines) + "\n")


def _runner(tmp_path, clock, **kw):
    settings = load_settings(str(toml_config(tmp_path, port=1, **kw)))
    state = StateStore(settings.state_path)
    tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
    return Runner(settings, state, tracer, clock=clock), state


def test_lag_is_measured_against_the_newest_real_change_not_todays_sweep(tmp_path):
    now = datetime.now(UTC).replace(microsecond=0)
    timeline = tmp_path / "repo.jsonl"
    _dormant_repository(timeline, now)
    kw = dict(
        sources={"repo": {"kind": "file", "path": str(timeline)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    runner, state = _runner(tmp_path, time.time, **kw)
    registry, _ = build_registry(runner.view)
    runner.run_once()
    metrics = parse_metrics(generate_latest(registry).decode())

    lag = sample(metrics, "healthd_timeline_lag_seconds", target="reference")
    assert 104.9 * DAY < lag < 105.1 * DAY  # not two hours
    changed = sample(metrics, "healthd_last_change_timestamp_seconds", target="reference")
    assert changed == (now - timedelta(days=105)).timestamp()
    # after the sweep every fact was re-observed today; at the last change the 300-day-old
    # module was past the reference memory's TTL (tech 90 days) and no longer served: both
    # views are exported, side by side
    assert sample(metrics, "healthd_coverage_ratio", target="reference", domain="all") == 1.0
    assert (
        sample(metrics, "healthd_last_change_coverage_ratio", target="reference", domain="all")
        == 0.5
    )
    assert sample(metrics, "healthd_last_change_conflicts", target="reference", domain="all") == 0
    # the page at / shows both
    page = live_html(runner.view(), runner.ready())
    assert "Last real change" in page and "0.500 → 1.000" in page  # coverage
    runner.close()
    state.close()

    # a restart with nothing new keeps both (restored from the state file)
    runner, state = _runner(tmp_path, time.time, **kw)
    registry, _ = build_registry(runner.view)
    runner.run_once()
    again = parse_metrics(generate_latest(registry).decode())
    assert sample(again, "healthd_last_change_timestamp_seconds", target="reference") == changed
    assert (
        sample(again, "healthd_last_change_coverage_ratio", target="reference", domain="all") == 0.5
    )
    runner.close()
    state.close()


def test_a_run_whose_every_source_failed_is_a_failure_and_readiness_follows_the_grace(tmp_path):
    # the default grace: 15 minutes
    timeline = tmp_path / "t.jsonl"
    shutil.copy(EXAMPLE, timeline)
    clock = [time.time()]
    runner, state = _runner(
        tmp_path,
        lambda: clock[0],
        sources={"t": {"kind": "file", "path": str(timeline)}},
        targets={"naive": {"kind": "naive", "shadow": True}},
    )
    assert runner.run_once().targets["naive"]["result"] == "success"
    assert runner.ready()
    timeline.unlink()
    clock[0] += 60
    run = runner.run_once()
    assert run.targets["naive"]["result"] == "failure"
    assert "every source failed" in run.targets["naive"]["error"]
    row = runner.targets["naive"].row
    assert (row.runs_success, row.runs_failure, row.last_result) == (1, 1, "failure")
    assert row.results is not None  # the last results are still served
    assert runner.ready()  # within the grace
    clock[0] += 15 * 60
    runner.run_once()
    assert not runner.ready()
    assert "every source has failed since" in (runner.readiness() or "")
    shutil.copy(EXAMPLE, timeline)
    clock[0] += 60
    assert runner.run_once().targets["naive"]["result"] == "success"
    assert runner.ready()
    runner.close()
    state.close()


@pytest.mark.slow
def test_the_start_up_run_overlapping_the_first_ticks_is_not_a_missed_run(tmp_path):
    port = free_port()
    config = toml_config(
        tmp_path,
        port=port,
        cron="*/2 * * * * *",
        sources={"slow": {"kind": "sleepy", "delay": 0, "first_delay": 4.5, "path": str(EXAMPLE)}},
        targets={"naive": {"kind": "naive", "shadow": True}},
    )
    daemon = Daemon(config, port, tmp_path / "daemon.log")
    try:
        daemon.wait_ready()
        metrics = daemon.wait_until(
            lambda: (
                (m := daemon.scrape())
                and (sample(m, "healthd_runs_total", target="naive", result="success") or 0) >= 2
                and m
            ),
            what="the start-up run and the one after it",
        )
        assert sample(metrics, "healthd_scheduler_missed_runs_total") == 0
        assert any("start-up run is still going" in line for line in daemon.read_log().splitlines())
    finally:
        daemon.stop()


@pytest.mark.slow
def test_readyz_says_every_source_failed_after_the_grace(tmp_path):
    timeline = tmp_path / "t.jsonl"
    shutil.copy(EXAMPLE, timeline)
    port = free_port()
    config = toml_config(
        tmp_path,
        port=port,
        sources={"t": {"kind": "file", "path": str(timeline)}},
        targets={"naive": {"kind": "naive", "shadow": True}},
    )
    daemon = Daemon(config, port, tmp_path / "daemon.log", HEALTHD_SERVER__SOURCES_DOWN_GRACE="2s")
    try:
        daemon.wait_ready()
        timeline.unlink()
        answer = daemon.wait_until(
            lambda: (r := daemon.get("/readyz")).status_code == 503 and r.text, what="not ready"
        )
        assert "every source has failed since" in answer
        metrics = daemon.scrape()
        assert (sample(metrics, "healthd_runs_total", target="naive", result="failure") or 0) >= 1
        assert daemon.get("/healthz").status_code == 200
    finally:
        daemon.stop()


def test_results_stored_by_an_older_healthd_get_the_lag_of_the_newest_real_change(tmp_path):
    """An upgrade: the stored results have no newest real change; it is found once in the
    stored events, without replaying the persistent shadow."""
    now = datetime.now(UTC).replace(microsecond=0)
    timeline = tmp_path / "repo.jsonl"
    _dormant_repository(timeline, now)
    kw = dict(
        sources={"repo": {"kind": "file", "path": str(timeline)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    runner, state = _runner(tmp_path, time.time, **kw)
    runner.run_once()
    row = runner.targets["reference"].row
    for key in ("last_change", "swept", "newest_change"):  # as an older healthd wrote them
        row.results.pop(key)
    state.record_run(_record(row))
    runner.close()
    state.close()

    runner, state = _runner(tmp_path, time.time, **kw)
    registry, _ = build_registry(runner.view)
    assert runner.run_once().targets["reference"]["replayed"] == 0
    metrics = parse_metrics(generate_latest(registry).decode())
    lag = sample(metrics, "healthd_timeline_lag_seconds", target="reference")
    assert 104.9 * DAY < lag < 105.1 * DAY
    runner.close()
    state.close()


def _record(row):
    from healthd.daemon.state import RunRecord

    record = RunRecord()
    record.targets = [row]
    return record


class _Killed(BaseException):
    """A kill -9 at this point: nothing after it runs, nothing is closed."""


def _kill_at_nth_commit(monkeypatch, n: int) -> None:
    from healthd.daemon.shadows import Shadows

    commit, seen = Shadows._commit, []

    def dying(self, t):
        commit(self, t)
        seen.append(t.name)
        if len(seen) == n:
            raise _Killed()

    monkeypatch.setattr(Shadows, "_commit", dying)


@pytest.mark.parametrize(
    "earlier, kill_at",
    [(0, "results"), (60, "results"), (0, "batch"), (60, "batch")],
    ids=["first-run-stored", "later-run-stored", "first-run-mid", "later-run-mid"],
)
def test_a_kill_late_in_a_replay_keeps_the_last_change_after_the_restart(
    tmp_path, monkeypatch, earlier, kill_at
):
    """Killed after the shadow's last commit but before the state file stored the results
    ("results"), or after a batch's commit mid-replay ("batch"): the restarted daemon's
    last-change series are those of a run never interrupted, not absent (or an older run's)."""
    lines = EXAMPLE.read_text().splitlines(keepends=True)
    kw = dict(
        targets={"reference": {"kind": "reference", "shadow": True}},
        extra="checkpoint_events = 40",
    )

    def runner_in(name: str, upto: int):
        timeline = tmp_path / f"{name}.jsonl"
        (tmp_path / name).mkdir(exist_ok=True)
        timeline.write_text("".join(lines[:upto]))
        return _runner(
            tmp_path / name, time.time, sources={"t": {"kind": "file", "path": str(timeline)}}, **kw
        )

    straight, state = runner_in("straight", len(lines))
    straight.run_once()
    expected = {
        k: straight.targets["reference"].row.results[k]
        for k in ("last_change", "swept", "newest_change")
    }
    assert expected["last_change"] and expected["newest_change"]
    straight.close()
    state.close()

    if earlier:
        runner, state = runner_in("killed", earlier)
        runner.run_once()
        runner.close()
        state.close()
    runner, state = runner_in("killed", len(lines))
    if kill_at == "results":

        def dying(record):
            raise _Killed()

        monkeypatch.setattr(state, "record_run", dying)
    else:
        _kill_at_nth_commit(monkeypatch, 1)  # the first batch of 40
    with pytest.raises(_Killed):
        runner.run_once()
    monkeypatch.undo()
    del runner, state  # not closed: what a kill leaves

    runner, state = _runner(
        tmp_path / "killed",
        time.time,
        sources={"t": {"kind": "file", "path": str(tmp_path / "killed.jsonl")}},
        **kw,
    )
    registry, _ = build_registry(runner.view)
    assert runner.run_once().targets["reference"]["result"] == "success"
    results = runner.targets["reference"].row.results
    assert {k: results[k] for k in expected} == expected
    metrics = parse_metrics(generate_latest(registry).decode())
    assert (
        sample(metrics, "healthd_last_change_timestamp_seconds", target="reference")
        == (expected["newest_change"])
    )
    for ratio in ("freshness", "coverage"):
        assert (
            sample(metrics, f"healthd_last_change_{ratio}_ratio", target="reference", domain="all")
            == (expected["last_change"]["metrics"]["all"][ratio])
        )
    runner.close()
    state.close()


@pytest.mark.parametrize("appended", [0, 19], ids=["nothing-new", "sweeps-since"])
def test_a_checkpoint_from_before_it_carried_the_last_change_still_restores_it(tmp_path, appended):
    """A shadow checkpointed by a healthd from before checkpoints carried the newest real
    change (no ``change`` in its body): the restarted daemon takes the change from the
    stored results, and its last-change series are those of a run never restarted."""
    lines = EXAMPLE.read_text().splitlines(keepends=True)
    first = len(lines) - appended
    kw = dict(targets={"reference": {"kind": "reference", "shadow": True}})

    def runner_in(name: str, upto: int):
        timeline = tmp_path / f"{name}.jsonl"
        (tmp_path / name).mkdir(exist_ok=True)
        timeline.write_text("".join(lines[:upto]))
        return _runner(
            tmp_path / name, time.time, sources={"t": {"kind": "file", "path": str(timeline)}}, **kw
        )

    straight, state = runner_in("straight", len(lines))
    straight.run_once()
    expected = {
        k: straight.targets["reference"].row.results[k]
        for k in ("last_change", "swept", "newest_change")
    }
    straight.close()
    state.close()

    runner, state = runner_in("old", first)
    runner.run_once()
    runner.close()
    state.close()
    shadow = shadow_path(str(tmp_path / "old" / "state" / "state.sqlite"), "reference")
    with sqlite3.connect(shadow) as db:
        ((body,),) = db.execute("SELECT body FROM checkpoints").fetchall()
        old = json.loads(body)
        assert old.pop("change")["last_change"]
        db.execute("UPDATE checkpoints SET body = ?", (json.dumps(old),))

    runner, state = runner_in("old", len(lines))
    registry, _ = build_registry(runner.view)
    assert runner.run_once().targets["reference"]["result"] == "success"
    assert runner.targets["reference"].rebuilds == 0
    results = runner.targets["reference"].row.results
    assert {k: results[k] for k in expected} == expected
    metrics = parse_metrics(generate_latest(registry).decode())
    assert (
        sample(metrics, "healthd_last_change_timestamp_seconds", target="reference")
        == (expected["newest_change"])
    )
    assert (
        sample(metrics, "healthd_last_change_consistency_ratio", target="reference", domain="all")
        == (expected["last_change"]["metrics"]["all"]["consistency"])
    )
    runner.close()
    state.close()
