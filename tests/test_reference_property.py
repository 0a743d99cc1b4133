"""The reference memory with every mechanism on serves only what is true, in any arrival order.

On random timelines (backdated removals and re-adds, cross-key revisions, multi-valued keys,
dependency chains and cycles), while no TTL has elapsed, every stage scores consistency 1.0 and
contamination 0.0 against the ground truth, and with room for every value, coverage 1.0.
Dependency cycles included: around a cycle nothing cascades, an explicit end in it does.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_timelines import EXAMPLES, SHORT_TTL, timelines
from timeline_builders import added, fact, invalidated, revalidated

from healthd.evaluator import evaluate
from healthd.memory.reference import ReferenceMemory
from healthd.model import ChangeEvent
from healthd.probes import build_probe_set

NEVER_ELAPSED = {
    d: timedelta(days=10_000) for d in ("tech", "ownership", "decision", "requirement")
}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=timelines())
def test_the_reference_memory_serves_only_current_facts_on_random_timelines(events):
    memory = ReferenceMemory(ttl_windows=NEVER_ELAPSED, top_k=10)
    result = evaluate(
        events, memory, build_probe_set(events), name="r", kind="reference", windows=NEVER_ELAPSED
    )
    for stage in result.stages:
        for bucket, m in stage.metrics.items():
            where = (stage.event_id, bucket)
            assert m.consistency in (None, 1.0), where
            assert m.contamination in (None, 0.0), where
            assert m.coverage in (None, 1.0), where
            assert m.conflicts == 0, where


@settings(
    max_examples=max(1, EXAMPLES // 4), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(events=timelines())
def test_answers_read_from_the_key_cache_equal_the_table_s_on_random_timelines(
    events, tmp_path_factory
):
    """The memory answers from its per-key cache when it holds one; a second process on the
    same file, with nothing cached, reads the table. Both must return the same records, flags
    and order, at each event's time and after short TTLs have soft-expired and purged them."""
    path = tmp_path_factory.mktemp("shadow") / "shadow.sqlite"
    writer = ReferenceMemory(path=str(path), ttl_windows=SHORT_TTL, top_k=10)
    reader = ReferenceMemory(path=str(path), ttl_windows=SHORT_TTL, top_k=10)
    probes = build_probe_set(events)
    try:
        for event in events:
            writer.apply(event)
            _answer_alike(writer, reader, probes, event)
    finally:
        writer.close()
        reader.close()


@settings(
    max_examples=max(1, EXAMPLES // 4), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(events=timelines())
def test_a_private_database_replays_as_one_in_memory_on_random_timelines(events):
    """`evaluate`'s private database defers writes to each batch's end, keeps only the
    indexes its reads use and fills its full-text index on demand. In small batches, with its
    cache let go of every few events (so keys are read back from the tables between and
    within batches), every stage and every final answer is an in-memory shadow's. It keeps
    one or two ended records a key (the shadow its default few), so a fold that reaches
    back past them reads the rest back from the table."""
    probes = build_probe_set(events)

    def replay(memory, on_stage=None):
        return evaluate(
            events, memory, probes, name="r", kind="reference", windows=SHORT_TTL,
            on_stage=on_stage,
        )  # fmt: skip

    private = ReferenceMemory(path="", ttl_windows=SHORT_TTL, top_k=10)
    private.private_batch = 3
    private.ended_kept = 1
    released = replay(private, lambda stage: stage.index % 4 or private.release(2))
    shadow = ReferenceMemory(ttl_windows=SHORT_TTL, top_k=10)
    expected = replay(shadow)
    assert [s.counts for s in released.stages] == [s.counts for s in expected.stages]
    assert released.probes == expected.probes
    # the rows too: records inserted at a batch's end have the ids, columns and replacements
    # those inserted as they came have
    for rows in (
        "SELECT * FROM records ORDER BY id",
        "SELECT * FROM record_deps ORDER BY record_id, subject, predicate",
    ):
        assert private.state_db().execute(rows).fetchall() == (
            shadow.state_db().execute(rows).fetchall()
        )
    private.close()


@settings(
    max_examples=max(1, EXAMPLES // 8), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(events=timelines(), data=st.data())
def test_a_shadow_reopened_at_any_point_answers_as_one_never_closed_on_random_timelines(
    events, data, tmp_path_factory
):
    """The daemon's shadow is closed and reopened at a restart: its clock, sequence and any
    dependency cycle already stored (which only its next folds can find again) are read
    back, so every answer after the restart is the one an unbroken shadow gives."""
    cut = data.draw(st.integers(0, len(events)), label="reopened after")
    probes = build_probe_set(events)
    path = str(tmp_path_factory.mktemp("shadow") / "shadow.sqlite")
    first = ReferenceMemory(path=path, ttl_windows=SHORT_TTL, top_k=10)
    for event in events[:cut]:
        first.apply(event)
    first.close()
    reopened = ReferenceMemory(path=path, ttl_windows=SHORT_TTL, top_k=10)
    unbroken = ReferenceMemory(ttl_windows=SHORT_TTL, top_k=10)
    # as a replay starts: the unbroken one holds every key's dependents from the start, the
    # reopened one reads a key's from its tables when first asked for
    unbroken.reset()
    try:
        for event in events[:cut]:
            unbroken.apply(event)
        for event in events[cut:]:
            reopened.apply(event)
            unbroken.apply(event)
            _answer_alike(reopened, unbroken, probes, event)
    finally:
        reopened.close()
        unbroken.close()


@st.composite
def cycles_with_an_outside_cause(draw: st.DrawFn) -> list[ChangeEvent]:
    """A dependency cycle of 2 or 3 keys, one of them depending on a key outside it too; that
    key's value ends, then something keeps it or brings it back (a second value of a
    multi-valued key, the value added again, re-validated), in any arrival order."""
    size = draw(st.integers(2, 3))
    ring = [fact(f"c{n}", "exists", "1") for n in range(size)]
    outside, second = fact("w", "exists", "1"), fact("w", "exists", "2")
    t = st.integers(0, 12)
    events = [added("w", draw(t), outside)]
    for n, member in enumerate(ring):
        deps = [(f"c{(n + 1) % size}", "exists")] + ([("w", "exists")] if n == 0 else [])
        events.append(added(member.subject, draw(t), member, deps))
    events.append(invalidated("w-", draw(t), outside))
    rescue = draw(st.sampled_from(["second-value", "added-again", "revalidated"]))
    at = draw(t)
    if rescue == "second-value":
        events.append(added("w+", at, second, multi=True))
    elif rescue == "added-again":
        events.append(added("w+", at, outside))
    else:
        events.append(revalidated("w+", at, outside))
    return draw(st.permutations(events))


@settings(max_examples=max(1, EXAMPLES // 4), deadline=None)
@given(events=cycles_with_an_outside_cause())
def test_a_cycle_is_removed_only_while_its_cause_outside_holds(events):
    """Around a cycle a removal must not keep itself alive once what caused it is gone: the
    reference memory serves what truth holds at every stage."""
    memory = ReferenceMemory(ttl=False)
    result = evaluate(events, memory, build_probe_set(events), name="r", kind="reference")
    for stage in result.stages:
        m = stage.metrics["all"]
        where = (stage.event_id, [e.id for e in events])
        assert m.coverage in (None, 1.0) and m.consistency in (None, 1.0), where


def _answer_alike(memory, other, probes, event) -> None:
    """Every probe gets the same answer from both, at the event's time and once short TTLs
    have soft-expired and purged what it wrote."""
    for probe in probes:
        for at in (event.timestamp, event.timestamp + timedelta(days=25)):
            assert memory.answer(probe, at) == other.answer(probe, at), (event.id, probe.key, at)
