"""The bundled example tells the seed's story; each forgetting mechanism earns its keep on it."""

from __future__ import annotations

from collections import Counter

import pytest

from healthd.cli import example_timeline_path
from healthd.evaluator import evaluate
from healthd.memory import build_memory, parse_target
from healthd.probes import build_probe_set
from healthd.timeline import read_timeline

EVENTS = read_timeline(example_timeline_path())
PROBES = build_probe_set(EVENTS)


def run(target: str):
    spec = parse_target(target)
    return evaluate(EVENTS, build_memory(spec), PROBES, name=spec.label, kind=spec.kind)


def retrieved(result, subject, predicate):
    [probe] = [
        p for p in result.probes if (p.probe.subject, p.probe.predicate) == (subject, predicate)
    ]
    return {(f.value, status) for f, status in probe.retrieved}


def test_the_story_covers_every_change_the_seed_names():
    assert len(EVENTS) >= 40
    assert set(Counter(e.fact.domain for e in EVENTS)) == {
        "tech",
        "ownership",
        "decision",
        "requirement",
    }
    changes = {(e.type, e.fact.subject, e.fact.predicate, e.fact.value) for e in EVENTS}
    assert ("revised", "auth-service", "language", "go") in changes  # a rewrite
    brokers = [
        e.fact.value
        for e in EVENTS
        if e.fact.key == ("messaging", "broker") and e.type in ("added", "revised")
    ]
    assert brokers == ["kafka", "sqs", "kafka"]  # reversed twice
    assert ("invalidated", "reports", "pdf_export", "monthly PDF export for finance") in changes
    assert ("invalidated", "payments-v1", "exists", "true") in changes  # a module removed
    assert ("revised", "payments", "on_call", "@frank") in changes  # Alice leaves
    assert sum(e.type == "revalidated" for e in EVENTS) >= 20
    times = [e.timestamp for e in EVENTS]
    assert times != sorted(times)  # a late arrival


def test_reference_stays_consistent_and_uncontaminated_while_naive_does_not():
    reference, naive = run("reference"), run("naive")
    assert reference.metrics["all"].consistency == 1.0
    assert reference.metrics["all"].contamination == 0.0
    assert naive.metrics["all"].contamination > 0.0
    assert naive.metrics["all"].consistency < reference.metrics["all"].consistency
    assert naive.metrics["all"].forgetting < reference.metrics["all"].forgetting


def test_without_ttl_the_drift_nobody_modelled_stays_in_memory():
    # legacy-reports still names Alice, who left; no event ever said so and nobody
    # re-validated it. Only the TTL lets it age out.
    reference, no_ttl = run("reference"), run("reference:ttl=off")
    assert retrieved(reference, "legacy-reports", "owners") == set()
    assert retrieved(no_ttl, "legacy-reports", "owners") == {("@alice", "current")}
    assert no_ttl.metrics["ownership"].freshness < reference.metrics["ownership"].freshness


def test_without_supersession_a_reversed_decision_leaks():
    result = run("reference:supersession=off")
    assert retrieved(result, "messaging", "broker") >= {("kafka", "current"), ("sqs", "superseded")}
    assert result.metrics["decision"].contamination == 1.0
    assert result.metrics["decision"].conflicts >= 1
    assert run("reference").metrics["decision"].contamination == 0.0


def test_without_propagation_a_removed_modules_facts_survive_it():
    result = run("reference:propagation=off")
    assert retrieved(result, "payments-v1", "dependency:postgres") == {("13", "invalidated")}
    assert result.metrics["tech"].contamination > 0.0
    assert retrieved(run("reference"), "payments-v1", "dependency:postgres") == set()


@pytest.mark.parametrize(
    "target",
    [
        "reference",
        "naive",
        "reference:ttl=off",
        "reference:supersession=off",
        "reference:propagation=off",
    ],
)
def test_full_and_incremental_agree_on_the_story(target):
    spec = parse_target(target)
    full = evaluate(EVENTS, build_memory(spec), PROBES, name=target, kind=spec.kind, mode="full")
    inc = evaluate(
        EVENTS, build_memory(spec), PROBES, name=target, kind=spec.kind, mode="incremental"
    )
    assert [s.metrics for s in full.stages] == [s.metrics for s in inc.stages]
    assert inc.probe_queries < full.probe_queries


def test_a_module_brought_back_is_scored_current_for_a_memory_that_follows_it():
    from timeline_builders import added, fact, invalidated

    exists = fact("payments-v1", "exists", "true")
    pg = fact("payments-v1", "dependency:postgres", "13")
    deps = [("payments-v1", "exists")]
    events = [
        added("1", 0, exists),
        added("2", 5, pg, deps),
        invalidated("3", 10, exists),
        added("4", 30, exists),
        added("5", 31, pg, deps),
    ]
    result = evaluate(
        events,
        build_memory(parse_target("reference")),
        build_probe_set(events),
        name="reference",
        kind="reference",
    )
    assert result.metrics["all"].consistency == 1.0
    assert result.metrics["all"].contamination == 0.0


def test_the_reference_memory_scores_the_story_the_same_in_reverse_arrival_order():
    # Every event arrives in the opposite order: event time, not arrival, decides what holds.
    backwards = list(reversed(EVENTS))
    reference = evaluate(
        backwards, build_memory(parse_target("reference")), PROBES, name="r", kind="reference"
    )
    assert reference.metrics == run("reference").metrics
    assert reference.metrics["all"].consistency == 1.0
    assert reference.metrics["all"].contamination == 0.0
