"""Edge cases of event time and cascades, worked out by hand, that the ground truth and the
reference memory must both get right: each changes a reported number if either gets it wrong.
"""

from __future__ import annotations

import pytest
from timeline_builders import added, day, fact, invalidated, revalidated, revised

from healthd.memory.reference import ReferenceMemory
from healthd.model import ChangeEvent, Fact, FactKey, Probe
from healthd.truth import GroundTruth

exists = fact("m", "exists", "true")
pg13, pg14 = fact("m", "dependency:postgres", "13"), fact("m", "dependency:postgres", "14")
DEPS = [("m", "exists")]
eu, us, de = (fact("m", "regions", v, "requirement") for v in ("eu", "us", "de"))


def in_truth(events: list[ChangeEvent], key: FactKey, at: float) -> list[str]:
    return [f.value for f in GroundTruth(events).current(key, day(at))]


def in_memory(events: list[ChangeEvent], key: FactKey, at: float) -> list[str]:
    memory = ReferenceMemory(ttl=False, top_k=20)
    for event in events:
        memory.apply(event)
    probe = Probe("p", "?", key.subject, key.predicate, "tech")
    return sorted(f.value for f in memory.answer(probe, day(at)).facts)


@pytest.fixture(params=[in_truth, in_memory], ids=["truth", "reference memory"])
def holds(request):
    return request.param


def test_arrival_order_breaks_a_tie_at_one_instant(holds):
    # same instant: the later arrival wins, whichever kind it is
    assert holds([invalidated("1", 5, pg13), added("2", 5, pg13)], pg13.key, 5) == ["13"]
    assert holds([added("1", 5, pg13), invalidated("2", 5, pg13)], pg13.key, 5) == []
    assert holds([added("1", 5, pg13), revised("2", 5, pg13, pg14)], pg13.key, 5) == ["14"]


def test_a_fact_asserted_again_at_the_instant_its_dependency_went_starts_afresh(holds):
    events = [
        added("1", 0, exists),
        added("2", 1, pg13, DEPS),
        invalidated("3", 5, exists),
        revalidated("4", 5, pg13),  # at the same instant, without the dependency
    ]
    assert holds(events, pg13.key, 5) == ["13"]


def test_a_late_revalidation_before_the_removal_does_not_save_a_dependent(holds):
    events = [
        added("1", 0, exists),
        added("2", 1, pg13, DEPS),
        invalidated("3", 10, exists),
        revalidated("4", 5, pg13),  # found late; pg13 was still held from day 1 then
    ]
    assert holds(events, pg13.key, 10) == []


@pytest.mark.parametrize("multi", [False, True])
def test_an_ended_fact_added_again_without_the_dependency_is_not_cut_by_it(holds, multi):
    events = [
        added("1", 0, exists),
        added("2", 1, eu, DEPS, multi=multi),
        invalidated("3", 3, eu),
        added("4", 5, eu, multi=multi),  # no dependency this time
        invalidated("5", 10, exists),
    ]
    assert holds(events, eu.key, 10) == ["eu"]


def test_the_second_gap_of_a_dependency_ends_a_fact_asserted_between_the_gaps(holds):
    events = [
        added("1", 0, exists),
        invalidated("2", 5, exists),
        added("3", 7, exists),
        invalidated("4", 9, exists),
        added("5", 12, exists),
        added("6", 8, pg13, DEPS),  # late: held from day 8 until the removal on day 9
    ]
    assert holds(events, exists.key, 12) == ["true"]
    assert holds(events, pg13.key, 12) == []


def test_a_key_declared_multi_valued_earlier_stays_so_for_a_revision_without_the_flag(holds):
    events = [
        added("1", 0, eu, multi=True),
        added("2", 1, us, multi=True),
        revised("3", 2, eu, de),  # no cardinality on this event: the key is multi already
    ]
    assert holds(events, eu.key, 2) == ["de", "us"]


def test_a_revision_that_declares_the_key_multi_valued_ends_the_previous_value(holds):
    events = [added("1", 0, eu), revised("2", 2, eu, de, multi=True)]
    assert holds(events, eu.key, 2) == ["de"]


def test_an_invalidation_can_declare_a_key_multi_valued(holds):
    gone = fact("m", "regions", "ap", "requirement")
    events = [
        added("1", 0, eu),
        added("2", 1, us),
        ChangeEvent("3", "invalidated", day(2), "t", gone, metadata={"cardinality": "multi"}),
    ]
    assert holds(events, eu.key, 2) == ["eu", "us"]


def test_a_value_moved_to_another_key_leaves_the_old_key_single_valued(holds):
    other: Fact = fact("n", "dependency:postgres", "13")
    events = [
        added("1", 0, pg13),
        revised("2", 1, pg13, other),  # moved to another module
        added("3", 2, pg13),
        added("4", 3, pg14),
    ]
    assert holds(events, pg13.key, 3) == ["14"]


def test_a_revalidation_leaves_later_changes_to_apply(holds):
    events = [added("1", 0, pg13), revalidated("2", 1, pg13), revised("3", 2, pg13, pg14)]
    assert holds(events, pg13.key, 2) == ["14"]
    events = [added("1", 0, eu, multi=True), revalidated("2", 1, eu), invalidated("3", 2, eu)]
    assert holds(events, eu.key, 2) == []


def test_a_dependency_cycle_cascades_nothing_around_itself_but_an_explicit_end_still_does(
    holds,
):
    p, q = fact("p", "exists", "true"), fact("q", "exists", "true")
    cycle = [added("1", 0, p, [("q", "exists")]), added("2", 0, q, [("p", "exists")])]
    assert holds(cycle, p.key, 1) == ["true"]
    assert holds([*cycle, invalidated("3", 2, q)], p.key, 3) == []
    assert holds([*cycle, invalidated("3", 2, q)], q.key, 3) == []


def test_a_multi_valued_dependency_with_a_value_left_is_not_removed(holds):
    events = [
        added("1", 0, eu, multi=True),
        added("2", 1, pg13, [("m", "regions")]),
        added("3", 2, us, multi=True),
        invalidated("4", 4, us),
    ]
    assert holds(events, pg13.key, 4) == ["13"]


def test_a_fact_ended_and_asserted_again_at_one_instant_is_current(holds):
    events = [added("1", 5, pg13), invalidated("2", 5, pg13), added("3", 5, pg13)]
    assert holds(events, pg13.key, 5) == ["13"]


def test_the_first_removal_among_several_dependencies_ends_the_fact(holds):
    e1, e2 = fact("m1", "exists", "true"), fact("m2", "exists", "true")
    both = [("m1", "exists"), ("m2", "exists")]
    events = [
        added("1", 0, e1),
        added("2", 0, e2),
        added("3", 1, pg13, both),
        invalidated("4", 5, e2),
        invalidated("5", 8, e1),
        revalidated("6", 6, pg13),  # without dependencies, after the first removal
    ]
    assert holds(events, pg13.key, 8) == ["13"]


def test_a_dependency_in_a_cycle_does_not_hide_another_dependencys_removal(holds):
    p, q, r = (fact(s, "exists", "true") for s in ("p", "q", "r"))
    events = [
        added("1", 0, r),
        added("2", 0, p, [("q", "exists"), ("r", "exists")]),
        added("3", 0, q, [("p", "exists")]),
        invalidated("4", 2, r),
    ]
    assert holds(events, p.key, 2) == []


def test_truth_answers_the_same_whichever_key_of_a_cycle_is_asked_first():
    p, q = fact("p", "exists", "true"), fact("q", "exists", "true")
    events = [
        added("1", 0, p, [("q", "exists")]),
        added("2", 0, q, [("p", "exists")]),
        invalidated("3", 2, p),
    ]
    for first, second in ((p, q), (q, p)):
        truth = GroundTruth(events)
        answers = {f.subject: truth.status(f, day(3)) for f in (first, second)}
        assert answers == {"p": "invalidated", "q": "invalidated"}


def test_every_transitive_dependent_is_reported_touched():
    e = fact("m", "exists", "true")
    a, b, c = (fact("m", p, "1") for p in ("a", "b", "c"))
    truth = GroundTruth(
        [
            added("1", 0, e),
            added("2", 0, a, [("m", "exists")]),
            added("3", 0, b, [("m", "exists"), ("m", "c")]),
            added("4", 0, c, [("m", "exists")]),
        ]
    )
    assert truth.apply(invalidated("5", 1, e)) == {e.key, a.key, b.key, c.key}


def test_a_fact_ended_and_asserted_again_at_one_instant_has_status_current():
    events = [added("1", 5, pg13), invalidated("2", 5, pg13), added("3", 5, pg13)]
    assert GroundTruth(events).status(pg13, day(5)) == "current"


def test_inside_a_cycle_a_dependency_after_the_cyclic_one_still_cascades(holds):
    p, q, r = (fact(s, "exists", "true") for s in ("p", "q", "r"))
    events = [
        added("1", 0, r),
        added("2", 0, p, [("q", "exists")]),
        added("3", 0, q, [("p", "exists"), ("r", "exists")]),
        invalidated("4", 2, r),
    ]
    assert holds(events, p.key, 2) == []
    assert holds(events, q.key, 2) == []


CYCLE_OF_THREE = [
    added("1", 0, fact("a", "exists", "true"), [("b", "exists")]),
    added("2", 0, fact("b", "exists", "true"), [("c", "exists")]),
    added("3", 0, fact("c", "exists", "true"), [("b", "exists"), ("a", "exists")]),
    invalidated("4", 2, fact("a", "exists", "true")),
]


def test_an_explicit_end_cascades_back_through_a_cycle(holds):
    assert holds(CYCLE_OF_THREE, FactKey("b", "exists"), 2) == []


def test_truth_of_a_key_in_a_cycle_does_not_depend_on_which_key_was_asked_before():
    b = fact("b", "exists", "true")
    fresh = GroundTruth(CYCLE_OF_THREE).status(b, day(3))
    truth = GroundTruth(CYCLE_OF_THREE)
    truth.status(fact("a", "exists", "true"), day(3))
    assert truth.status(b, day(3)) == fresh == "invalidated"


def test_a_removal_inside_a_cycle_at_the_instant_of_an_assertion_does_not_end_it(holds):
    p, q = fact("p", "exists", "true"), fact("q", "exists", "true")
    events = [
        added("1", 0, q, [("p", "exists")]),
        invalidated("2", 5, q),
        added("3", 5, p, [("q", "exists")]),  # asserted as q went: nothing after it to cut
    ]
    assert holds(events, p.key, 5) == ["true"]
