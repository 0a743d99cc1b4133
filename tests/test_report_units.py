"""The report's pure parts: the daemon's bounded stage log, grouping of long answers, and
multi-valued keys in the drill-down."""

from __future__ import annotations

from itertools import pairwise

from timeline_builders import added, fact, revised

from healthd.evaluator import evaluate
from healthd.exporters.report import report_json
from healthd.memory import build_memory, parse_target
from healthd.probes import build_probe_set
from healthd.report.stagelog import StageLog
from healthd.report.view import FACTS_SHOWN, page_model


def _run(events, target="naive"):
    probes = build_probe_set(events)
    spec = parse_target(target)
    result = evaluate(events, build_memory(spec), probes, name=target, kind=spec.kind)
    return report_json([result], probes.version, len(probes)), result


def test_stage_log_stays_bounded_evenly_spread_and_keeps_the_newest():
    events = [
        added(f"e{i}", i / 100, fact(f"svc-{i % 50}", "language", f"v{i}")) for i in range(5000)
    ]
    log = StageLog(capacity=64)
    probes = build_probe_set(events)
    from healthd.evaluator import Replay

    replay = Replay(build_memory(parse_target("naive")), probes)
    for event in events:
        log.add(replay.step(event), event)
    stages, kept_events = log.stages()
    indices = [s["index"] for s in stages]
    assert len(stages) <= 65 and indices[-1] == 5000
    assert all(i % log.stride == 0 for i in indices[:-1]) and log.stride == 128
    assert [e.id for e in kept_events] == [f"e{i - 1}" for i in indices]
    log.clear()
    assert log.stages() == ([], []) and log.stride == 1


def test_a_long_answer_shows_offending_entries_first_and_counts_the_rest():
    events = [added("a0", 0, fact("svc", "language", "v0"))]
    events += [
        revised(f"r{i}", i, fact("svc", "language", f"v{i - 1}"), fact("svc", "language", f"v{i}"))
        for i in range(1, 20)
    ]
    report, _ = _run(events)
    model = page_model(report, events=events)
    probe = next(p for p in model["probes"] if p[4] == "svc · language")
    facts, hidden = probe[6], probe[7]
    assert len(facts) == FACTS_SHOWN and hidden == 20 - FACTS_SHOWN
    assert all(f[7] for f in facts)  # entries that make it fail come first
    conflicting = next(
        r for r in model["failures"] if any(model["kinds"][k] == "conflicting" for k, _ in r[1])
    )
    assert model["probes"][conflicting[0]] is probe


def test_two_values_of_a_multi_valued_key_are_no_conflict_with_or_without_the_timeline():
    events = [
        added("a", 0, fact("svc", "dependency:redis", "6"), multi=True),
        added("b", 1, fact("svc", "dependency:redis", "7"), multi=True),
        added("c", 2, fact("billing", "owners", "@a", "ownership")),
        added("d", 3, fact("billing", "owners", "@b", "ownership")),
    ]
    report, _ = _run(events)
    assert report["targets"][0]["final"]["metrics"]["all"]["conflicts"] == 1
    for named in (events, ()):
        model = page_model(report, events=named)
        kinds = {
            (model["probes"][r[0]][4], model["kinds"][k])
            for r in model["failures"]
            for k, _ in r[1]
        }
        assert ("billing · owners", "conflicting") in kinds
        assert not any(key == "svc · dependency:redis" for key, _ in kinds)


def test_streamed_downsampling_keeps_exactly_what_downsampling_the_whole_series_keeps():
    import random

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from healthd.report.downsample import StreamingKeep, keep_positions

    @settings(max_examples=300, deadline=None, database=None)
    @given(st.integers(1, 600), st.integers(1, 4), st.integers(2, 150), st.integers(0, 1 << 30))
    def check(length, width, budget, seed):
        rng = random.Random(seed)
        columns = [
            [
                None if rng.random() < 0.2 else rng.choice((0.0, 1.0, rng.random()))
                for _ in range(length)
            ]
            for _ in range(width)
        ]
        stream = StreamingKeep(length, budget, width)
        for position in range(length):
            stream.add(position, [c[position] for c in columns], position)
        assert sorted(stream.kept) == keep_positions(columns, length, budget)

    check()


def test_the_html_report_of_stages_sampled_as_they_come_is_the_one_of_every_stage():
    """`evaluate --html` no longer keeps every stage: it keeps what the charts draw (past the
    chart's budget of points) while the replay runs; the page is the same."""
    from healthd.exporters.report import StageSampler
    from healthd.report.view import chart_budget

    events = []
    for i in range(chart_budget(1) + 700):
        key = f"svc-{i % 37}"
        if i < 37:
            events.append(added(f"e{i}", i / 10, fact(key, "language", "v0")))
        else:
            before = fact(key, "language", f"v{(i // 37 - 1) % 5}")
            events.append(
                revised(f"e{i}", i / 10, before, fact(key, "language", f"v{i // 37 % 5}"))
            )
    whole, result = _run(events)
    sampler = StageSampler(len(events), 1)
    for stage in result.stages:
        sampler.add(stage)
    sampled = report_json([result], whole["probe_set"]["version"], whole["probe_set"]["count"])
    sampler.fill(sampled["targets"][0])
    kept = {
        s["index"] for stages in sampled["targets"][0]["series_stages"].values() for s in stages
    }
    assert len(kept) < len(events) / 2  # what it holds is bounded by the charts, not the events
    named = [e for e in events if e.id in sampler.event_ids()]
    assert page_model(sampled, events=named, multi_valued=set()) == page_model(whole, events=events)


def test_each_chart_line_ends_on_the_final_stages_value_one_point_per_instant():
    """Stages at one instant (a sweep, a commit touching several facts) are one point, the
    state after all of them: the line ends where the final table does."""
    from healthd.scoring import BUCKETS
    from healthd.settings import _example_timeline
    from healthd.timeline import read_timeline

    events = list(read_timeline(_example_timeline()))
    probes = build_probe_set(events)
    results = []
    for target in ("reference", "naive"):
        spec = parse_target(target)
        results.append(evaluate(events, build_memory(spec), probes, name=target, kind=spec.kind))
    report = report_json(results, probes.version, len(probes))
    model = page_model(report, events=events)
    for target, result in zip(model["targets"], report["targets"], strict=True):
        for bucket in BUCKETS:
            series = target["series"][bucket]
            final = result["final"]["metrics"][bucket]
            for name in ("freshness", "consistency", "coverage", "contamination", "conflicts"):
                expected = final[name] if final[name] is None else round(final[name], 4)
                assert series[name][-1] == expected, (target["name"], bucket, name)
            assert all(a < b for a, b in pairwise(series["t"])), "one point a time"
            assert series["x"][-1] == len(result["stages"])  # the last point is the last stage
    # the example ends with one sweep of 15 stages at one instant: one point naming them all
    reference = model["targets"][0]["series"]["all"]
    assert (reference["x0"][-1], reference["x"][-1]) == (121, 135)


def test_a_span_with_no_events_is_marked_quiet_in_the_page_model():
    """A dormant repository: nothing happened for years between two busy spells; the chart
    marks that span instead of drawing a measured line across it."""
    events = [added(f"a{i}", i, fact(f"svc-{i}", "language", "go")) for i in range(10)]
    events += [added(f"b{i}", 1500 + i, fact(f"svc-{i}", "owner", "ann")) for i in range(10)]
    report, _ = _run(events, "reference")
    series = page_model(report, events=events)["targets"][0]["series"]["all"]
    t9, t1500 = (int(e.timestamp.timestamp()) for e in (events[9], events[10]))
    assert series["quiet"] == [[t9, t1500]]
    busy = [added(f"c{i}", i, fact(f"svc-{i}", "language", "go")) for i in range(30)]
    report, _ = _run(busy, "reference")
    assert page_model(report, events=busy)["targets"][0]["series"]["all"]["quiet"] == []


def test_a_saved_report_read_as_a_stream_keeps_only_what_the_charts_draw(tmp_path, monkeypatch):
    """`report --from` reads the stages as a stream, keeping what the charts draw (past the
    budget of points): the page is the one of the whole file, and a file that is not JSON is
    refused naming it, whole (with its line) or past the size read whole for that."""
    import json

    import pytest

    import healthd.report as report_module
    from healthd.errors import ReportShapeError
    from healthd.report import load_report, render_report
    from healthd.report.shape import check_report
    from healthd.report.view import chart_budget

    events = []
    for i in range(chart_budget(2) + 500):
        key = f"svc-{i % 29}"
        if i < 29:
            events.append(added(f"e{i}", i / 10, fact(key, "language", "v0")))
        else:
            before = fact(key, "language", f"v{(i // 29 - 1) % 4}")
            events.append(
                revised(f"e{i}", i / 10, before, fact(key, "language", f"v{i // 29 % 4}"))
            )
    probes = build_probe_set(events)
    results = []
    for label in ("reference", "naive"):
        spec = parse_target(label)
        results.append(evaluate(events, build_memory(spec), probes, name=label, kind=spec.kind))
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report_json(results, probes.version, len(probes)), indent=1))
    whole = check_report(json.loads(path.read_text()))
    streamed = load_report(str(path))
    for target in streamed["targets"]:
        assert target["stage_count"] == len(events)
        held = {s["index"] for stages in target["series_stages"].values() for s in stages}
        assert len(held) < len(events) / 2
    assert render_report(streamed, events=events) == render_report(whole, events=events)

    path.write_text('{"probe_set": {"version": "v", "count": 1},\n "targets": [}\n')
    with pytest.raises(ReportShapeError, match="line 2, column 14: not JSON"):
        load_report(str(path))
    monkeypatch.setattr(report_module, "_WHOLE_FOR_ERRORS", 10)
    with pytest.raises(ReportShapeError, match="report.json: not JSON: "):
        load_report(str(path))
    bad_stage = json.loads(json.dumps(whole))
    bad_stage["targets"][1]["stages"][7]["index"] = 3
    path.write_text(json.dumps(bad_stage))
    with pytest.raises(ReportShapeError, match=r"targets\[1\]\.stages\[7\]\.index: 3 does not"):
        load_report(str(path))


def test_a_probe_view_reads_as_the_probe_in_json():
    """`evaluate --html` hands the page its final probes as views made when read: each
    reads as the JSON report's probe."""
    from healthd.exporters.report import ProbeView, probe_json

    events = [
        added("e1", 1, fact("svc-a", "language", "go")),
        revised("e2", 2, fact("svc-a", "language", "go"), fact("svc-a", "language", "rust")),
        added("e3", 3, fact("svc-b", "language", "java")),
    ]
    _, result = _run(events)
    assert result.probes and any(p.retrieved for p in result.probes)
    for probe in result.probes:
        view = ProbeView(probe)
        assert dict(view) == probe_json(probe)
        assert len(view) == len(probe_json(probe)) and "nothing" not in view


def test_a_report_file_carries_the_runbook_its_alert_links_go_to():
    import re

    from healthd.report.html import render_document
    from healthd.report.runbook import anchor

    events = [added("a0", 0, fact("svc", "language", "go"))]
    events += [
        revised(f"r{i}", i, fact("svc", "language", f"v{i - 1}"), fact("svc", "language", f"v{i}"))
        for i in range(1, 5)
    ]
    report, _ = _run(events)  # naive: answers with what stopped being true
    page = render_document(page_model(report, events=events))
    links = re.findall(r"<a href='([^']*)'>(Healthd\w+)</a>", page)
    assert links, "the naive target crosses thresholds: its verdict links them"
    ids = set(re.findall(r"<h2 id=\"([^\"]+)\">", page))
    for href, alert in links:
        assert href == f"#{anchor(alert)}" and anchor(alert) in ids  # in this page, offline

    configured = render_document(
        page_model(report, events=events, runbook_url="https://wiki.example.com/runbook.md")
    )
    assert "id='runbook'" not in configured
    assert all(
        href.startswith("https://wiki.example.com/runbook.md#")
        for href, _ in re.findall(r"<a href='([^']*)'>(Healthd\w+)</a>", configured)
    )
