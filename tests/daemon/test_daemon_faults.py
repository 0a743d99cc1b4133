"""Fault injection against the real daemon process: each fault ends with the daemon alive,
the failure visible in /metrics and nothing lost."""

from __future__ import annotations

import sqlite3

from daemon_helpers import free_port, run_cli, sample, toml_config


def _runs(metrics, target, result):
    return sample(metrics, "healthd_runs_total", target=target, result=result) or 0


def test_a_state_file_overwritten_while_running_counts_failed_runs(start_daemon, tmp_path):
    daemon = start_daemon()
    daemon.wait_ready()
    state = tmp_path / "state" / "state.sqlite"
    with open(state, "r+b") as handle:  # same file, garbage inside
        handle.write(b"garbage!" * 4096)
    metrics = daemon.wait_until(
        lambda: (
            (m := daemon.scrape())
            and _runs(m, "reference", "failure") >= 2
            and _runs(m, "naive", "failure") >= 2
            and m
        ),
        what="failed runs counted",
    )
    assert daemon.get("/healthz").status_code == 200
    failed = [l for l in daemon.log_lines() if l.get("event") == "run failed"]
    assert failed and "state file" in failed[0]["error"]
    assert not any(l.get("event") == "run crashed" for l in daemon.log_lines())
    success = _runs(metrics, "reference", "success")
    again = daemon.wait_until(
        lambda: (m := daemon.scrape()) and _runs(m, "reference", "failure") >= 3 and m,
        what="a third failed run",
    )
    assert _runs(again, "reference", "success") == success  # no success while it cannot write
    assert daemon.stop()[0] == 0


def test_an_empty_state_file_is_reported_as_a_new_state(start_daemon, tmp_path):
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "state.sqlite").write_bytes(b"")
    daemon = start_daemon()
    daemon.wait_ready()
    logged = [l.get("event") for l in daemon.log_lines()]
    assert "state file is empty: starting from a new state" in logged
    assert daemon.stop()[0] == 0


def test_another_applications_database_is_refused_untouched(tmp_path):
    other = tmp_path / "app.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    db.commit()
    db.close()
    config = toml_config(tmp_path, port=free_port())
    default = str(tmp_path / "state" / "state.sqlite")
    config.write_text(config.read_text().replace(default, str(other)))
    result = run_cli("run", "--config", str(config))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "not a healthd state file" in result.stderr
    assert str(other) in result.stderr
    tables = sqlite3.connect(other).execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == [("users",)]
