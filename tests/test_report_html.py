"""The HTML report without a browser: what it says about the example, and its bad inputs.

The drill-down must agree with the metrics: its rows of each failure kind are exactly what
the final-stage metric of that kind counts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from browser_helpers import page_data
from hypothesis import given
from hypothesis import strategies as st

from healthd.cli import example_timeline_path
from healthd.report.downsample import keep_positions
from healthd.timeline import read_timeline

ALL_LAYERS = (
    "reference",
    "naive",
    "reference:ttl=off",
    "reference:supersession=off",
    "reference:propagation=off",
)


def healthd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args], capture_output=True, text=True, timeout=180
    )


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> tuple[Path, Path]:
    """The example evaluated against every layer, as HTML and as the JSON report."""
    out = tmp_path_factory.mktemp("example")
    args = [a for t in ALL_LAYERS for a in ("--target", t)]
    done = healthd(
        "evaluate", *args, "--format", "json", "--output", str(out / "r.json"),
        "--html", str(out / "r.html"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out / "r.html", out / "r.json"


KINDS = ["stale", "contaminated", "missed", "conflicting"]


def drill_rows(data: dict) -> list[dict]:
    """The drill-down's failures, one per probe and kind (the page shows a probe's kinds in
    one row)."""
    out = []
    for slot, kinds in data["failures"]:
        for kind, layer in kinds:
            target, domain, pid, question, key, expected, facts, hidden, _ = data["probes"][slot]
            out.append(
                {
                    "target": data["targets"][target]["name"], "kind": KINDS[kind], "domain": domain,
                    "id": pid, "question": question, "key": key, "expected": expected,
                    "facts": facts, "hidden": hidden, "layer": layer,
                    "offending": [f for f in facts if f[7] & (1 << kind)],
                }
            )  # fmt: skip
    return out


def failures_by(data: dict, target: str, kind: str) -> list[dict]:
    return [r for r in drill_rows(data) if r["target"] == target and r["kind"] == kind]


def test_drill_down_rows_are_what_the_final_metrics_count(example):
    html, report_path = example
    data = page_data(html.read_text())
    report = json.loads(report_path.read_text())
    assert {t["name"] for t in report["targets"]} == set(ALL_LAYERS)
    for target in report["targets"]:
        name, final = target["name"], target["final"]
        probes = final["probes"]
        for domain in ("tech", "ownership", "decision", "requirement"):
            in_domain = [p for p in probes if p["domain"] == domain]
            m = final["metrics"][domain]
            contaminated = [
                r for r in failures_by(data, name, "contaminated") if r["domain"] == domain
            ]
            if in_domain:
                assert len(contaminated) / len(in_domain) == pytest.approx(m["contamination"])
            conflicting = [
                r for r in failures_by(data, name, "conflicting") if r["domain"] == domain
            ]
            assert len(conflicting) == m["conflicts"]
        pool = [f for p in probes for f in p["retrieved"] if "historical" not in f["flags"]]
        stale_records = sum(f[4] for r in failures_by(data, name, "stale") for f in r["offending"])
        assert 1 - stale_records / len(pool) == pytest.approx(final["metrics"]["all"]["freshness"])
        by_id = {p["id"]: p for p in probes}
        missing = 0
        for row in failures_by(data, name, "missed"):
            probe = by_id[row["id"]]
            returned = {f["value"] for f in probe["retrieved"] if "historical" not in f["flags"]}
            missing += sum(1 for v in probe["expected"] if v not in returned)
        expected = sum(len(p["expected"]) for p in probes)
        assert 1 - missing / expected == pytest.approx(final["metrics"]["all"]["coverage"])


def test_naive_is_contaminated_by_the_reversed_broker_decision(example):
    data = page_data(example[0].read_text())
    rows = [r for r in failures_by(data, "naive", "contaminated") if r["domain"] == "decision"]
    broker = next(r for r in rows if r["key"] == "messaging · broker")
    assert [(f[0], f[1], f[4]) for f in broker["offending"]] == [("sqs", "superseded", 2)]
    assert {f[0] for f in broker["facts"]} == {"kafka", "sqs"} and broker["hidden"] == 0
    assert broker["expected"] == ["kafka"]


def test_each_switched_off_layer_is_named_on_the_failures_only_it_lets_through(example):
    rows = drill_rows(page_data(example[0].read_text()))
    layers = {(r["target"], r["layer"]) for r in rows if r["layer"]}
    assert layers == {
        ("reference:ttl=off", "TTL"),
        ("reference:supersession=off", "supersession"),
        ("reference:propagation=off", "cascade"),
    }
    ttl = [(r["kind"], r["key"]) for r in rows if r["layer"] == "TTL"]
    assert ttl == [("stale", "legacy-reports · owners")]
    cascade = {r["key"] for r in rows if r["layer"] == "cascade"}
    assert any(key.startswith("payments-v1 · dependency:") for key in cascade)
    # what plain reference misses too belongs to no switched-off layer
    assert not any(r["layer"] for r in rows if r["target"] == "reference")
    shared = [r for r in rows if r["key"] == "legacy-reports · owners" and r["kind"] == "missed"]
    assert shared and not any(r["layer"] for r in shared)


def test_saved_report_with_its_timeline_renders_the_same_bytes(example, tmp_path):
    html, report_path = example
    again = tmp_path / "again.html"
    done = healthd(
        "report", "--from", str(report_path), "--html", str(again),
        "--timeline", example_timeline_path(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert again.read_bytes() == html.read_bytes()


def test_every_stage_event_is_named_for_hover(example):
    data = page_data(example[0].read_text())
    events = {e.id: e for e in read_timeline(example_timeline_path())}
    series = data["targets"][0]["series"]["all"]
    # a short run is never downsampled: its points (one per instant, stages x0 to x) cover
    # every stage, each named by the last event at its instant
    assert series["x0"][0] == 1 and series["x"][-1] == len(events)
    assert all(x + 1 == x0 for x, x0 in zip(series["x"], series["x0"][1:], strict=False))
    named = [data["events"][slot] for slot in series["e"]]
    assert [row[0] for row in named] == [list(events)[x - 1] for x in series["x"]]
    revised = next(row for row in named if row[1] == "revised")
    event = events[revised[0]]
    assert event.previous is not None
    assert revised[3] == f"{event.previous.value} → {event.fact.value}"


def test_the_file_loads_nothing_from_elsewhere(example):
    text = example[0].read_text()
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=['\"](?!data:)", text)
    assert "@import" not in text and "url(http" not in text


def test_report_text_cannot_escape_the_data_script(tmp_path):
    timeline = tmp_path / "t.jsonl"
    hostile = "</script><img src=x onerror=alert(1)>"
    timeline.write_text(
        json.dumps(
            {
                "id": "e1", "type": "added", "timestamp": "2026-01-01T00:00:00Z",
                "source": "file", "depends_on": [], "metadata": {},
                "fact": {"subject": hostile, "predicate": "owners", "value": "<b>x</b>",
                         "domain": "ownership"},
            }
        )
        + "\n"
    )  # fmt: skip
    out = tmp_path / "r.html"
    done = healthd("evaluate", "--timeline", str(timeline), "--html", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert hostile not in text and "<b>x</b>" not in text
    assert page_data(text)["events"][0][2] == f"{hostile} · owners"


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("missing-dir/r.html", "cannot write the HTML report: no directory"),
        (".", "cannot write the HTML report: is a directory"),
    ],
)
def test_html_into_an_unwritable_path_is_one_line_and_exit_2(tmp_path, where, message):
    target = str(tmp_path / where)
    for args in (
        ("evaluate", "--html", target),
        ("report", "--from", example_timeline_path(), "--html", target),
    ):
        done = healthd(*args)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and target in lines[0], lines
        assert done.stdout == ""  # failed before any work


def test_html_through_a_link_or_into_a_pipe_writes_there_and_replaces_neither(tmp_path):
    # a symbolic link keeps pointing at its file, which gets the page; a pipe (and so
    # /dev/stdout or a device) is written to as it is, not replaced by a regular file
    page_file = tmp_path / "reports" / "latest.html"
    page_file.parent.mkdir()
    page_file.write_text("old")
    link = tmp_path / "report.html"
    link.symlink_to(page_file)
    args = ("evaluate", "--output", os.devnull)
    done = healthd(*args, "--html", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(page_file)
    assert page_file.read_text().startswith("<!doctype html>")

    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    done = healthd(*args, "--html", str(fifo))
    piped, _ = reader.communicate(timeout=60)
    assert done.returncode == 0, done.stderr
    assert piped.decode().startswith("<!doctype html>")
    assert fifo.is_fifo()
    # /dev/stdout on a pipe resolves to "pipe:[N]", which is no file name to write beside
    done = healthd(*args, "--html", "/dev/stdout")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<!doctype html>")


def test_a_lone_surrogate_a_memory_served_is_written_as_its_escape_not_a_crash(tmp_path):
    # a service that cut a UTF-16 pair in two (JavaScript's slice) serves "\ud83d" in JSON
    from healthd.report import write_html

    out = tmp_path / "r.html"
    write_html(str(out), ["<p>", "cut emoji \ud83d", "</p>"])
    assert out.read_text(encoding="utf-8") == "<p>cut emoji \\ud83d</p>"


def _report_from(example, edit) -> dict:
    report = json.loads(example[1].read_text())
    edit(report)
    return report


def _any_retrieved(report: dict) -> dict:
    probes = report["targets"][0]["final"]["probes"]
    return next(fact for probe in probes for fact in probe["retrieved"])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.pop("targets"), "report: missing field 'targets'"),
        (
            lambda r: r["targets"][0].update(stages="x"),
            "targets[0].stages: expected a list, got a string",
        ),
        (
            lambda r: r["targets"][1]["stages"][4]["metrics"]["tech"].update(coverage=1.5),
            "targets[1].stages[4].metrics.tech.coverage: expected a number from 0 to 1 or null, got 1.5",
        ),
        (
            lambda r: r["targets"][0]["final"]["probes"][0].update(
                retrieved=[  # probes are in key order: the first may have retrieved nothing
                    {**_any_retrieved(r), "status": "gone"}
                ]
            ),
            "targets[0].final.probes[0].retrieved[0].status: 'gone' is not one of",
        ),
        (
            lambda r: r["targets"][0]["stages"][2].update(timestamp="yesterday"),
            "targets[0].stages[2].timestamp: not an ISO 8601 timestamp: 'yesterday'",
        ),
    ],
)
def test_a_results_file_of_the_wrong_shape_is_named_and_exit_2(example, tmp_path, edit, message):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_report_from(example, edit)))
    out = tmp_path / "r.html"
    done = healthd("report", "--from", str(bad), "--html", str(out))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and lines[0].startswith(f"healthd: error: {bad}: ") and message in lines[0]
    )
    assert not out.exists()


def test_a_results_file_that_is_not_json_names_line_and_column(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"probe_set":\n  {"version": "x",, }}')
    done = healthd("report", "--from", str(bad), "--html", str(tmp_path / "r.html"))
    assert done.returncode == 2
    assert f"{bad}: line 2, column 19: not JSON" in done.stderr
    missing = healthd(
        "report", "--from", str(tmp_path / "none.json"), "--html", str(tmp_path / "r.html")
    )
    assert missing.returncode == 2 and "cannot read the report" in missing.stderr


@given(
    st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=3000),
    st.integers(20, 600),
)
def test_downsampling_stays_in_budget_and_keeps_every_extreme(values, budget):
    keep = keep_positions([values], len(values), budget)
    assert keep == sorted(set(keep)) and len(keep) <= max(
        budget, len(values) if len(values) <= budget else budget
    )
    present = [v for v in values if v is not None]
    if present:
        kept = [values[p] for p in keep if values[p] is not None]
        assert min(present) in kept and max(present) in kept
    assert keep[0] == 0 and keep[-1] == len(values) - 1


def test_same_input_gives_byte_identical_html(tmp_path):
    first, second = tmp_path / "1.html", tmp_path / "2.html"
    for out in (first, second):
        assert healthd("evaluate", "--html", str(out)).returncode == 0
    assert first.read_bytes() == second.read_bytes()
    assert os.path.getsize(first) < 400_000


def test_configured_targets_take_their_layer_from_their_switches(tmp_path):
    config = tmp_path / "healthd.toml"
    config.write_text(
        f"""
[sources.example]
kind = "file"
path = "{example_timeline_path()}"

[targets.reference]
kind = "reference"
shadow = true

[targets.no-ttl]
kind = "reference"
shadow = true
ttl = false
"""
    )
    out = tmp_path / "r.html"
    done = healthd("evaluate", "--config", str(config), "--html", str(out))
    assert done.returncode == 0, done.stderr
    rows = drill_rows(page_data(out.read_text()))
    assert [(r["target"], r["kind"], r["key"]) for r in rows if r["layer"] == "TTL"] == [
        ("no-ttl", "stale", "legacy-reports · owners")
    ]
