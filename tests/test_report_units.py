"""The report's pure parts: the daemon's bounded stage log, grouping of long answers, and
multi-valued keys in the drill-down."""

from __future__ import annotations

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
