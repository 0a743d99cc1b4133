"""Every metric of DESIGN.md on tiny timelines worked out by hand.

Each test writes out the timeline, what the memory returns after each event, and the numbers
a person gets by applying the definitions; both evaluation modes must give them.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from timeline_builders import (
    ScriptedMemory,
    added,
    day,
    fact,
    invalidated,
    record,
    revalidated,
    revised,
)

from healthd import scoring
from healthd.cli import example_timeline_path
from healthd.evaluator import Replay
from healthd.memory.reference import ReferenceMemory
from healthd.model import HISTORICAL, FactKey
from healthd.probes import build_probe_set
from healthd.timeline import read_timeline

LANG = FactKey("auth", "language")
node, go, rust = (fact("auth", "language", v) for v in ("node", "go", "rust"))


def run(events, script, mode, **options):
    replay = Replay(ScriptedMemory(script), build_probe_set(events), mode=mode, **options)
    return [replay.step(e) for e in events]


@pytest.fixture(params=["full", "incremental"])
def mode(request):
    return request.param


def test_a_revision_the_memory_half_applied(mode):
    events = [added("e1", 0, node), revised("e2", 10, node, go)]
    script = {"e1": {LANG: [record(node, 0)]}, "e2": {LANG: [record(go, 10), record(node, 0)]}}
    stage1, stage2 = run(events, script, mode)

    m = stage1.metrics["all"]
    assert (m.freshness, m.consistency, m.coverage, m.contamination, m.conflicts) == (
        1.0,
        1.0,
        1.0,
        0.0,
        0,
    )
    m = stage2.metrics["all"]
    assert m.freshness == 1.0  # both validated within 90 days of day 10
    assert m.consistency == 0.5  # go is current, node superseded
    assert m.coverage == 1.0  # the one current fact (go) came back
    assert m.contamination == 1.0  # the only probe holds a superseded fact
    assert m.conflicts == 1  # two values for a single-valued key
    assert stage2.metrics["tech"] == m


def test_empty_denominators_are_null_not_zero(mode):
    gone = fact("billing", "owners", "@alice", "ownership")
    # An invalidation of a key never asserted: no probe is in P_1 yet.
    events = [invalidated("e1", 0, gone), added("e2", 1, node)]
    stage1, stage2 = run(events, {"e2": {LANG: []}}, mode)
    m = stage1.metrics["all"]
    assert (m.freshness, m.consistency, m.coverage, m.forgetting, m.contamination) == (
        None,
        None,
        None,
        None,
        None,
    )
    assert m.conflicts == 0
    # The memory returned nothing: nothing retrieved to judge, but a current fact missed.
    m = stage2.metrics["all"]
    assert (m.freshness, m.consistency) == (None, None)
    assert (m.coverage, m.contamination) == (0.0, 0.0)
    assert stage2.metrics["ownership"].coverage is None


def test_metrics_split_by_domain(mode):
    owners = fact("billing", "owners", "@alice", "ownership")
    budget = fact("checkout", "latency", "p99 < 300 ms", "requirement")
    owners2 = fact("billing", "owners", "@bob", "ownership")
    events = [added("e1", 0, owners), added("e2", 0, budget), revised("e3", 5, owners, owners2)]
    script = {
        "e1": {owners.key: [record(owners, 0)]},
        "e2": {budget.key: [record(budget, 0)]},
        "e3": {owners.key: [record(owners, 0)]},
    }  # the memory missed the reorganisation
    final = run(events, script, mode)[-1].metrics
    assert final["ownership"].consistency == 0.0
    assert final["ownership"].coverage == 0.0
    assert final["ownership"].contamination == 1.0
    assert final["requirement"].consistency == 1.0
    assert final["requirement"].contamination == 0.0
    assert final["all"].consistency == 0.5
    assert final["all"].contamination == 0.5
    assert final["tech"].consistency is None and final["decision"].coverage is None


def test_freshness_uses_each_domains_window(mode):
    owners = fact("billing", "owners", "@alice", "ownership")
    events = [
        added("e1", 0, owners),
        added("e2", 0, node),
        revalidated("e3", 30, node),
        revalidated("e4", 31, node),
    ]
    script = {"e1": {owners.key: [record(owners, 0)]}, "e2": {LANG: [record(node, 0)]}}
    stages = run(events, script, mode)
    # Day 30: exactly 30 days old is still fresh (<= W); day 31 is not, for ownership only.
    assert stages[2].metrics["ownership"].freshness == 1.0
    assert stages[3].metrics["ownership"].freshness == 0.0
    assert stages[3].metrics["tech"].freshness == 1.0
    assert stages[3].metrics["all"].freshness == 0.5


def test_freshness_reads_the_last_validation_not_the_write(mode):
    owners = fact("billing", "owners", "@alice", "ownership")
    events = [added("e1", 0, owners), revalidated("e2", 25, owners), added("e3", 50, node)]
    script = {"e1": {owners.key: [record(owners, 0)]}, "e2": {owners.key: [record(owners, 25)]}}
    assert run(events, script, mode)[-1].metrics["ownership"].freshness == 1.0
    windows = {
        "ownership": timedelta(days=20),
        "tech": timedelta(days=90),
        "decision": timedelta(days=180),
        "requirement": timedelta(days=365),
    }
    assert run(events, script, mode, windows=windows)[-1].metrics["ownership"].freshness == 0.0


def test_forgetting_is_judged_n_change_points_after_the_end(mode):
    events = [
        added("e1", 0, node),
        revised("e2", 1, node, go),
        added("e3", 2, fact("x", "y", "z")),
        added("e4", 3, fact("x", "w", "z")),
        added("e5", 4, fact("x", "v", "z")),
    ]
    keeps_node = {"e1": {LANG: [record(node, 0)]}, "e2": {LANG: [record(go, 1), record(node, 0)]}}
    stages = run(events, keeps_node, mode, forgetting_window=2)
    # node ended at stage 2; it is judged at stage 4 and from then on counts.
    assert [s.metrics["all"].forgetting for s in stages] == [None, None, None, 0.0, 0.0]

    forgets_late = dict(keeps_node, e4={LANG: [record(go, 1)]})
    stages = run(events, forgets_late, mode, forgetting_window=2)
    assert [s.metrics["all"].forgetting for s in stages] == [None, None, None, 1.0, 1.0]

    forgets_too_late = dict(keeps_node, e5={LANG: [record(go, 1)]})
    stages = run(events, forgets_too_late, mode, forgetting_window=2)
    assert stages[-1].metrics["all"].forgetting == 0.0


def test_a_fact_current_again_when_judged_is_not_expected_forgotten(mode):
    kafka = fact("messaging", "broker", "kafka", "decision")
    sqs = fact("messaging", "broker", "sqs", "decision")
    events = [
        added("e1", 0, kafka),
        revised("e2", 1, kafka, sqs),
        revised("e3", 2, sqs, kafka),
        added("e4", 3, node),
    ]
    key = kafka.key
    script = {
        "e1": {key: [record(kafka, 0)]},
        "e2": {key: [record(sqs, 1)]},
        "e3": {key: [record(kafka, 2)]},
    }
    stages = run(events, script, mode, forgetting_window=2)
    # kafka ended at 2 but is current at 4: only sqs (ended at 3, judged at 5) would count.
    assert stages[3].metrics["decision"].forgetting is None


def test_out_of_order_arrival_is_judged_by_event_time(mode):
    a, b, c = (fact("auth", "language", v) for v in ("a", "b", "c"))
    events = [added("e1", 0, a), revised("e2", 20, a, c), revised("e3", 10, a, b)]
    right = {"e1": {LANG: [record(a, 0)]}, "e2": {LANG: [record(c, 20)]}}
    stages = run(events, right, mode)
    assert stages[2].timestamp == day(20)  # the late event does not turn the clock back
    assert stages[2].metrics["all"].consistency == 1.0
    overridden = dict(right, e3={LANG: [record(b, 10)]})
    m = run(events, overridden, mode)[2].metrics["all"]
    assert (m.consistency, m.coverage, m.contamination) == (0.0, 0.0, 1.0)


def test_a_removed_module_takes_its_facts_with_it(mode):
    exists = fact("payments-v1", "exists", "true")
    pg = fact("payments-v1", "dependency:postgres", "13")
    deps = [("payments-v1", "exists")]
    events = [added("e1", 0, exists), added("e2", 0, pg, deps), invalidated("e3", 5, exists)]
    script = {
        "e1": {exists.key: [record(exists, 0)]},
        "e2": {pg.key: [record(pg, 0)]},
        "e3": {exists.key: []},
    }  # the memory forgot the module, not its facts
    final = run(events, script, mode, forgetting_window=1)
    m = final[-1].metrics["all"]
    assert m.consistency == 0.0  # postgres 13 ended with the module
    assert m.contamination == 0.5  # one of the two probes holds it
    assert m.coverage is None  # nothing is current any more
    after = run(events + [added("e4", 6, node)], script, mode, forgetting_window=1)[-1]
    assert after.metrics["all"].forgetting == 0.5  # the module went, its dependency did not


def test_historical_facts_are_left_out(mode):
    events = [added("e1", 0, node), revised("e2", 1, node, go)]
    script = {
        "e1": {LANG: [record(node, 0)]},
        "e2": {LANG: [record(go, 1), record(node, 0, HISTORICAL)]},
    }
    m = run(events, script, mode)[-1].metrics["all"]
    assert (m.consistency, m.contamination, m.conflicts) == (1.0, 0.0, 0)


def test_multi_valued_keys_are_not_conflicts(mode):
    a = fact("svc", "maintainers", "@a", "ownership")
    b = fact("svc", "maintainers", "@b", "ownership")
    events = [added("e1", 0, a, multi=True), added("e2", 0, b, multi=True)]
    script = {"e2": {a.key: [record(a, 0), record(b, 0)]}}
    m = run(events, script, mode)[-1].metrics["all"]
    assert (m.conflicts, m.coverage, m.consistency) == (0, 1.0, 1.0)


def test_coverage_is_filed_under_the_expected_facts_own_domain(mode):
    # The key's first value is a tech fact, so its probe is a tech probe; the value it holds
    # now is a decision. Coverage, like the other metrics, follows the fact.
    kafka = fact("messaging", "broker", "kafka", "tech")
    sqs = fact("messaging", "broker", "sqs", "decision")
    events = [added("e1", 0, kafka), revised("e2", 5, kafka, sqs)]
    script = {"e1": {kafka.key: [record(kafka, 0)]}, "e2": {kafka.key: []}}
    final = run(events, script, mode)[-1].metrics
    assert final["decision"].coverage == 0.0
    assert final["tech"].coverage is None
    assert final["all"].coverage == 0.0


def test_a_probe_files_domain_is_kept_not_replaced_by_the_keys(mode):
    from healthd.model import Probe

    extra = Probe("f-1", "What language is auth in?", "auth", "language", "decision")
    events = [added("e1", 0, node), revised("e2", 5, node, go)]
    script = {"e1": {LANG: [record(node, 0)]}, "e2": {LANG: [record(node, 0)]}}
    probes = build_probe_set(events, [extra])
    assert {p.id: p.domain for p in probes}["f-1"] == "decision"
    replay = Replay(ScriptedMemory(script), probes, mode=mode)
    final = [replay.step(e) for e in events][-1].metrics
    # contamination is per probe, filed under the probe's domain: one tech, one decision
    assert final["decision"].contamination == 1.0
    assert final["tech"].contamination == 1.0
    # coverage per expected fact: both expected facts are tech
    assert final["tech"].coverage == 0.0 and final["decision"].coverage is None


def test_metrics_read_out_by_name_in_the_report():
    from healthd.scoring import Metrics

    m = Metrics(0.1, 0.2, 0.3, 0.4, 0.5, 6)
    assert m.as_dict() == {
        "freshness": 0.1,
        "consistency": 0.2,
        "coverage": 0.3,
        "forgetting": 0.4,
        "contamination": 0.5,
        "conflicts": 6,
    }


def test_scores_past_the_cap_on_shared_count_combinations_are_the_same(monkeypatch):
    """Each probe's counts share one copy per combination, up to a cap; past it (a daemon
    that has met thousands of combinations) a probe's counts are its own, and every metric
    at every stage is unchanged."""
    events = read_timeline(example_timeline_path())
    probes = build_probe_set(events)

    def stages():
        replay = Replay(ReferenceMemory(), probes)
        return [replay.step(e).metrics for e in events]

    shared = stages()
    monkeypatch.setattr(scoring, "_CELLS", {})
    monkeypatch.setattr(scoring, "_CELLS_MAX", 0)
    assert stages() == shared
