"""Fault injection against the real daemon process: each fault ends with the daemon alive,
the failure visible in /metrics and nothing lost."""

from __future__ import annotations

import json
import random
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from daemon_helpers import (
    EXAMPLE,
    free_port,
    one_line_error,
    run_cli,
    runs,
    sample,
    start_with_http_memory,
    start_with_hung_remote,
    synthetic_timeline,
    toml_config,
)
from memory_service import MemoryService


@pytest.mark.slow
def test_a_state_file_overwritten_while_running_counts_failed_runs(start_daemon, tmp_path):
    daemon = start_daemon()
    daemon.wait_ready()
    state = tmp_path / "state" / "state.sqlite"
    with open(state, "r+b") as handle:  # same file, garbage inside
        handle.write(b"garbage!" * 4096)
    metrics = daemon.wait_until(
        lambda: (
            (m := daemon.scrape())
            and runs(m, "reference", "failure") >= 2
            and runs(m, "naive", "failure") >= 2
            and m
        ),
        what="failed runs counted",
    )
    assert daemon.get("/healthz").status_code == 200
    failed = [l for l in daemon.log_lines() if l.get("event") == "run failed"]
    assert failed and "state file" in failed[0]["error"]
    assert not any(l.get("event") == "run crashed" for l in daemon.log_lines())
    success = runs(metrics, "reference", "success")
    again = daemon.wait_until(
        lambda: (m := daemon.scrape()) and runs(m, "reference", "failure") >= 3 and m,
        what="a third failed run",
    )
    assert runs(again, "reference", "success") == success  # no success while it cannot write
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


@pytest.mark.slow
def test_a_git_remote_that_never_answers_times_out_and_sigterm_is_prompt(
    start_daemon, tmp_path, silent
):
    daemon = start_with_hung_remote(start_daemon, tmp_path, silent, timeout_seconds=2)
    metrics = daemon.wait_until(
        lambda: (
            (m := daemon.scrape())
            and sample(m, "healthd_source_up", source="repo") == 0
            and runs(m, "naive", "success") >= 1  # the other source and the target ran
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_namespace_that_stops_being_a_shadow_gets_no_more_writes(start_daemon, tmp_path):
    class FlippingService(MemoryService):
        """Says the namespace is no longer a shadow once flipped, but accepts writes anyway."""

        flipped = False

        def _hook(self, path, auth):
            if self.flipped and path.endswith("/namespaces/shadow"):
                return 200, {"namespace": "shadow", "shadow": False}
            return super()._hook(path, auth)

    lines = EXAMPLE.read_text().splitlines(keepends=True)
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text("".join(lines[:100]))
    with FlippingService() as service:
        daemon = start_with_http_memory(
            start_daemon, timeline, service, beside={"naive": {"kind": "naive", "shadow": True}}
        )
        daemon.wait_until(lambda: runs(daemon.scrape(), "team", "success") >= 1, what="a first run")
        with service._lock:
            service.flipped = True
            flipped_at = len(service.requests)
        timeline.write_text("".join(lines))  # 35 new events to write
        metrics = daemon.wait_until(
            lambda: (m := daemon.scrape()) and runs(m, "team", "failure") >= 2 and m,
            what="failed runs after the flip",
        )
        with service._lock:
            after = [(m, p) for m, p, _ in service.requests[flipped_at:] if m == "POST"]
        writes = [p for _, p in after if p.endswith(("/events", "/reset"))]
        assert writes == []
        assert sample(metrics, "healthd_events_replayed_total", target="naive") == 135
        failed = [l for l in daemon.log_lines() if l.get("event") == "run failed"]
        assert any("not a shadow" in l["error"] for l in failed)
        assert daemon.stop()[0] == 0


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads line")


@pytest.mark.slow
def test_idle_connections_are_bounded_and_dropped(start_daemon, tmp_path):
    from healthd.daemon.server import IDLE_TIMEOUT_SECONDS, WORKERS

    daemon = start_daemon(cron="0 0 1 1 *")
    daemon.wait_ready()
    before = _threads(daemon.proc.pid)
    idle = [socket.create_connection(("127.0.0.1", daemon.port), timeout=30) for _ in range(80)]
    try:
        time.sleep(1)
        assert _threads(daemon.proc.pid) <= before + WORKERS  # not a thread per connection
        idle[0].settimeout(IDLE_TIMEOUT_SECONDS + 10)
        started = time.monotonic()
        assert idle[0].recv(1) == b""  # the server hung up on the idle client
        assert time.monotonic() - started < IDLE_TIMEOUT_SECONDS + 5
        daemon.wait_until(
            lambda: daemon.get("/metrics").status_code == 200, what="metrics after the idlers"
        )
    finally:
        for conn in idle:
            conn.close()
    assert daemon.stop()[0] == 0


def _garble_page_holding(database: Path, needle: bytes) -> None:
    """Random bytes over the whole SQLite page that holds ``needle``, as a bad disk leaves it."""
    data = bytearray(database.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    start = data.index(needle) // page_size * page_size
    data[start : start + page_size] = random.Random(7).randbytes(page_size)
    database.write_bytes(bytes(data))


@pytest.mark.slow
def test_a_corrupt_state_file_is_named_and_the_healthy_shadow_is_left_alone(start_daemon, tmp_path):
    port = free_port()
    config = toml_config(tmp_path, port=port, cron="0 0 1 1 *")  # only the run on start
    first = start_daemon(config, port=port, log_name="first.log")
    first.wait_runs("reference")
    first.wait_runs("naive")
    assert first.stop()[0] == 0
    state = tmp_path / "state" / "state.sqlite"
    _garble_page_holding(state, b'"id": "ex-070"')  # a page of the stored events
    # a changed forgetting window replays everything from the state file's events
    config.write_text(
        config.read_text().replace("\n\n[schedule]", "\nforgetting_window = 4\n\n[schedule]", 1)
    )

    second = start_daemon(config, port=port, log_name="second.log")
    metrics = second.wait_until(
        lambda: (
            (m := second.scrape())
            and runs(m, "reference", "failure") >= 1
            and runs(m, "naive", "failure") >= 1
            and m
        ),
        what="the failed runs",
    )
    failed = {l["target"]: l["error"] for l in second.log_lines() if l.get("event") == "run failed"}
    for target in ("reference", "naive"):
        assert str(state) in failed[target] and "corrupt" in failed[target], failed[target]
    assert not any(
        l.get("event") == "shadow corrupt: moved aside, rebuilt" for l in second.log_lines()
    )
    assert sorted(p.name for p in (tmp_path / "state" / "shadows").iterdir()) == [
        "reference.sqlite",
        "reference.sqlite.lock",
    ]
    assert not sample(metrics, "healthd_shadow_rebuilds_total", target="reference")
    assert second.stop()[0] == 0


@pytest.mark.parametrize("table", ["targets", "probe_keys", "sources"])
def test_a_state_file_with_a_corrupt_table_is_refused_at_start_in_one_line(
    start_daemon, tmp_path, table
):
    port = free_port()
    config = toml_config(tmp_path, port=port, cron="0 0 1 1 *")  # only the run on start
    first = start_daemon(config, port=port)
    first.wait_runs("reference")
    assert first.stop()[0] == 0
    state = tmp_path / "state" / "state.sqlite"
    pages = subprocess.run(  # where the table lies, as SQLite's own shell reads it
        ["sqlite3", str(state), f"SELECT pageno FROM dbstat WHERE name = '{table}'"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    data = bytearray(state.read_bytes())
    start = (int(pages[-1]) - 1) * 4096
    data[start : start + 4096] = random.Random(7).randbytes(4096)
    state.write_bytes(bytes(data))
    error = one_line_error(run_cli("run", "--config", str(config)))
    assert error.startswith(f"healthd: error: {state}: the state file is corrupt"), error


@pytest.mark.parametrize(
    "edit",
    [
        # SQLite keeps no checksum of a row's content: a byte gone bad inside a stored
        # value is read back as it is, and only the value itself can tell
        "UPDATE targets SET results = substr(results, 1, 40) || char(1) || substr(results, 42)",
        "UPDATE targets SET snapshot = '{\"llm_budget\": ' WHERE name = 'reference'",
        "INSERT OR REPLACE INTO people VALUES ('example', '[{\"handle\": 1}]')",
        # bytes that are no UTF-8: the error quoted the whole value
        "UPDATE targets SET results = CAST(X'FF' AS TEXT) || results",
    ],
    ids=["results", "snapshot", "people", "results-bytes"],
)
def test_a_state_file_with_an_unreadable_stored_value_is_refused_at_start_in_one_line(
    start_daemon, tmp_path, edit
):
    port = free_port()
    config = toml_config(tmp_path, port=port, cron="0 0 1 1 *")  # only the run on start
    first = start_daemon(config, port=port)
    first.wait_runs("reference")
    assert first.stop()[0] == 0
    state = tmp_path / "state" / "state.sqlite"
    subprocess.run(["sqlite3", str(state), edit], check=True)
    error = one_line_error(run_cli("run", "--config", str(config)))
    assert error.startswith(f"healthd: error: {state}: the state file is corrupt"), error


@pytest.mark.slow
def test_a_shadow_on_a_full_disk_fails_the_run_naming_the_shadow_file(start_daemon, tmp_path):
    # The shadow has its own disk here (a real tmpfs of 512 KiB); the state file's has
    # room. 'database or disk is full' alone sends the operator to the wrong disk.
    disk = tmp_path / "small"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        shadow = disk / "reference.sqlite"
        timeline = synthetic_timeline(tmp_path / "timeline.jsonl", 3000)
        daemon = start_daemon(
            sources={"syn": {"kind": "file", "path": str(timeline)}},
            targets={"reference": {"kind": "reference", "shadow": True, "path": str(shadow)}},
            cron="0 0 1 1 *",
            extra="checkpoint_events = 100",
        )
        daemon.wait_runs("reference", result="failure", timeout=60)
        assert daemon.stop()[0] == 0
    finally:
        subprocess.run(["umount", str(disk)], check=True)
    failed = [l["error"] for l in daemon.log_lines() if l.get("event") == "run failed"]
    assert failed and str(shadow) in failed[0] and "full" in failed[0], failed


def _garble_pages_of(database: Path, name: str) -> None:
    """Random bytes over the last page of table or index ``name`` (where it lies as SQLite's
    own shell reads it), in place, as a bad disk leaves it."""
    pages = subprocess.run(
        [
            "sqlite3",
            "-cmd",
            ".timeout 5000",  # (while a run writes it)
            str(database),
            f"SELECT pageno FROM dbstat WHERE name = '{name}'",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    db = sqlite3.connect(database, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")  # not while the daemon writes it
    try:
        with database.open("r+b") as handle:
            header = handle.read(28)
            page_size = int.from_bytes(header[16:18], "big")
            handle.seek((int(pages[-1]) - 1) * page_size)
            handle.write(random.Random(7).randbytes(page_size))
            # a new change counter, so that a process holding the file reads its pages again
            handle.seek(24)
            handle.write((int.from_bytes(header[24:28], "big") + 1).to_bytes(4, "big"))
    finally:
        db.execute("ROLLBACK")
        db.close()


@pytest.mark.slow
@pytest.mark.parametrize("index", ["sqlite_autoindex_events_1", "events_by_id"])
def test_a_stored_events_index_going_bad_while_running_fails_runs_naming_the_state_file(
    start_daemon, tmp_path, index
):
    # New events are looked up in the state file before they are taken: a page there gone
    # bad crashed every run with a traceback ('run crashed', 'DatabaseError: database disk
    # image is malformed'), naming no file
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_bytes(EXAMPLE.read_bytes())
    port = free_port()
    config = toml_config(
        tmp_path,
        port=port,
        sources={"example": {"kind": "file", "path": str(timeline)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    daemon = start_daemon(config, port=port)
    daemon.wait_runs("reference")
    state = tmp_path / "state" / "state.sqlite"
    _garble_pages_of(state, index)
    last = EXAMPLE.read_text().splitlines()[-1]
    with timeline.open("a") as handle:  # a new event, looked up before it is taken
        handle.write(last.replace("ex-135", "ex-136").replace("2026-11-28", "2026-11-29") + "\n")
    daemon.wait_until(
        lambda: (m := daemon.scrape()) and runs(m, "reference", "failure") >= 1,
        what="a failed run",
    )
    assert daemon.stop()[0] == 0
    lines = daemon.log_lines()
    assert not [l for l in lines if l.get("event") == "run crashed"]
    failed = [l["error"] for l in lines if l.get("event") == "run failed"]
    assert failed and f"{state}: the state file is corrupt" in failed[0], failed


def _shadow_rows(shadow: Path) -> tuple[int, int]:
    db = sqlite3.connect(f"file:{shadow}?mode=ro", uri=True)
    try:
        counts = [
            db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("records", "checkpoints")
        ]
    finally:
        db.close()
    return counts[0], counts[1]


@pytest.mark.slow
def test_a_corrupt_state_page_met_on_resuming_leaves_the_healthy_shadow_as_it_was(
    start_daemon, tmp_path
):
    # After an interrupted run the shadow's checkpoint is checked against the stored event
    # it last applied. When that page of the state file was the bad one, the resume took it
    # for a shadow that could not be restored: it emptied the sound shadow for a fresh
    # replay, which then failed on the state file; a state file restored from a backup
    # found the shadow gone, and the whole history to replay again.
    port = free_port()
    config = toml_config(
        tmp_path,
        port=port,
        cron="0 0 1 1 *",  # only the run on start
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    first = start_daemon(config, port=port, log_name="first.log")
    first.wait_runs("reference")
    assert first.stop()[0] == 0
    shadow = tmp_path / "state" / "shadows" / "reference.sqlite"
    kept = _shadow_rows(shadow)
    state = tmp_path / "state" / "state.sqlite"
    # as a run interrupted after its shadow's last checkpoint leaves it
    subprocess.run(["sqlite3", str(state), "UPDATE targets SET dirty = 1"], check=True)
    _garble_page_holding(state, b'"id": "ex-135"')  # the page of the last event applied

    second = start_daemon(config, port=port, log_name="second.log")
    second.wait_runs("reference", result="failure")
    assert second.stop()[0] == 0
    lines = second.log_lines()
    failed = [l["error"] for l in lines if l.get("event") == "run failed"]
    assert failed and f"{state}: the state file is corrupt" in failed[0], failed
    assert not [l for l in lines if l.get("event") == "fresh replay"]
    assert _shadow_rows(shadow) == kept


def _letter_timeline(path: Path, letter: str, first: int, last: int) -> None:
    """Events ``letter-first`` .. ``letter-last``, one new fact each, appended to ``path``."""
    with path.open("a") as handle:
        for n in range(first, last + 1):
            at = f"2025-01-{1 + n // 1440:02d}T{n // 60 % 24:02d}:{n % 60:02d}:00Z"
            fact = {"subject": f"{letter}-svc-{n}", "predicate": "owner", "value": "x"}
            event = {"id": f"{letter}-{n:04d}", "type": "added", "timestamp": at}
            event.update(source=letter, fact={**fact, "domain": "ownership"})
            handle.write(json.dumps({**event, "depends_on": [], "metadata": {}}) + "\n")


@pytest.mark.slow
def test_a_state_file_unreadable_for_a_while_loses_no_event_of_another_source(
    start_daemon, tmp_path
):
    # A run that could not look up source b's new events in the state file failed; source
    # a, pulled before it in that run, had its cursor moved past events that were never
    # stored, so once the state file read again they were never taken.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _letter_timeline(a, "a", 1, 600)
    _letter_timeline(b, "b", 1, 600)
    port = free_port()
    config = toml_config(
        tmp_path,
        port=port,
        sources={"a": {"kind": "file", "path": str(a)}, "b": {"kind": "file", "path": str(b)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    daemon = start_daemon(config, port=port)
    daemon.wait_runs("reference")
    state = tmp_path / "state" / "state.sqlite"
    # the last page of the (source, id) index holds b's newest ids, where b's new ones go
    page = subprocess.run(
        [
            "sqlite3",
            "-cmd",
            ".timeout 5000",  # (while a run writes it)
            str(state),
            "SELECT max(pageno) FROM dbstat "
            "WHERE name = 'sqlite_autoindex_events_1' AND pagetype = 'leaf'",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    sound = _swap_page(state, int(page), random.Random(7).randbytes(4096))
    _letter_timeline(b, "b", 601, 605)
    _letter_timeline(a, "a", 601, 605)
    failures = runs(daemon.scrape(), "reference", "failure")
    daemon.wait_until(
        lambda: runs(daemon.scrape(), "reference", "failure") >= failures + 2,
        what="runs failing on the state file",
    )
    _swap_page(state, int(page), sound)
    metrics = daemon.wait_until(
        lambda: (
            (m := daemon.scrape())
            and sample(m, "healthd_source_events_total", source="b") == 605
            and m
        ),
        what="b's new events taken",
    )
    assert daemon.stop()[0] == 0
    assert any(l.get("event") == "run failed" for l in daemon.log_lines())
    db = sqlite3.connect(f"file:{state}?mode=ro", uri=True)
    stored = dict(db.execute("SELECT source, count(*) FROM events GROUP BY source").fetchall())
    db.close()
    assert stored == {"a": 605, "b": 605}
    assert sample(metrics, "healthd_source_events_total", source="a") == 605


def _swap_page(database: Path, page: int, data: bytes) -> bytes:
    """Put ``data`` in place of page ``page`` (from 1) under SQLite's own lock, as a disk
    read going bad and coming back leaves it; the page that was there."""
    db = sqlite3.connect(database, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    try:
        with database.open("r+b") as handle:
            header = handle.read(28)
            size = int.from_bytes(header[16:18], "big")
            handle.seek((page - 1) * size)
            was = handle.read(size)
            handle.seek((page - 1) * size)
            handle.write(data[:size])
            # a new change counter, so that the daemon reads its pages again
            handle.seek(24)
            handle.write((int.from_bytes(header[24:28], "big") + 1).to_bytes(4, "big"))
    finally:
        db.execute("ROLLBACK")
        db.close()
    return was


@pytest.mark.slow
def test_a_run_history_gone_bad_on_disk_starts_anew_as_an_unreadable_one_does(
    start_daemon, tmp_path
):
    # The recent runs the page at / lists are one long value in the state file, spilling
    # onto a page of its own, which SQLite reads back as it is: bytes gone bad there that
    # are no UTF-8 crashed every start with a Python traceback ('Could not decode to UTF-8
    # column 'value' with text ...', the whole value quoted), where bad JSON starts anew.
    port = free_port()
    config = toml_config(tmp_path, port=port)
    first = start_daemon(config, port=port, log_name="first.log")
    state = tmp_path / "state" / "state.sqlite"

    def overflow() -> list[str]:
        return subprocess.run(
            [
                "sqlite3",
                "-readonly",
                str(state),
                "SELECT pageno FROM dbstat WHERE name = 'meta' AND pagetype = 'overflow'",
            ],
            capture_output=True,
            text=True,
            check=False,  # (busy while a run writes it)
        ).stdout.split()

    first.wait_until(overflow, timeout=60, what="a run history longer than a page")
    assert first.stop()[0] == 0
    pages = overflow()
    data = bytearray(state.read_bytes())
    start = (int(pages[-1]) - 1) * 4096 + 4  # (after the link to the next page)
    data[start : start + 64] = b"\xff" * 64
    state.write_bytes(bytes(data))

    second = start_daemon(config, port=port, log_name="second.log")
    second.wait_runs("reference")
    assert second.stop()[0] == 0
    logged = [l.get("event") for l in second.log_lines()]
    assert "the state file's run history is unreadable; it starts anew" in logged
