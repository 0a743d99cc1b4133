"""Edges of the measurement, worked out by hand from DESIGN.md: each pins a number that a
plausible slip in truth, scoring or the evaluator would change (mutation testing found each
one unguarded). Both evaluation modes must give the same numbers."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

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

from healthd.evaluator import Replay, evaluate
from healthd.memory.fingerprint import RetrievalFingerprint
from healthd.memory.naive import NaiveMemory
from healthd.memory.reference import ReferenceMemory
from healthd.model import HISTORICAL, RETRIEVAL_CHANGED, Answer, FactKey, Probe, RetrievedFact
from healthd.probes import ProbeSet, build_probe_set
from healthd.reading.default import DefaultReader
from healthd.truth import GroundTruth

A, B = FactKey("a", "lang"), FactKey("b", "lang")
a1, b1, b2 = fact("a", "lang", "1"), fact("b", "lang", "1"), fact("b", "lang", "2")


@pytest.fixture(params=["full", "incremental"])
def mode(request):
    return request.param


def stages(events, memory, mode, probes=None, **options):
    probes = build_probe_set(events) if probes is None else probes
    replay = Replay(memory, probes, mode=mode, **options)
    return [replay.step(e) for e in events]


def padding(start: int, count: int, at: float = 50):
    return [
        added(f"pad{n}", at + n, fact("pad", f"k{n}", "v")) for n in range(start, start + count)
    ]


# -- forgetting ---------------------------------------------------------------------------


def test_a_fact_that_ends_twice_is_judged_twice(mode):
    key = FactKey("s", "p")
    x, y = fact("s", "p", "x"), fact("s", "p", "y")
    events = [
        added("1", 1, x),
        revised("2", 2, x, y),  # x ends: judged at stage 5
        *padding(0, 3, 3),
        revised("6", 10, y, x),  # x current again (y ends, current again by its check)
        revised("7", 11, x, y),  # x ends a second time: judged at stage 10
        *padding(3, 3, 12),
    ]
    script = {
        "1": {key: [record(x, 1)]},
        "2": {key: [record(x, 1), record(y, 2)]},  # still holds x at the first check
        "7": {key: [record(y, 11)]},  # x gone by the second
    }
    result = stages(events, ScriptedMemory(script), mode)
    assert [s.metrics["all"].forgetting for s in result] == [None] * 4 + [0.0] * 5 + [0.5]


def test_a_value_ended_again_while_it_is_ended_is_not_judged_again(mode):
    """a1 and 2 are revised away (each judged once, a1 forgotten, 2 still served); ending a1
    once more, with no stage seeing it current in between, is no new end to judge."""
    events = [
        added("1", 0, a1),
        revised("2", 1, a1, LANG_2),
        revised("3", 2, LANG_2, LANG_3),
        *padding(0, 2),
        invalidated("6", 5, a1),
        *padding(2, 2),
    ]
    script = {"1": {A: [record(a1, 0)]}, "3": {A: [record(LANG_2, 1), record(LANG_3, 2)]}}
    result = stages(events, ScriptedMemory(script), mode, forgetting_window=1)
    assert [s.metrics["all"].forgetting for s in result] == [None, None, 1.0] + [0.5] * 5


def test_ending_a_value_the_key_never_held_is_no_ended_fact(mode):
    events = [added("1", 1, a1), invalidated("2", 2, fact("a", "lang", "9")), *padding(0, 4)]
    result = stages(events, NaiveMemory(), mode)
    assert result[-1].metrics["all"].forgetting is None


def test_a_fact_that_arrives_already_ended_is_judged(mode):
    x = fact("s", "p", "x")
    events = [invalidated("1", 5, x), added("2", 1, x), *padding(0, 4)]
    result = stages(events, NaiveMemory(), mode)
    assert result[-1].metrics["all"].forgetting == 0.0  # one check, naive kept it


def test_an_unknown_value_does_not_hide_another_value_ending_at_the_same_stage(mode):
    x, y, z = (fact("s", "p", v) for v in ("x", "y", "z"))
    events = [
        invalidated("1", 0, y),  # y: never held, first of the key's values
        added("2", 1, x),
        revised("3", 2, y, z),  # revises y (unknown still) and ends x by supersession
        *padding(0, 4),
    ]
    result = stages(events, NaiveMemory(), mode)
    assert result[-1].metrics["all"].forgetting == 0.0  # x was checked


# -- truth ---------------------------------------------------------------------------------


def test_a_revision_moving_a_fact_onto_an_open_multi_valued_key_ends_the_old_key():
    tags = FactKey("s", "tags")
    events = [
        added("1", 0, fact("s", "tags", "eu"), multi=True),
        added("2", 1, a1),
        revised("3", 2, a1, fact("s", "tags", "us"), multi=True),
    ]
    truth = GroundTruth(events)
    assert truth.current(A, day(2)) == []
    assert [f.value for f in truth.current(tags, day(2))] == ["eu", "us"]


def test_a_multi_valued_declaration_carried_by_an_invalidation_counts():
    eu, us, de = (fact("s", "tags", v) for v in ("eu", "us", "de"))
    declared = invalidated("2", 1, de)
    declared = type(declared)(
        declared.id, declared.type, declared.timestamp, declared.source, declared.fact,
        reason="gone", metadata={"cardinality": "multi"},
    )  # fmt: skip
    events = [added("1", 0, eu), declared, added("3", 2, us)]
    truth = GroundTruth(events)
    assert truth.multi_valued(FactKey("s", "tags"))
    assert [f.value for f in truth.current(FactKey("s", "tags"), day(2))] == ["eu", "us"]


def test_a_multi_valued_declaration_carried_by_a_revision_counts():
    """The revision ends ``eu`` and declares the key multi-valued: a later ``apac`` joins
    ``us`` instead of superseding it, in truth and in the reference memory alike."""
    from healthd.memory.reference import ReferenceMemory
    from healthd.model import Probe
    from healthd.probes import generated_probe_id, question_for

    eu, us, apac = (fact("s", "tags", v) for v in ("eu", "us", "apac"))
    events = [added("1", 0, eu), revised("2", 1, eu, us, multi=True), added("3", 2, apac)]
    key = FactKey("s", "tags")
    assert [f.value for f in GroundTruth(events).current(key, day(3))] == ["apac", "us"]
    memory = ReferenceMemory()
    for event in events:
        memory.apply(event)
    probe = Probe(generated_probe_id(key), question_for("s", "tags", "tech"), "s", "tags", "tech")
    assert sorted(f.value for f in memory.answer(probe, day(3)).facts) == ["apac", "us"]


# -- scoring -------------------------------------------------------------------------------


def test_a_historical_fact_does_not_stop_the_facts_after_it_being_scored(mode):
    events = [added("1", 0, a1)]
    script = {"1": {A: [record(a1, 0, HISTORICAL, rid="h"), record(a1, 0)]}}
    (stage,) = stages(events, ScriptedMemory(script), mode)
    m = stage.metrics["all"]
    assert (m.consistency, m.coverage, m.freshness) == (1.0, 1.0, 1.0)


def test_freshness_reads_the_validation_time_not_the_write_time(mode):
    # naive writes the late event at the clock (day 200) but validates it at day 1
    events = [added("1", 200, b1), added("2", 1, a1)]
    result = stages(events, NaiveMemory(), mode)
    assert result[-1].metrics["all"].freshness == 0.5  # a1 is 199 days old: stale for tech


@pytest.mark.parametrize(
    ("validated", "fresh"),
    [(None, 1.0), (datetime(9999, 12, 31, tzinfo=UTC), 1.0)],
    ids=["missing: the write time", "in 9999"],
)
def test_a_missing_or_far_validation_time(mode, validated, fresh):
    events = [added("1", 0, a1), added("2", 100, b1)]
    served = RetrievedFact("a", "lang", "1", "tech", "r", day(95), validated)
    script = {"1": {A: [served]}}
    result = stages(events, ScriptedMemory(script), mode)
    assert result[-1].metrics["tech"].freshness == fresh
    stale = RetrievedFact("a", "lang", "1", "tech", "r", day(0), None)
    late = stages(events, ScriptedMemory({"1": {A: [stale]}}), mode)
    assert late[-1].metrics["tech"].freshness == 0.0  # written day 0, nothing newer: stale


# -- the evaluator -------------------------------------------------------------------------


def test_full_mode_asks_every_probe_at_every_stage():
    events = [added("1", 0, a1), added("2", 1, b1), revised("3", 2, b1, b2)]
    memory = ScriptedMemory({})
    result = evaluate(events, memory, build_probe_set(events), name="s", kind="s", mode="full")
    assert result.probe_queries == memory.asked == 1 + 2 + 2  # sum of |P_i|
    incremental = ScriptedMemory({})
    evaluate(events, incremental, build_probe_set(events), name="s", kind="s")
    assert incremental.asked < memory.asked


def test_a_cascade_rescores_a_probe_its_memory_did_not_change(mode):
    exists = fact("m", "exists", "true")
    dep = fact("m", "dependency:pg", "13")
    events = [
        added("1", 0, exists),
        added("2", 1, dep, [("m", "exists")]),
        invalidated("3", 2, exists),
    ]
    served = {FactKey("m", "dependency:pg"): [record(dep, 1)]}
    result = stages(events, ScriptedMemory({"2": served}), mode)
    m = result[-1].metrics["all"]
    # dependency:pg ended with its module; the memory still serves it
    assert m.consistency == 0.0
    assert m.contamination == 0.5


def test_an_answer_holding_another_key_s_fact_is_rescored_when_that_key_changes(mode):
    events = [added("1", 0, a1), added("2", 1, b1), revised("3", 2, b1, b2)]
    script = {
        "1": {A: [record(a1, 0)]},
        "2": {A: [record(a1, 0), record(b1, 1)], B: [record(b1, 1)]},
        "3": {B: [record(b2, 2)]},  # A's answer is untouched: it still holds b = 1
    }
    result = stages(events, ScriptedMemory(script), mode)
    m = result[-1].metrics["all"]
    assert m.contamination == 0.5  # A's answer holds a superseded fact, B's does not
    assert m.consistency == pytest.approx(2 / 3)


def test_a_cascade_rescores_the_coverage_of_a_probe_whose_answer_is_empty(mode):
    exists = fact("m", "exists", "true")
    dep = fact("m", "dependency:pg", "13")
    events = [
        added("1", 0, exists),
        added("2", 1, dep, [("m", "exists")]),
        invalidated("3", 2, exists),
    ]
    served = {FactKey("m", "exists"): [record(exists, 0)]}  # never learnt dependency:pg
    result = stages(events, ScriptedMemory({"1": served}), mode)
    assert result[1].metrics["all"].coverage == 0.5
    assert result[2].metrics["all"].coverage is None  # nothing is current any more


def test_a_served_value_the_key_never_held_is_reported_unknown(mode):
    """The report's drill-down says what each served fact was at the stage: a value the
    timeline never gave the key is ``unknown``, not current, superseded or invalidated."""
    events = [added("1", 1, a1), revised("2", 2, a1, fact("a", "lang", "2"))]
    script = {
        "1": {A: [record(a1, 1)]},
        "2": {A: [record(fact("a", "lang", "made-up"), 2), record(a1, 1)]},
    }
    result = evaluate(
        events, ScriptedMemory(script), build_probe_set(events), name="s", kind="s", mode=mode
    )
    (probe,) = result.probes
    assert [(f.value, status) for f, status in probe.retrieved] == [
        ("made-up", "unknown"),
        ("1", "superseded"),
    ]


# -- the daemon's paths: a probe set that grows, a restart ---------------------------------


@pytest.mark.parametrize("memory", [ScriptedMemory, ReferenceMemory])
def test_a_probe_added_for_a_key_already_held_counts_from_the_switch_as_if_always_there(memory):
    events = [added("1", 0, a1), added("2", 1, b1), revised("3", 2, b1, b2)] + padding(0, 2)
    asked_twice = Probe("b-by-hand", "What is b written in?", "b", "lang", "tech", origin="file")
    grown = build_probe_set(events, [asked_twice])

    def make():  # the scripted memory keeps serving b = 1 after the revision
        return ScriptedMemory({"2": {B: [record(b1, 1)]}}) if memory is ScriptedMemory else memory()

    always = stages(events, make(), "incremental", probes=grown)
    replay = Replay(make(), build_probe_set(events))
    late = [replay.step(e) for e in events[:3]]
    if memory is ScriptedMemory:
        assert late[-1].metrics["all"] != always[2].metrics["all"]
    assert replay.update_probes(grown, {B}) == [asked_twice]
    assert replay.metrics()["all"] == always[2].metrics["all"]
    assert "b-by-hand" in [r.probe.id for r in replay.report()]
    late += [replay.step(e) for e in events[3:]]
    assert [s.counts for s in late[3:]] == [s.counts for s in always[3:]]


def restarted(events, cut, memory, how, **options):
    """The daemon's restart after ``cut`` events, beside the same memory (which keeps what
    it was given): from a snapshot (the events applied again to truth, every probe asked
    once), or resumed from the exported state as the persistent shadow's store reads it."""
    replay = Replay(memory, build_probe_set(events), **options)
    before = [replay.step(e) for e in events[:cut]]
    probes = build_probe_set(events)
    if how == "snapshot":
        snapshot = replay.snapshot()
        replay = Replay.restore(memory, probes, events[:cut], snapshot, **options)
        assert replay.stats.probe_queries == snapshot["probe_queries"] + replay.active_probes
    else:
        truth = GroundTruth()
        for event in events[:cut]:
            truth.apply(event)
        was_current: dict = {}
        for (key, value), current in replay.was_current.items():
            was_current.setdefault(key, {})[value] = current
        counters, answers, scores = replay.counters(), dict(replay.answers), dict(replay.scores)
        replay = Replay.resume(
            memory, probes, truth, counters, was_current, answers, scores, **options
        )
        assert replay.stats.probe_queries == counters["probe_queries"]
    assert replay.stats.events == cut
    return before + [replay.step(e) for e in events[cut:]]


LANG_2, LANG_3, LANG_4 = (fact("a", "lang", v) for v in "234")


@pytest.mark.parametrize("how", ["snapshot", "resume"])
@pytest.mark.parametrize(
    "events, cut, memory",
    [
        # a1 is current at the restart and revised away after it: judged once, after
        ([added("1", 0, a1), revised("2", 1, a1, LANG_2)] + padding(0, 2), 1, NaiveMemory),
        # a1 was revised away (and judged) before the restart; the key moves again after it
        (
            [added("1", 0, a1), revised("2", 1, a1, LANG_2)]
            + padding(0, 2)
            + [added("3", 5, fact("a", "lang", "3"), multi=True)]
            + padding(2, 2),
            4,
            NaiveMemory,
        ),
        # a's answer holds b's fact, and b is revised after the restart
        (
            [added("1", 0, a1), added("2", 1, b1), revised("3", 2, b1, b2)],
            2,
            lambda: ScriptedMemory(
                {"1": {A: [record(a1, 0)]}, "2": {A: [record(a1, 0), record(b1, 1)]}}
            ),
        ),
        # a's record goes stale after the restart, with nothing else said about a
        ([added("1", 0, a1)] + padding(0, 2, at=400), 1, NaiveMemory),
        # two of a's values ended before the restart; both are ended again after it (no new
        # end to judge), then the third is revised away (judged once, after)
        (
            [added("1", 0, a1), revised("2", 1, a1, LANG_2), revised("3", 2, LANG_2, LANG_3)]
            + padding(0, 2)
            + [invalidated("4", 5, a1), invalidated("5", 6, LANG_2)]
            + [revised("6", 7, LANG_3, LANG_4)]
            + padding(2, 2),
            5,
            NaiveMemory,
        ),
        # a memory that cannot say which keys changed
        ([added("1", 0, a1), revised("2", 1, a1, LANG_2)] + padding(0, 2), 1, lambda: Untracked()),
        # two of a's values ended before the restart, its third is revised away after it
        # (judged once) and a is touched twice more: what a's stored state said is taken once
        (
            [added("1", 0, a1), revised("2", 1, a1, LANG_2), revised("3", 2, LANG_2, LANG_3)]
            + padding(0, 2)
            + [revised("4", 5, LANG_3, LANG_4), revalidated("5", 6, LANG_4)]
            + [revalidated("6", 7, LANG_4)]
            + padding(2, 2),
            5,
            NaiveMemory,
        ),
    ],
    ids=[
        "current at the restart",
        "ended before the restart",
        "another key's fact served",
        "stale after the restart",
        "two ended before the restart",
        "untracked memory",
        "touched again after the restart",
    ],
)
def test_a_restart_changes_no_number(events, cut, memory, how):
    straight = stages(events, memory(), "incremental", forgetting_window=1)
    after = restarted(events, cut, memory(), how, forgetting_window=1)
    assert straight[-1].metrics != straight[cut - 1].metrics  # the case moves a number
    assert [s.counts for s in after] == [s.counts for s in straight]


class AnswersOneQuestion(ScriptedMemory):
    """Serves its script only to probes of one origin; the other probe gets nothing."""

    def __init__(self, script, origin):
        super().__init__(script)
        self.origin = origin

    def answer(self, probe, at):
        answer = super().answer(probe, at)
        return answer if probe.origin == self.origin else Answer(probe.id, ())


@pytest.mark.parametrize(("served_to", "forgetting"), [("generated", 0.0), ("file", 1.0)])
def test_forgetting_asks_the_key_s_generated_probe_not_a_hand_written_one(served_to, forgetting):
    """A probe file's own question about a key does not change how its ended facts are
    judged: forgetting reads the answer of the key's generated probe."""
    events = [added("1", 0, a1), invalidated("2", 1, a1)] + padding(0, 2)
    by_hand = Probe("a-by-hand", "Which language is a in?", "a", "lang", "tech", origin="file")
    memory = AnswersOneQuestion({"1": {A: [record(a1, 0)]}}, served_to)
    probes = ProbeSet((by_hand, *build_probe_set(events)))  # whatever order they come in
    result = stages(events, memory, "incremental", probes, forgetting_window=1)
    assert result[-1].metrics["all"].forgetting == forgetting


def swept(id, at, f):
    event = revalidated(id, at, f)
    return replace(event, metadata={**event.metadata, "revalidation": "sweep"})


@pytest.mark.parametrize(
    ("tail", "last_change"),
    [
        ([swept("3", 200, a1), swept("4", 300, a1)], "2"),  # sweeps after the last change
        ([revalidated("3", 200, a1)], None),  # a revalidation seen in the world is a change
        ([swept("3", 200, a1), added("4", 300, b1)], None),  # a change after the sweep
        ([], None),
    ],
    ids=["sweeps last", "plain revalidation last", "change after a sweep", "no sweep"],
)
def test_the_last_change_before_trailing_revalidation_sweeps_is_reported(tail, last_change):
    events = [added("1", 0, b1), added("2", 1, a1), *tail]
    result = evaluate(events, NaiveMemory(), build_probe_set(events), name="n", kind="n")
    assert result.events == len(events)
    assert (result.last_change and result.last_change.event_id) == last_change
    if last_change:  # scored both before and after the sweeps
        assert result.last_change.metrics != result.metrics


class DeclaresItsRetrieval(NaiveMemory):
    def retrieval_fingerprint(self):
        return RetrievalFingerprint.of("all-MiniLM-L6-v2", 384, {"qdrant-client": "1.12.0"})


def test_the_result_carries_the_memory_s_retrieval_and_the_reader_that_read_it():
    events = [added("1", 0, a1), added("2", 3, b1)]
    result = evaluate(events, DeclaresItsRetrieval(), build_probe_set(events), name="n", kind="n")
    assert result.at == day(3)
    assert (result.retrieval.embedder, result.retrieval.dimensions) == ("all-MiniLM-L6-v2", 384)
    assert result.retrieval.libraries == (("qdrant-client", "1.12.0"),)
    assert result.retrieval.reader == result.reader == DefaultReader().label


class Untracked:
    """A memory that cannot say which keys changed: the naive memory without changed_keys."""

    kind = "untracked"

    def __init__(self):
        self.inner = NaiveMemory()

    def reset(self):
        self.inner.reset()

    def apply(self, event):
        self.inner.apply(event)

    def answer(self, probe, at):
        return self.inner.answer(probe, at)

    def close(self):
        self.inner.close()


def test_a_memory_that_cannot_say_what_changed_is_asked_everything_again():
    events = [added("1", 0, a1), added("2", 1, b1), revised("3", 2, b1, b2)] + padding(0, 2)
    incremental = stages(events, Untracked(), "incremental")
    assert [s.counts for s in incremental] == [
        s.counts for s in stages(events, Untracked(), "full")
    ]
    assert [s.index for s in incremental] == [1, 2, 3, 4, 5]


def test_an_empty_timeline_has_no_instant_and_no_number():
    result = evaluate([], NaiveMemory(), build_probe_set([]), name="n", kind="n")
    assert result.at is None and result.stages == [] and result.events == 0
    assert result.metrics["all"].consistency is None


def test_an_unknown_mode_is_named():
    with pytest.raises(ValueError, match="unknown mode 'partial'"):
        Replay(NaiveMemory(), build_probe_set([]), mode="partial")


def test_served_facts_written_under_another_retrieval_are_counted_one_each():
    events = [added("1", 0, a1), added("2", 1, b1)]
    script = {"2": {A: [record(a1, 0, RETRIEVAL_CHANGED)], B: [record(b1, 1, RETRIEVAL_CHANGED)]}}
    result = evaluate(events, ScriptedMemory(script), build_probe_set(events), name="s", kind="s")
    assert result.retrieval_changed == 2


def test_the_count_of_facts_served_under_another_retrieval_follows_every_answer(mode):
    """Read after each stage, as the daemon reads it after each run: a count taken before
    an answer changed is not served again after it."""
    events = [added("1", 0, a1), added("2", 1, b1), added("3", 2, fact("c", "lang", "1"))]
    script = {
        "1": {A: [record(a1, 0, RETRIEVAL_CHANGED)]},
        "2": {B: [record(b1, 1, RETRIEVAL_CHANGED)]},
        "3": {A: [record(a1, 0)]},
    }
    replay = Replay(ScriptedMemory(script), build_probe_set(events), mode=mode)
    counted = []
    for event in events:
        replay.step(event)
        counted.append(replay.retrieval_changed_items())
        counted.append(replay.retrieval_changed_items())  # asked twice, nothing in between
    assert counted == [1, 1, 2, 2, 1, 1]


def test_a_history_of_sweeps_alone_has_no_last_change():
    events = [swept("1", 0, a1), swept("2", 1, a1)]
    result = evaluate(events, NaiveMemory(), build_probe_set(events), name="n", kind="n")
    assert result.last_change is None


# -- what a replay hands out ----------------------------------------------------------------


def test_a_probe_s_retrieved_reads_as_the_tuple_of_its_fact_status_pairs():
    events = [added("1", 0, a1), revised("2", 1, a1, LANG_2), added("3", 2, b1)]
    result = evaluate(events, NaiveMemory(), build_probe_set(events), name="n", kind="n")
    retrieved = next(p.retrieved for p in result.probes if p.probe.key == A)
    pairs = tuple(retrieved)
    assert [(f.value, status) for f, status in pairs] == [("2", "current"), ("1", "superseded")]
    assert len(retrieved) == 2 and retrieved[1] == pairs[1] and retrieved[-2] == pairs[0]
    assert retrieved[1:] == pairs[1:] and retrieved[::-1] == pairs[::-1]
    assert retrieved == pairs and retrieved != pairs[:1]
    assert hash(retrieved) == hash(pairs) and repr(retrieved) == repr(pairs)


def test_which_values_a_stage_looked_at_reads_as_a_mapping():
    """What the daemon saves of a replay (which values were current when last looked at)."""
    events = [added("1", 0, a1), revised("2", 1, a1, LANG_2), revised("3", 2, LANG_2, LANG_3)]
    replay = Replay(NaiveMemory(), build_probe_set(events))
    for event in events:
        replay.step(event)
    seen = replay.was_current
    assert dict(seen) == {(A, "1"): False, (A, "2"): False, (A, "3"): True}
    assert len(seen) == 3 and seen[A, "2"] is False and (A, "3") in seen
    with pytest.raises(KeyError, match="'9'"):
        seen[A, "9"]
    assert (B, "1") not in seen


def test_an_answer_holding_another_predicate_of_its_subject_is_scored_again_when_that_changes():
    """a/lang's answer also serves a/owner's x; only a/owner is written when x is revised
    away, yet a/lang's answer now serves an ended fact: incremental scores it as full does."""
    owner = FactKey("a", "owner")
    x, y = fact("a", "owner", "x"), fact("a", "owner", "y")
    events = [added("1", 0, a1), added("2", 1, x), revised("3", 2, x, y), *padding(0, 2)]
    script = {
        "1": {A: [record(a1, 0)]},
        "2": {A: [record(a1, 0), record(x, 1)], owner: [record(x, 1)]},
        "3": {owner: [record(y, 2)]},
    }
    full, incremental = (stages(events, ScriptedMemory(script), m) for m in ("full", "incremental"))
    assert full[2].metrics["all"].contamination != full[1].metrics["all"].contamination
    assert [s.counts for s in incremental] == [s.counts for s in full]


def test_a_key_held_in_two_answers_still_rescores_the_one_left_when_the_other_lets_go():
    """a's and b's answers both serve c's fact; a's moves on to d's. c is then revised away:
    b, whose answer still serves it, is scored again though only c was written."""
    c1, c2, d1 = fact("c", "lang", "1"), fact("c", "lang", "2"), fact("d", "lang", "1")
    C, D = FactKey("c", "lang"), FactKey("d", "lang")
    events = [
        added("1", 0, a1),
        added("2", 1, b1),
        added("3", 2, c1),
        added("4", 3, d1),
        revised("5", 4, c1, c2),
        *padding(0, 2),
    ]
    script = {
        "3": {
            A: [record(a1, 0), record(c1, 2)],
            B: [record(b1, 1), record(c1, 2)],
            C: [record(c1, 2)],
        },
        "4": {A: [record(a1, 0), record(d1, 3)], D: [record(d1, 3)]},
        "5": {C: [record(c2, 4)]},
    }
    full, incremental = (stages(events, ScriptedMemory(script), m) for m in ("full", "incremental"))
    assert full[4].metrics["all"].contamination != full[3].metrics["all"].contamination
    assert [s.counts for s in incremental] == [s.counts for s in full]
