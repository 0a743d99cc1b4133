"""Fault injection against the real daemon process: each fault ends with the daemon alive,
the failure visible in /metrics and nothing lost."""

from __future__ import annotations

import socket
import sqlite3
import threading
import time

import pytest
from daemon_helpers import EXAMPLE, free_port, run_cli, sample, toml_config


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


class SilentListener:
    """A TCP listener on 127.0.0.1 that accepts connections and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def silent():
    listener = SilentListener()
    yield listener
    listener.close()


def test_a_git_remote_that_never_answers_times_out_and_sigterm_is_prompt(
    start_daemon, tmp_path, silent
):
    daemon = start_daemon(
        sources={
            "example": {"kind": "file", "path": str(EXAMPLE)},
            "repo": {
                "kind": "git",
                "url": f"http://127.0.0.1:{silent.port}/repo.git",
                "cache_dir": str(tmp_path / "cache"),
                "timeout_seconds": 2,
            },
        },
        targets={"naive": {"kind": "naive", "shadow": True}},
    )
    metrics = daemon.wait_until(
        lambda: (
            (m := daemon.scrape())
            and sample(m, "healthd_source_up", source="repo") == 0
            and _runs(m, "naive", "success") >= 1  # the other source and the target ran
            and m
        ),
        timeout=30,
        what="the hanging source reported down and a run done",
    )
    assert sample(metrics, "healthd_source_up", source="example") == 1
    failed = [l for l in daemon.log_lines() if l.get("event") == "source failed"]
    assert failed and "no answer within 2 s" in failed[0]["error"]
    time.sleep(1)  # the next run's clone is hanging now
    code, took = daemon.stop()
    assert code == 0 and took < 10


def test_sigterm_is_prompt_while_an_http_memory_never_answers(start_daemon, tmp_path, silent):
    daemon = start_daemon(
        targets={
            "team": {
                "kind": "http",
                "base_url": f"http://127.0.0.1:{silent.port}",
                "namespace": "shadow",
                "shadow": True,
                "timeout_seconds": 60,
                "max_retries": 5,
            }
        },
    )
    daemon.wait_until(lambda: len(silent.held) >= 1, what="the first request")
    code, took = daemon.stop()
    assert code == 0 and took < 10
    assert not any(l.get("event") == "run crashed" for l in daemon.log_lines())


def test_a_failed_rollback_does_not_mask_the_first_error(tmp_path):
    from healthd._sqlite import transaction

    db = sqlite3.connect(tmp_path / "t.sqlite", isolation_level=None)
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    db.execute("INSERT INTO t VALUES (1)")
    # INSERT OR ROLLBACK ends the transaction itself, so a second ROLLBACK has nothing to do
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"), transaction(db):
        db.execute("INSERT OR ROLLBACK INTO t VALUES (1)")
    assert not db.in_transaction
