"""A persistent shadow commits in batches with a checkpoint: a run killed with SIGKILL in
the middle of a long replay resumes from the last committed batch after a restart and ends
with the numbers of an uninterrupted run."""

from __future__ import annotations

import json
import signal
import sqlite3
import time

import pytest
from daemon_helpers import Daemon, free_port, run_cli, sample, synthetic_timeline, toml_config

from healthd.scoring import BUCKETS

RATIOS = ("freshness", "consistency", "coverage", "forgetting", "contamination")
EVENTS = 6000


def _checkpoint_applied(shadow) -> int | None:
    try:
        db = sqlite3.connect(f"file:{shadow}?mode=ro", uri=True, timeout=1)
        try:
            row = db.execute("SELECT body FROM checkpoints").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return json.loads(row[0])["applied"] if row else None


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "term"])
def test_a_stop_mid_replay_resumes_from_the_last_batch_with_identical_metrics(
    start_daemon, tmp_path, stop_signal
):
    timeline = synthetic_timeline(tmp_path / "timeline.jsonl", EVENTS)
    port = free_port()
    config = toml_config(
        tmp_path,
        port=port,
        cron="0 0 1 1 *",  # only the run on start
        sources={"syn": {"kind": "file", "path": str(timeline)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
        extra="checkpoint_events = 250",
    )
    shadow = tmp_path / "state" / "shadows" / "reference.sqlite"
    first = start_daemon(config, port=port, log_name="first.log")
    deadline = time.monotonic() + 60
    seen = None
    while time.monotonic() < deadline:
        seen = _checkpoint_applied(shadow)
        if seen is not None and seen >= 500:
            break
        time.sleep(0.005)
    code, took = first.stop(stop_signal)
    if stop_signal == signal.SIGTERM:  # the replay stops between two events and commits
        assert code == 0 and took < 10
    assert seen is not None and 500 <= seen < EVENTS, f"not caught mid-replay: {seen}"
    committed = _checkpoint_applied(shadow)
    assert committed is not None and seen <= committed < EVENTS

    second = start_daemon(config, port=port, log_name="second.log")
    metrics = second.wait_until(
        lambda: (
            (m := second.scrape())
            and (sample(m, "healthd_runs_total", target="reference", result="success") or 0) >= 1
            and m
        ),
        timeout=120,
        what="the resumed run",
    )
    log = second.log_lines()
    restored = [l for l in log if l.get("event") == "shadow restored"]
    assert restored and restored[0]["events"] == committed  # not from scratch
    runs = [l for l in log if l.get("event") == "run"]
    assert runs[0]["replayed"] == EVENTS - committed
    assert not any(l.get("event") == "fresh replay" for l in log)
    assert sample(metrics, "healthd_events_replayed_total", target="reference") == EVENTS
    assert sample(metrics, "healthd_source_events_total", source="syn") == EVENTS
    assert second.stop()[0] == 0

    evaluated = run_cli(
        "evaluate", "--timeline", str(timeline), "--target", "reference", "--format", "json"
    )
    final = json.loads(evaluated.stdout)["targets"][0]["final"]
    for bucket in BUCKETS:
        for ratio in RATIOS:
            got = sample(metrics, f"healthd_{ratio}_ratio", target="reference", domain=bucket)
            assert got == final["metrics"][bucket][ratio], (bucket, ratio)
    assert (
        sample(metrics, "healthd_conflicts", target="reference", domain="all")
        == (final["metrics"]["all"]["conflicts"])
    )
    assert sample(metrics, "healthd_probes", target="reference") == len(final["probes"])


@pytest.mark.slow
def test_a_long_replay_shows_its_progress(tmp_path):
    timeline = synthetic_timeline(tmp_path / "timeline.jsonl", EVENTS)
    port = free_port()
    config = toml_config(
        tmp_path,
        port=port,
        cron="0 0 1 1 *",
        sources={"syn": {"kind": "file", "path": str(timeline)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    daemon = Daemon(
        config, port, tmp_path / "progress.log", HEALTHD_LOGGING__PROGRESS_INTERVAL="0.2s"
    )
    try:
        _check_progress(daemon)
    finally:
        if daemon.proc.poll() is None:
            daemon.proc.kill()


def _check_progress(daemon) -> None:
    pending = daemon.wait_until(
        lambda: (
            (m := daemon.scrape())
            and (p := sample(m, "healthd_replay_pending_events", target="reference") or 0) > 0
            and p
        ),
        timeout=60,
        what="pending events during the replay",
    )
    assert 0 < pending < EVENTS
    daemon.wait_ready(timeout=120)
    progress = [l for l in daemon.log_lines() if l.get("event") == "replay progress"]
    assert progress, "no progress line"
    line = progress[0]
    assert line["target"] == "reference" and line["total"] == EVENTS
    assert 0 < line["events"] < EVENTS and line["events_per_second"] > 0
    assert line["eta_seconds"] > 0
    assert sample(daemon.scrape(), "healthd_replay_pending_events", target="reference") == 0
    assert daemon.stop()[0] == 0
