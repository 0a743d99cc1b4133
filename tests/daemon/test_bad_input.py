"""Bad input ends in one line naming the file and line, exit 2, never a traceback; the daemon
refuses a poisoned event, names it, and keeps measuring the rest."""

from __future__ import annotations

import json

import pytest
from daemon_helpers import GOOD, one_line_error, poison_event, run_cli, runs, sample, toml_config


def test_an_event_far_in_the_future_is_refused_naming_the_line(tmp_path):
    timeline = tmp_path / "t.jsonl"
    for stamp in ("9999-12-31T00:00:00Z", "2300-01-01T00:00:00Z"):
        timeline.write_text("".join(GOOD[:3]) + poison_event(stamp) + "\n")
        line = one_line_error(run_cli("evaluate", "--timeline", str(timeline)))
        assert f"{timeline}, line 4, field 'timestamp'" in line and "in the future" in line


def test_deeply_nested_json_and_non_utf8_bytes_are_one_line_each(tmp_path):
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    assert "line 1: invalid JSON: nested too deeply" in one_line_error(
        run_cli("evaluate", "--timeline", str(deep))
    )
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes("".join(GOOD[:2]).encode() + b'{"id": "caf\xe9"}\n')
    line = one_line_error(run_cli("evaluate", "--timeline", str(binary)))
    assert f"{binary}, line 3: not UTF-8 text" in line
    # a file source skips the line as the daemon does, says so, and reads the rest
    config = toml_config(tmp_path, sources={"f": {"kind": "file", "path": str(binary)}})
    for command in (["evaluate"], ["timeline"]):
        done = run_cli(*command, "--config", str(config))
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert done.stderr.splitlines() == [
            f"healthd: warning: source 'f': line refused: {binary}, line 3: not UTF-8 text "
            "(invalid continuation byte)",
            "healthd: warning: source 'f': 1 input(s) skipped",
        ]
    timeline = run_cli("timeline", "--config", str(config)).stdout
    assert [json.loads(l)["id"] for l in timeline.splitlines()] == [
        json.loads(l)["id"] for l in GOOD[:2]
    ]


def test_a_bad_byte_is_on_the_line_the_readers_count_whatever_ends_the_lines(tmp_path):
    # the timeline and probe readers end a line at \n, \r\n or a lone \r (text mode, as
    # editors count): the line a bad byte is on is counted the same way
    for ending in ("\r", "\r\n"):
        binary = tmp_path / "binary.jsonl"
        lines = [line.rstrip("\n") + ending for line in GOOD[:3]]
        binary.write_bytes("".join(lines).encode() + b'{"id": "caf\xe9"}' + ending.encode())
        line = one_line_error(run_cli("evaluate", "--timeline", str(binary)))
        assert f"{binary}, line 4: not UTF-8 text" in line, (ending, line)
        probes = tmp_path / "probes.jsonl"
        probes.write_bytes(f"{{}}{ending}{{}}{ending}".encode() + b"\xff" + ending.encode())
        line = one_line_error(run_cli("evaluate", "--probes", str(probes)))
        assert f"{probes}, line 3: not UTF-8 text" in line, (ending, line)


def test_a_huge_line_is_refused_and_errors_quote_values_short(tmp_path):
    huge = tmp_path / "huge.jsonl"
    huge.write_text('{"id": "' + "x" * 3_000_000 + '"}\n')
    line = one_line_error(run_cli("evaluate", "--timeline", str(huge)))
    assert "line 1: line is longer than the limit of 1048576 characters" in line
    bad_value = tmp_path / "value.jsonl"
    bad_value.write_text(
        json.dumps({"id": "a", "type": "z" * 900_000, "timestamp": "2026-01-01T00:00:00Z"}) + "\n"
    )
    line = one_line_error(run_cli("evaluate", "--timeline", str(bad_value)))
    assert "field 'type'" in line and "more characters" in line and len(line) < 1000


def test_the_daemon_refuses_a_poisoned_event_and_measures_the_rest(start_daemon, tmp_path):
    timeline = tmp_path / "t.jsonl"
    timeline.write_text("".join(GOOD[:100]) + poison_event("9999-12-31T00:00:00Z") + "\n")
    daemon = start_daemon(sources={"tl": {"kind": "file", "path": str(timeline)}})
    daemon.wait_ready()
    metrics = daemon.wait_runs("reference", 2)
    assert runs(metrics, "reference", "failure") == 0
    assert sample(metrics, "healthd_events_replayed_total", target="reference") == 100
    refused = [
        l
        for l in daemon.log_lines()
        if l.get("event") == "source skipped input" and "'poison' refused" in l.get("reason", "")
    ]
    assert len(refused) == 1  # once, when read; the cursor is past it
    assert daemon.stop()[0] == 0


def test_a_last_line_with_no_end_of_line_is_said_once_while_the_daemon_waits_for_it(
    start_daemon, tmp_path
):
    # An editor that writes no final newline: `evaluate --timeline` reads that line, the
    # daemon waits for its end (it may be being written); waiting must not be silent.
    timeline = tmp_path / "t.jsonl"
    timeline.write_text("".join(GOOD).rstrip("\n"))
    daemon = start_daemon(sources={"tl": {"kind": "file", "path": str(timeline)}})
    metrics = daemon.wait_runs("reference", 3)
    assert sample(metrics, "healthd_source_events_total", source="tl") == len(GOOD) - 1
    waiting = [l for l in daemon.log_lines() if l.get("event") == "source waiting for a line"]
    assert len(waiting) == 1 and waiting[0]["source"] == "tl", waiting
    assert waiting[0]["reason"] == f"{timeline} line {len(GOOD)} has no end of line yet"
    with timeline.open("a") as handle:
        handle.write("\n")
    daemon.wait_until(
        lambda: (
            sample(daemon.scrape(), "healthd_events_replayed_total", target="reference")
            == len(GOOD)
        ),
        what="the line taken once it ended",
    )
    assert daemon.stop()[0] == 0


def test_an_empty_timeline_is_said_on_stderr(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    line = one_line_error(run_cli("evaluate", "--timeline", str(empty)))
    assert "timeline is empty" in line and str(empty) in line


def test_a_closed_pipe_ends_quietly_with_exit_0(tmp_path):
    import subprocess

    from daemon_helpers import PYTHON, ROOT, clean_env

    for args in ([], ["--format", "json"]):
        proc = subprocess.Popen(
            [PYTHON, "-m", "healthd", "evaluate", *args],
            cwd=str(ROOT),
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()  # `| head -1`
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 0, err
        assert err == b""


def test_every_option_has_help_and_every_command_a_description():
    import argparse

    from healthd.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(commands.choices) == {
        "evaluate",
        "timeline",
        "run",
        "check-config",
        "report",
        "serve-memory",
        "healthcheck",
        "reader-check",
    }
    for name, sub in commands.choices.items():
        assert sub.description, name
        for action in sub._actions:
            assert action.help, (name, action.option_strings)
    target = next(
        a for a in commands.choices["evaluate"]._actions if "--target" in a.option_strings
    )
    for kind in ("reference", "naive", "http"):
        assert kind in target.help


def _fat_timeline(path, events: int, pad: int) -> list[str]:
    """``events`` additions of distinct keys, each line carrying ``pad`` bytes of metadata."""
    lines = [
        json.dumps(
            {
                "id": f"fat-{n}",
                "type": "added",
                "timestamp": f"2024-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
                "source": "file",
                "fact": {
                    "subject": f"svc-{n}",
                    "predicate": "language",
                    "value": "go",
                    "domain": "tech",
                },
                "metadata": {"note": "x" * pad},
            }
        )
        for n in range(events)
    ]
    path.write_text("\n".join(lines) + "\n")
    return lines


def test_a_file_source_over_4_mib_is_read_whole_by_evaluate_and_timeline(tmp_path):
    big = tmp_path / "big.jsonl"
    lines = _fat_timeline(big, 400, 16_000)
    assert big.stat().st_size > 6 << 20  # past one 4 MiB slice of the file source
    config = toml_config(
        tmp_path,
        sources={"f": {"kind": "file", "path": str(big)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    out = run_cli("timeline", "--config", str(config))
    assert out.returncode == 0 and out.stderr == "", out.stderr[-2000:]
    assert [json.loads(l)["id"] for l in out.stdout.splitlines()] == [
        json.loads(l)["id"] for l in lines
    ]
    configured = run_cli("evaluate", "--config", str(config), "--format", "json")
    assert configured.returncode == 0 and configured.stderr == "", configured.stderr[-2000:]
    report = json.loads(configured.stdout)
    assert report["probe_set"]["count"] == 400  # one key per event: every event was read
    direct = run_cli(
        "evaluate", "--timeline", str(big), "--target", "reference", "--format", "json"
    )
    assert report["targets"][0]["final"] == json.loads(direct.stdout)["targets"][0]["final"]


def test_a_named_pipe_of_bytes_that_are_not_utf8_is_one_line_at_once(tmp_path):
    import os
    import threading

    pipe = tmp_path / "timeline.fifo"
    os.mkfifo(pipe)

    def write() -> None:
        with open(pipe, "wb") as writer:
            writer.write("".join(GOOD[:2]).encode() + b'{"id": "caf\xe9"}\n')

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    line = one_line_error(run_cli("evaluate", "--timeline", str(pipe)))  # (60 s bound)
    assert f"{pipe}: not UTF-8 text" in line  # (the pipe is read once: no line to name)
    writer.join(timeout=5)


def test_a_name_given_twice_in_one_object_is_refused_not_half_read(tmp_path):
    # Python's decoder keeps the last "fact" and drops the first without a word
    event = json.loads(GOOD[0])
    twice = json.dumps(event)[:-1] + ', "fact": ' + json.dumps(event["fact"]) + "}"
    timeline = tmp_path / "t.jsonl"
    timeline.write_text(GOOD[1] + twice + "\n")
    line = one_line_error(run_cli("evaluate", "--timeline", str(timeline)))
    assert f"{timeline}, line 2: invalid JSON: the name 'fact' is given twice in one object" in (
        line
    )
    probes = tmp_path / "probes.jsonl"
    probes.write_text('{"question": "Who?", "question": "What?"}\n')
    line = one_line_error(run_cli("evaluate", "--probes", str(probes)))
    assert f"{probes}, line 1: invalid JSON: the name 'question' is given twice" in line


def test_a_timeline_saved_with_a_byte_order_mark_says_so(tmp_path):
    timeline = tmp_path / "t.jsonl"
    timeline.write_text("\ufeff" + "".join(GOOD[:2]), encoding="utf-8")
    line = one_line_error(run_cli("evaluate", "--timeline", str(timeline)))
    assert f"{timeline}, line 1: invalid JSON: Unexpected UTF-8 BOM" in line


@pytest.mark.parametrize("probe_id", [["x", 1], "   ", 7.5, True, ""])
def test_a_probe_id_that_is_no_name_is_one_line_naming_the_field(tmp_path, probe_id):
    probes = tmp_path / "probes.jsonl"
    probe = {"question": "Who owns billing?", "subject": "billing", "predicate": "owner"}
    probes.write_text(json.dumps({"id": probe_id, **probe, "domain": "ownership"}) + "\n")
    line = one_line_error(run_cli("evaluate", "--probes", str(probes)))
    assert f"{probes}, line 1, field 'id': expected a non-empty string" in line


def test_a_probe_file_numbering_its_probes_keeps_the_numbers_as_ids(tmp_path):
    from healthd.probes import load_probe_file

    probes = tmp_path / "probes.jsonl"
    probe = {"question": "Who owns billing?", "subject": "billing", "predicate": "owner"}
    probes.write_text(json.dumps({"id": 7, **probe, "domain": "ownership"}) + "\n")
    assert [p.id for p in load_probe_file(str(probes))] == ["7"]
