"""Hostile or clumsy input ends in one line on stderr and exit 2, never a traceback; in the
daemon a bad line is refused, named and skipped, and the good lines around it are measured."""

from __future__ import annotations

import json
import os
import pwd
import socket
import subprocess
import time
import tracemalloc
from pathlib import Path

import pytest
from daemon_helpers import (
    EXAMPLE,
    GOOD,
    PYTHON,
    Daemon,
    assert_metrics_equal_evaluate,
    clean_env,
    free_port,
    one_line_error,
    poison_event,
    run_cli,
    runs,
    sample,
    start_with_http_memory,
    start_with_hung_remote,
    toml_config,
)
from git_faults import cutting_git
from memory_service import MemoryService

from healthd.errors import ReportShapeError
from healthd.report import load_report


def skipped_reasons(daemon) -> list[str]:
    """What the daemon logged as `source skipped input`, in order."""
    return [
        entry["reason"]
        for entry in daemon.log_lines()
        if entry.get("event") == "source skipped input"
    ]


OUT_OF_RANGE = ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00")


@pytest.mark.parametrize("stamp", OUT_OF_RANGE)
def test_a_timestamp_out_of_range_in_utc_is_refused_naming_file_line_and_field(tmp_path, stamp):
    timeline = tmp_path / "t.jsonl"
    timeline.write_text("".join(GOOD[:3]) + poison_event(stamp) + "\n")
    line = one_line_error(run_cli("evaluate", "--timeline", str(timeline)))
    assert f"{timeline}, line 4, field 'timestamp'" in line and "out of range" in line


def test_a_number_past_the_digit_limit_is_one_line_naming_the_line(tmp_path):
    timeline = tmp_path / "t.jsonl"
    timeline.write_text("".join(GOOD[:2]) + '{"id": ' + "9" * 5000 + "}\n")
    line = one_line_error(run_cli("evaluate", "--timeline", str(timeline)))
    assert f"{timeline}, line 3: invalid JSON: a number too long" in line


def test_a_probe_file_nested_too_deep_or_not_utf8_is_one_line(tmp_path):
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 10_000 + "]" * 10_000 + "\n")
    line = one_line_error(run_cli("evaluate", "--probes", str(deep)))
    assert f"{deep}, line 1: invalid JSON: nested too deeply" in line
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"question": "\xff"}\n')
    line = one_line_error(run_cli("evaluate", "--probes", str(binary)))
    assert f"{binary}, line 1: not UTF-8 text" in line


def test_a_report_nested_deep_is_refused_in_a_few_megabytes(tmp_path):
    """ijson's C backend made every parse event of a 64 KB chunk before the first was
    seen, each with a prefix as long as its depth: 20,000 brackets held a gigabyte, and the
    fuzzer's 60,000 took 11 s of CPU and 9 GB before the depth check refused the file."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 20_000 + "]" * 20_000)
    tracemalloc.start()
    try:
        with pytest.raises(ReportShapeError, match="not JSON: nested too deeply"):
            load_report(str(deep))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MiB"


def test_report_from_deep_or_huge_number_json_is_one_line(tmp_path):
    html = tmp_path / "out.html"
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 10_000 + "]" * 10_000)
    line = one_line_error(run_cli("report", "--from", str(deep), "--html", str(html)))
    assert f"{deep}: not JSON: nested too deeply" in line
    number = tmp_path / "number.json"
    number.write_text('{"probe_set": ' + "7" * 5000 + "}")
    line = one_line_error(run_cli("report", "--from", str(number), "--html", str(html)))
    assert f"{number}: not JSON: a number too long" in line
    assert not html.exists()


@pytest.mark.parametrize("command", ["check-config", "run"])
def test_a_config_nested_too_deep_is_one_line(tmp_path, command):
    config = tmp_path / "deep.toml"
    config.write_text("a = " + "[" * 10_000 + "]" * 10_000 + "\n")
    line = one_line_error(run_cli(command, "--config", str(config)))
    assert line == f"healthd: error: {config}: not valid TOML: nested too deeply"


def test_a_port_in_use_or_an_address_that_cannot_be_bound_is_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = toml_config(tmp_path, port=port)
        line = one_line_error(run_cli("run", "--config", str(config)))
        assert line == f"healthd: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    # TEST-NET-3 (RFC 5737): never an address of this machine
    config.write_text(config.read_text().replace('host = "127.0.0.1"', 'host = "203.0.113.7"'))
    line = one_line_error(run_cli("run", "--config", str(config)))
    assert line.startswith("healthd: error: cannot listen on 203.0.113.7:")
    assert "Cannot assign requested address" in line


@pytest.mark.slow
@pytest.mark.parametrize("stamp", OUT_OF_RANGE[:1])
def test_the_daemon_skips_a_line_out_of_range_and_measures_every_good_line(
    start_daemon, tmp_path, stamp
):
    good = tmp_path / "good.jsonl"
    good.write_text("".join(GOOD))
    timeline = tmp_path / "t.jsonl"
    timeline.write_text("".join(GOOD[:60]) + poison_event(stamp) + "\n" + "".join(GOOD[60:]))
    daemon = start_daemon(
        sources={"tl": {"kind": "file", "path": str(timeline)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    daemon.wait_ready()
    metrics = daemon.wait_runs("reference", 2)
    assert sample(metrics, "healthd_source_up", source="tl") == 1
    assert sample(metrics, "healthd_events_replayed_total", target="reference") == len(GOOD)
    refused = skipped_reasons(daemon)
    assert len(refused) == 1, refused  # once, when read: the cursor is past it
    assert f"{timeline}, line 61, field 'timestamp'" in refused[0]
    assert not [e for e in daemon.log_lines() if e.get("event") == "source failed"]
    assert_metrics_equal_evaluate(metrics, good)
    assert daemon.stop()[0] == 0


def test_a_non_utf8_line_or_one_over_4_mib_is_skipped_and_never_wedges_the_source(
    start_daemon, tmp_path
):
    good = tmp_path / "good.jsonl"
    good.write_text("".join(GOOD))
    timeline = tmp_path / "t.jsonl"
    text = [line.encode() for line in GOOD]
    timeline.write_bytes(
        b"".join(text[:60])
        + b'{"id": "caf\xe9"}\n'  # line 61: Latin-1, not UTF-8
        + b"".join(text[60:80])
        + b'{"id": "'
        + b"x" * (5 << 20)
        + b'"}\n'  # line 82: past a 4 MiB slice
        + b"".join(text[80:100])
    )
    daemon = start_daemon(
        sources={"tl": {"kind": "file", "path": str(timeline)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    daemon.wait_ready()
    metrics = daemon.wait_until(
        lambda: (
            (m := daemon.scrape())
            and sample(m, "healthd_events_replayed_total", target="reference") == 100
            and m
        ),
        timeout=30,
        what="the 100 good lines replayed",
    )
    assert sample(metrics, "healthd_source_up", source="tl") == 1
    with timeline.open("ab") as handle:  # lines appended after the bad ones are taken
        handle.write(b"".join(text[100:]))
    metrics = daemon.wait_until(
        lambda: (
            (m := daemon.scrape())
            and sample(m, "healthd_events_replayed_total", target="reference") == len(GOOD)
            and m
        ),
        timeout=30,
        what="the appended lines replayed",
    )
    daemon.wait_runs("reference", runs(metrics, "reference") + 2)  # later runs add nothing
    metrics = daemon.scrape()
    assert sample(metrics, "healthd_source_up", source="tl") == 1
    assert sample(metrics, "healthd_events_replayed_total", target="reference") == len(GOOD)
    assert sample(metrics, "healthd_source_skipped_inputs_total", source="tl") == 2
    refused = skipped_reasons(daemon)
    assert len(refused) == 2, refused  # each once, when read: the cursor is past it
    assert refused[0].startswith(f"line refused: {timeline}, line 61: not UTF-8 text")
    assert refused[1].startswith(f"line refused: {timeline}, line 82: longer than 4194304 bytes")
    assert not [e for e in daemon.log_lines() if e.get("event") == "source failed"]
    assert daemon.stop()[0] == 0
    assert_metrics_equal_evaluate(metrics, good)


def _config_without_sources(tmp_path, extra: str = "") -> str:
    config = tmp_path / "nosources.toml"
    config.write_text(
        f'state_path = "{tmp_path}/state/state.sqlite"\n{extra}\n[server]\nport = 0\n'
    )
    return str(config)


@pytest.mark.parametrize("command", [["check-config"], ["run"], ["evaluate"], ["timeline"]])
def test_a_config_without_sources_is_refused_not_the_example_measured(tmp_path, command):
    config = _config_without_sources(tmp_path)
    line = one_line_error(run_cli(*command, "--config", config))
    assert line.startswith(f"healthd: error: {config}: sources: none configured;")
    assert "example = true" in line
    assert not (tmp_path / "state").exists()


def test_the_example_is_measured_when_asked_for(tmp_path):
    config = _config_without_sources(tmp_path, "example = true")
    done = run_cli("check-config", "--config", config)
    assert done.returncode == 0 and "1 source(s) (example)" in done.stdout, done.stderr
    plain = run_cli("evaluate", "--format", "json")  # no argument: the example, as documented
    assert plain.returncode == 0, plain.stderr
    asked = run_cli("evaluate", "--config", config, "--format", "json")
    assert asked.returncode == 0, asked.stderr
    assert [t["final"]["metrics"] for t in json.loads(asked.stdout)["targets"]] == [
        t["final"]["metrics"] for t in json.loads(plain.stdout)["targets"]
    ]


def _other_database(path):
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    db.commit()
    db.close()


def _truncated_state(path):
    from healthd.daemon.state import StateStore
    from healthd.timeline import iter_timeline

    state = StateStore(str(path))
    state.record_events(
        [("example", e) for e in iter_timeline(EXAMPLE.read_text().splitlines())], []
    )
    state.close()
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # a copy cut short, a disk that lost its tail


@pytest.mark.parametrize(
    ("make", "name", "reason"),
    [
        (lambda p: p.mkdir(), "a-directory", "is a directory"),
        (lambda p: None, "state-dir/", "names a directory (it ends with '/')"),
        (_other_database, "app.db", "not a healthd state file (it holds other tables: users)"),
        (lambda p: p.write_text("not sqlite\n"), "notes.txt", "not an SQLite database"),
        (_truncated_state, "cut.sqlite", "corrupt (database disk image is malformed)"),
    ],
)
def test_check_config_refuses_a_state_path_that_run_would_refuse(tmp_path, make, name, reason):
    path = tmp_path / name
    make(path)
    before = sorted(p.name for p in tmp_path.iterdir())
    state_path = f"{tmp_path}/{name}"
    config = toml_config(tmp_path)
    config.write_text(
        config.read_text().replace(
            f'state_path = "{tmp_path}/state/state.sqlite"', f'state_path = "{state_path}"'
        )
    )
    before = sorted(p.name for p in tmp_path.iterdir())
    checked = one_line_error(run_cli("check-config", "--config", str(config)))
    assert checked.startswith(f"healthd: error: {config}: state_path: {state_path}: {reason}")
    ran = one_line_error(run_cli("run", "--config", str(config)))
    assert ran.startswith(f"healthd: error: {state_path}: cannot open state file: {reason}")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing made, nothing moved


@pytest.fixture
def read_only_mount(tmp_path):
    """A directory on a real tmpfs, remounted read-only once the test has filled it (root
    and mount(8) needed)."""
    mount = tmp_path / "ro"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)])
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")

    def freeze() -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)

    yield mount, freeze
    subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.parametrize(
    ("existing", "reason"),
    [
        (True, "on a read-only file system"),
        (False, "cannot create it: {mount} is on a read-only file system"),
    ],
    ids=["state-file", "new-state-file"],
)
def test_a_state_path_on_a_read_only_file_system_is_said_so_not_permission_denied(
    tmp_path, read_only_mount, existing, reason
):
    mount, freeze = read_only_mount
    state_path = mount / "state.sqlite"
    if existing:
        state_path.write_bytes(b"")
    freeze()
    config = toml_config(tmp_path)
    config.write_text(config.read_text().replace(f"{tmp_path}/state/state.sqlite", str(state_path)))
    reason = reason.format(mount=mount)
    checked = one_line_error(run_cli("check-config", "--config", str(config)))
    assert checked == f"healthd: error: {config}: state_path: {state_path}: {reason}"
    ran = one_line_error(run_cli("run", "--config", str(config)))
    assert ran == f"healthd: error: {state_path}: cannot open state file: {reason}"


def test_a_state_file_in_a_directory_it_cannot_write_in_is_refused_naming_the_directory(
    tmp_path,
):
    # The file is the daemon user's, its directory is not: SQLite cannot make the journal
    # beside it, and every run failed with 'attempt to write a readonly database'.
    import shutil
    import tempfile

    from healthd.daemon.state import StateStore

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run healthd as another user")
    folder = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        folder.chmod(0o755)  # nobody may enter it, not write in it
        state = folder / "state.sqlite"
        StateStore(str(state)).close()
        os.chown(state, pwd.getpwnam("nobody").pw_uid, -1)
        config = toml_config(tmp_path, targets={"naive": {"kind": "naive", "shadow": True}})
        text = config.read_text().replace(f"{tmp_path}/state/state.sqlite", str(state))
        (folder / "healthd.toml").write_text(text)
        as_nobody = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
        reason = f"cannot write beside it: permission denied in {folder}"
        for command in ("check-config", "run"):
            done = subprocess.run(
                [
                    *as_nobody,
                    PYTHON,
                    "-m",
                    "healthd",
                    command,
                    "--config",
                    f"{folder}/healthd.toml",
                ],
                cwd="/",
                env=clean_env(),
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert reason in one_line_error(done), done.stderr
    finally:
        shutil.rmtree(folder)


def test_a_relative_state_path_ending_in_a_slash_is_refused_too(tmp_path):
    config = toml_config(tmp_path)
    config.write_text(
        config.read_text().replace(
            f'state_path = "{tmp_path}/state/state.sqlite"', 'state_path = "newdir/"'
        )
    )
    checked = one_line_error(run_cli("check-config", "--config", str(config)))
    assert "names a directory (it ends with '/')" in checked
    assert not (config.parent / "newdir").exists()


def test_a_state_directory_that_cannot_be_made_is_said_as_such_not_as_the_listener(tmp_path):
    (tmp_path / "file").write_text("")
    config = toml_config(tmp_path, port=free_port())
    config.write_text(
        config.read_text().replace(
            f'state_path = "{tmp_path}/state/state.sqlite"',
            f'state_path = "{tmp_path}/file/sub/state.sqlite"',
        )
    )
    ran = one_line_error(run_cli("run", "--config", str(config)))
    assert "cannot listen" not in ran and "state" in ran and "not a directory" in ran


@pytest.mark.slow
def test_an_http_memory_answering_too_much_fails_the_run_without_reading_it(start_daemon, tmp_path):
    class FloodingService(MemoryService):
        """Answers every query with a 4 MiB body while ``flooding``."""

        flooding = True

        def _hook(self, path, auth):
            if self.flooding and path.endswith("/query"):
                return 200, {"facts": [], "padding": "x" * (4 << 20)}
            return super()._hook(path, auth)

    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text("".join(GOOD))
    with FloodingService() as service:
        daemon = start_with_http_memory(start_daemon, timeline, service, max_response_bytes=1 << 20)
        daemon.wait_until(lambda: runs(daemon.scrape(), "team", "failure") >= 1, what="a failure")
        failed = [e["error"] for e in daemon.log_lines() if e.get("event") == "run failed"]
        assert failed and "returned a body over max_response_bytes=1048576" in failed[0], failed
        service.flooding = False  # the fault is cleared: the next run measures
        metrics = daemon.wait_runs("team", timeout=60)
        assert sample(metrics, "healthd_events_replayed_total", target="team") == len(GOOD)
        assert daemon.stop()[0] == 0
    # the service is the reference memory over HTTP: the same numbers as evaluating it
    assert_metrics_equal_evaluate(metrics, timeline, named="team")


@pytest.mark.slow
def test_a_named_pipe_as_a_timeline_is_refused_and_never_blocks_a_run(start_daemon, tmp_path):
    import os

    timeline = tmp_path / "timeline.jsonl"
    os.mkfifo(timeline)
    daemon = start_daemon(
        sources={"tl": {"kind": "file", "path": str(timeline)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    metrics = daemon.wait_until(
        # every source failed: each run ends, as a failure, instead of blocking on the pipe
        lambda: (m := daemon.scrape()) and runs(m, "reference", "failure") >= 2 and m,
        what="two runs past the pipe",
    )
    assert sample(metrics, "healthd_source_up", source="tl") == 0
    errors = [e["error"] for e in daemon.log_lines() if e.get("event") == "source failed"]
    assert errors and errors[0] == f"cannot read {timeline}: is a named pipe, not a regular file"
    timeline.unlink()  # the fault is cleared: a regular file takes the pipe's place
    timeline.write_text("".join(GOOD))
    metrics = daemon.wait_until(
        lambda: (
            (m := daemon.scrape())
            and sample(m, "healthd_events_replayed_total", target="reference") == len(GOOD)
            and sample(m, "healthd_source_up", source="tl") == 1
            and m
        ),
        timeout=30,
        what="the timeline replayed",
    )
    code, seconds = daemon.stop()
    assert code == 0 and seconds < 5
    assert_metrics_equal_evaluate(metrics, timeline)


def _corrupt_pages(path) -> None:
    """Garbage over every page but the first (the header stays: SQLite opens the file and
    finds it malformed when it reads a table)."""
    import random

    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    rng = random.Random(7)
    for i in range(page, len(data)):
        data[i] = rng.randrange(256)
    path.write_bytes(bytes(data))


@pytest.mark.slow
@pytest.mark.parametrize("appended", [True, False], ids=["events appended", "nothing new"])
def test_a_corrupt_shadow_is_moved_aside_and_rebuilt_from_the_state(
    start_daemon, tmp_path, appended
):
    """Found by the first run after the restart, whether or not it has events to replay."""
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text("".join(GOOD[:100]))
    targets = {"reference": {"kind": "reference", "shadow": True}}
    sources = {"tl": {"kind": "file", "path": str(timeline)}}
    first = start_daemon(sources=sources, targets=targets, log_name="first.log")
    first.wait_until(lambda: runs(first.scrape(), "reference", "success") >= 1, what="a run")
    assert first.stop()[0] == 0
    shadow = tmp_path / "state" / "shadows" / "reference.sqlite"
    _corrupt_pages(shadow)
    if appended:
        timeline.write_text("".join(GOOD))
    second = start_daemon(sources=sources, targets=targets, log_name="second.log")
    metrics = second.wait_until(
        lambda: (
            (m := second.scrape())
            and sample(m, "healthd_shadow_rebuilds_total", target="reference") == 1
            and sample(m, "healthd_events_replayed_total", target="reference")
            == (len(GOOD) if appended else 100)
            and runs(m, "reference", "success") >= 2
            and m
        ),
        timeout=30,
        what="the shadow rebuilt and its events replayed",
    )
    assert runs(metrics, "reference", "failure") == 0
    assert sample(metrics, "healthd_shadow_rebuilds_total", target="reference") == 1
    aside = [
        e for e in second.log_lines() if e.get("event") == "shadow corrupt: moved aside, rebuilt"
    ]
    assert len(aside) == 1 and aside[0]["shadow"] == str(shadow)
    assert (tmp_path / "state" / "shadows" / aside[0]["moved_to"]).exists()
    assert second.stop()[0] == 0
    assert_metrics_equal_evaluate(metrics, timeline)


@pytest.mark.slow
def test_a_namespace_that_stops_being_a_shadow_mid_run_gets_few_more_writes(start_daemon, tmp_path):

    class FlipsMidRun(MemoryService):
        """Says the namespace is no longer a shadow after its 20th write, but takes writes
        anyway; each write takes 20 ms, so a run of 135 lasts about 3 s."""

        flip_after: int | None = 20
        writes = 0
        writes_after_flip = 0

        def _hook(self, path, auth):
            if path.endswith("/events"):
                time.sleep(0.02)
                self.writes += 1
                if self.flip_after is not None and self.writes > self.flip_after:
                    self.writes_after_flip += 1
            flipped = self.flip_after is not None and self.writes >= self.flip_after
            if flipped and path.endswith("/namespaces/shadow"):
                return 200, {"namespace": "shadow", "shadow": False}
            return super()._hook(path, auth)

    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text("".join(GOOD))
    with FlipsMidRun() as service:
        daemon = start_with_http_memory(start_daemon, timeline, service, shadow_recheck_seconds=0.5)
        daemon.wait_until(
            lambda: runs(daemon.scrape(), "team", "failure") >= 1, timeout=30, what="a failure"
        )
        # at most one recheck interval of writes (0.5 s / 20 ms) after the flip
        assert service.writes_after_flip <= 30, service.writes_after_flip
        assert service.writes < len(GOOD)
        failed = [e["error"] for e in daemon.log_lines() if e.get("event") == "run failed"]
        assert "is not a shadow" in failed[0]
        service.flip_after = None  # the fault is cleared: a shadow again
        metrics = daemon.wait_runs("team", timeout=60)
        assert daemon.stop()[0] == 0
    assert_metrics_equal_evaluate(metrics, timeline, named="team")


@pytest.mark.slow
def test_a_hung_git_remote_is_visible_while_it_waits_and_ends_after_stall_seconds(
    start_daemon, tmp_path, silent
):
    daemon = start_with_hung_remote(start_daemon, tmp_path, silent, stall_seconds=3)
    waiting = daemon.wait_until(
        lambda: (
            (m := daemon.scrape())
            and (sample(m, "healthd_source_pull_seconds", source="repo") or 0) > 1
            and m
        ),
        what="the hung pull shown while it waits",
    )
    assert sample(waiting, "healthd_source_up", source="repo") == 0  # not missing
    assert sample(waiting, "healthd_source_pull_seconds", source="example") == 0
    metrics = daemon.wait_runs("naive", timeout=20)
    failed = [e for e in daemon.log_lines() if e.get("event") == "source failed"]
    assert failed and failed[0]["source"] == "repo"
    assert "Operation too slow" in failed[0]["error"], failed[0]
    assert sample(metrics, "healthd_source_up", source="repo") == 0
    assert daemon.stop()[0] == 0
    assert_metrics_equal_evaluate(metrics, EXAMPLE, target="naive")


def _surrogate_line(value: str, event_id: str) -> str:
    """A timeline line whose fact value is ``value`` written as JSON escapes."""
    escaped = "".join(f"\\u{ord(c):04x}" for c in value)
    return (
        f'{{"id": "{event_id}", "type": "added", "timestamp": "2024-05-01T00:00:00Z", '
        f'"source": "file", "fact": {{"subject": "billing", "predicate": "owner", '
        f'"value": "{escaped}", "domain": "ownership"}}}}\n'
    )


def test_a_lone_surrogate_escape_is_refused_naming_line_and_field_a_surrogate_pair_is_text(
    tmp_path,
):
    timeline = tmp_path / "t.jsonl"
    timeline.write_text("".join(GOOD[:3]) + _surrogate_line("caf\udce9", "lone") + "\n")
    line = one_line_error(run_cli("evaluate", "--timeline", str(timeline)))
    assert f"{timeline}, line 4, field 'fact.value': holds a lone surrogate" in line
    assert "'\\udce9'" in line  # named as an escape: the message itself is text
    note = tmp_path / "note.jsonl"  # metadata is text too: the daemon's state keeps it
    bad_note = poison_event("2024-05-01T00:00:00Z")[:-1] + ', "metadata": {"note": "\\udcff"}}\n'
    note.write_text("".join(GOOD[:3]) + bad_note)
    line = one_line_error(run_cli("evaluate", "--timeline", str(note)))
    assert f"{note}, line 4, field 'metadata.note': holds a lone surrogate" in line
    rocket = tmp_path / "rocket.jsonl"  # U+1F680 as the pair \ud83d\ude80 is one character
    rocket.write_text("".join(GOOD[:3]) + _surrogate_line("\U0001f680", "pair"))
    result = run_cli("evaluate", "--timeline", str(rocket), "--format", "json")
    assert result.returncode == 0, result.stderr[-2000:]


def _git(repo, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_DATE": "2024-03-01T00:00:00+0000",
            "GIT_COMMITTER_DATE": "2024-03-01T00:00:00+0000",
        },
    )


def test_names_git_gives_in_bytes_that_are_not_utf8_are_kept_as_text_and_said_once(
    start_daemon, tmp_path
):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    latin1 = os.fsdecode(b"caf\xe9")  # a Latin-1 name: git gives it as bytes
    for module in (repo / "api", repo / latin1):
        module.mkdir()
        (module / "go.mod").write_text(
            "module example.com/m\n\ngo 1.22\n\nrequire github.com/x/y v1.0.0\n"
        )
        (module / "main.go").write_text("package main\n")
    adr = repo / "docs" / "adr"
    adr.mkdir(parents=True)
    for number, name in ((1, "record-decisions"), (2, latin1)):
        (adr / f"000{number}-{name}.md").write_text(
            f"# {number}. Decision {number}\n\nDate: 2024-03-01\n\n## Status\n\nAccepted\n"
        )
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "two")
    sources = {  # the wall clock and a one-second sweep: every run observes the facts again
        "repo": {"kind": "git", "path": str(repo), "revalidate_interval": "PT1S"},
        "decisions": {"kind": "adr", "path": str(repo), "revalidate_interval": "PT1S"},
    }
    port = free_port()
    config = toml_config(
        tmp_path,
        port=port,
        sources=sources,
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    printed = run_cli("timeline", "--config", str(config))
    assert printed.returncode == 0, printed.stderr
    events = [json.loads(line) for line in printed.stdout.splitlines()]
    subjects = {event["fact"]["subject"] for event in events}
    assert {"api", "caf\\xe9", "adr:1", "adr:2"} <= subjects, subjects  # the byte, written out
    timeline = tmp_path / "printed.jsonl"
    timeline.write_text(printed.stdout)  # what it prints is a timeline its reader takes
    assert run_cli("evaluate", "--timeline", str(timeline)).returncode == 0

    daemon = start_daemon(config, port=port)
    daemon.wait_ready()
    metrics = daemon.wait_runs("reference", 4, timeout=40)
    assert runs(metrics, "reference", "failure") == 0
    assert sample(metrics, "healthd_source_up", source="repo") == 1
    assert sample(metrics, "healthd_source_up", source="decisions") == 1
    # the first run's events, and sweeps after: the module and the record are measured
    assert sample(metrics, "healthd_events_replayed_total", target="reference") > len(
        [e for e in events if e["type"] != "revalidated"]
    )
    said = skipped_reasons(daemon)
    assert said == [  # each once, however many sweeps observed the facts again
        "fact.subject 'caf\\udce9' is not Unicode text (a name git gives in bytes that are "
        "not UTF-8, or an escape such as \\udcff): read with each lone surrogate written as "
        "its escape",
        "metadata.adr_file 'docs/adr/0002-caf\\udce9.md' is not Unicode text (a name git "
        "gives in bytes that are not UTF-8, or an escape such as \\udcff): read with each "
        "lone surrogate written as its escape",
    ], said
    assert not [e for e in daemon.log_lines() if e.get("event") in ("source failed", "run crashed")]
    assert daemon.stop()[0] == 0


@pytest.mark.parametrize("command", ["timeline", "evaluate"])
def test_a_one_shot_pull_from_a_remote_that_never_answers_ends_at_run_timeout(
    tmp_path, silent, command
):
    """`healthd timeline --config` and `evaluate --config` waited as long as their sources
    did (31 s here, git's own stall limit; an API paging slowly, hours): the daemon's runs
    end at ``run_timeout``, and so do they now."""
    config = toml_config(
        tmp_path,
        sources={
            "repo": {
                "kind": "git",
                "url": f"http://127.0.0.1:{silent.port}/repo.git",
                "cache_dir": str(tmp_path / "cache"),
            }
        },
        targets={"naive": {"kind": "naive", "shadow": True}},
        extra='run_timeout = "2s"',
    )
    line = one_line_error(run_cli(command, "--config", str(config)))
    assert line.startswith("healthd: error: source 'repo': git clone http://127.0.0.1:")
    assert line.endswith("stopped, the run took its run_timeout=2s")


def test_a_git_that_hangs_fails_its_run_at_run_timeout_and_the_next_run_reads_the_history(
    tmp_path,
):
    repo = tmp_path / "repo"
    (repo / "api").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "api" / "go.mod").write_text("module m\n\ngo 1.22\n\nrequire github.com/x/y v1.0.0\n")
    (repo / "api" / "main.go").write_text("package main\n")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "one")
    # the first cat-file answers nothing for a minute, as a lazy fetch from a dead remote
    bin_dir, cat_files = cutting_git(tmp_path, "cat-file", limit=0, times=1, then="stall")
    port = free_port()
    config = toml_config(
        tmp_path,
        port=port,
        sources={"repo": {"kind": "git", "path": str(repo)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
        extra='run_timeout = "3s"',
    )
    daemon = Daemon(config, port, tmp_path / "daemon.log", PATH=f"{bin_dir}:{os.environ['PATH']}")
    try:
        daemon.wait_ready()
        metrics = daemon.wait_until(
            lambda: (m := daemon.scrape()) and runs(m, "reference", "success") >= 1 and m,
            timeout=30,
            what="a run after the hung one",
        )
        failed = [e for e in daemon.log_lines() if e.get("event") == "source failed"]
        assert [e["error"] for e in failed] == [
            "git cat-file stopped, the run took its run_timeout=3s"
        ], failed
        assert sample(metrics, "healthd_source_up", source="repo") == 1
        assert len(cat_files.read_text().split()) >= 2  # the hung one, then one that answered
        assert sample(metrics, "healthd_events_replayed_total", target="reference") >= 3
        assert daemon.stop()[0] == 0
    finally:
        if daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait()


def test_a_record_too_long_for_a_timeline_line_is_cut_and_every_run_replays_it(
    start_daemon, tmp_path
):
    # its event was stored whole, then refused when the daemon read its own events back
    # (over the reader's 1 MiB line), at every run from then on
    repo = tmp_path / "repo"
    adr = repo / "docs" / "adr"
    adr.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    title = "Use " + "Postgres " * 120_000
    (adr / "0001-big.md").write_text(f"# 1. {title}\n\nDate: 2024-03-01\n\n## Status\n\nAccepted\n")
    (adr / "0002-go.md").write_text("# 2. Use Go\n\nDate: 2024-03-01\n\n## Status\n\nAccepted\n")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "two")
    port = free_port()
    config = toml_config(
        tmp_path,
        port=port,
        sources={"decisions": {"kind": "adr", "path": str(repo), "revalidate_interval": "PT1S"}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    daemon = start_daemon(config, port=port)
    daemon.wait_ready()
    metrics = daemon.wait_runs("reference", 3, timeout=60)
    assert runs(metrics, "reference", "failure") == 0
    assert sample(metrics, "healthd_source_up", source="decisions") == 1
    said = skipped_reasons(daemon)
    assert len(said) == 1 and said[0].startswith(f"a text of {len(title.strip()):,} characters")
    assert not [e for e in daemon.log_lines() if e.get("event") in ("source failed", "run crashed")]
    assert daemon.stop()[0] == 0
    # a target added later replays every stored event: the daemon reads them back
    config = toml_config(
        tmp_path,
        port=port,
        sources={"decisions": {"kind": "adr", "path": str(repo), "revalidate_interval": "PT1S"}},
        targets={
            "reference": {"kind": "reference", "shadow": True},
            "naive": {"kind": "naive", "shadow": True},
        },
    )
    again = start_daemon(config, port=port, log_name="again.log")
    again.wait_ready()
    metrics = again.wait_runs("naive", 2, timeout=60)
    assert runs(metrics, "naive", "failure") == 0
    assert not [e for e in again.log_lines() if e.get("event") in ("source failed", "run crashed")]
    assert again.stop()[0] == 0
