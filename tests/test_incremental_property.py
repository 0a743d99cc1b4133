"""Incremental evaluation is an optimisation: on any timeline it gives the numbers full does."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timeline_builders import added, day, fact, revised

from healthd.evaluator import evaluate
from healthd.memory.naive import NaiveMemory
from healthd.memory.reference import ReferenceMemory
from healthd.model import ChangeEvent, FactKey, Probe
from healthd.probes import build_probe_set

PREDICATES = {
    "exists": "tech",
    "lang": "tech",
    "owner": "ownership",
    "choice": "decision",
    "tags": "requirement",
    "mixed": None,
}  # mixed: each value in its own domain
DOMAIN_OF_VALUE = {"1": "tech", "2": "ownership", "3": "decision"}
SHORT = {
    "ownership": timedelta(days=7),
    "tech": timedelta(days=15),
    "decision": timedelta(days=20),
    "requirement": timedelta(days=30),
}

raw_event = st.tuples(
    st.sampled_from(["added", "added", "revised", "revised", "invalidated", "revalidated"]),
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(sorted(PREDICATES)),
    st.sampled_from(["1", "2", "3"]),
    st.sampled_from(["1", "2", "3"]),
    st.integers(min_value=0, max_value=120),
    st.sampled_from([None, "a", "b", "c"]),
)


def build(raw):
    events = []
    for n, (kind, subject, predicate, value, prev, at, depends) in enumerate(raw):
        f = fact(subject, predicate, value, PREDICATES[predicate] or DOMAIN_OF_VALUE[value])
        # Any fact may depend on any module's existence, cycles between modules included.
        deps = (
            (FactKey(depends, "exists"),)
            if depends and (depends, predicate) != (subject, "exists")
            else ()
        )
        meta = {"cardinality": "multi"} if predicate == "tags" else {}
        previous = (
            fact(subject, predicate, prev, PREDICATES[predicate] or DOMAIN_OF_VALUE[prev])
            if kind == "revised"
            else None
        )
        events.append(
            ChangeEvent(
                f"e{n}", kind, day(at), "prop", f, previous=previous, depends_on=deps, metadata=meta
            )
        )
    return events


EXTRA_PROBES = [
    Probe("extra-a-lang", "Is a written in 1 or 2?", "a", "lang", "tech"),
    Probe("extra-b-mixed", "What about b, 1 or 3?", "b", "mixed", "tech"),
]


def stage_metrics(events, make_memory, mode, window):
    result = evaluate(
        events,
        make_memory(),
        build_probe_set(events, EXTRA_PROBES),
        name="t",
        kind="t",
        mode=mode,
        windows=SHORT,
        forgetting_window=window,
    )
    return [s.metrics for s in result.stages], result.probe_queries


memories = st.sampled_from(
    [
        lambda: NaiveMemory(),
        lambda: ReferenceMemory(ttl_windows=SHORT, grace=0.5),
        lambda: ReferenceMemory(ttl_windows=SHORT, supersession=False),
        lambda: ReferenceMemory(ttl_windows=SHORT, propagation=False, top_k=1),
        lambda: ReferenceMemory(ttl_windows=SHORT, supersession=False, top_k=1),
        lambda: ReferenceMemory(ttl=False),
    ]
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    raw=st.lists(raw_event, min_size=1, max_size=30),
    make_memory=memories,
    window=st.integers(min_value=1, max_value=3),
)
def test_incremental_equals_full_on_random_timelines(raw, make_memory, window):
    events = build(raw)
    full, full_queries = stage_metrics(events, make_memory, "full", window)
    incremental, inc_queries = stage_metrics(events, make_memory, "incremental", window)
    assert incremental == full
    assert inc_queries <= full_queries


def both_modes(events, make_memory, extra=()):
    return [
        [
            s.metrics
            for s in evaluate(
                events, make_memory(), build_probe_set(events, extra), name="t", kind="t", mode=mode
            ).stages
        ]
        for mode in ("full", "incremental")
    ]


def test_a_stage_exactly_at_an_expiry_sees_the_record_expired_in_both_modes():
    alice = fact("svc", "lead", "alice", "tech")  # tech TTL 90 days
    bob = fact("svc", "lead", "bob", "ownership")  # ownership TTL 30 days: expires day 40
    other, other2 = fact("other", "x", "1"), fact("other", "x", "2")
    events = [
        added("e1", 0, alice),
        added("e2", 10, bob),
        added("e3", 39.5, other),
        revised("e4", 40, other, other2),
        revised("e5", 41, other2, other),
    ]
    full, incremental = both_modes(events, lambda: ReferenceMemory(supersession=False, top_k=1))
    assert incremental == full
    assert full[3]["all"].contamination == full[4]["all"].contamination


def test_writes_to_other_keys_or_namespaces_do_not_reorder_a_keys_answer(tmp_path):
    node, go = fact("auth", "language", "node"), fact("auth", "language", "go")
    events = [added("e1", 0, node), revised("e2", 1, node, go)] + [
        added(f"o{i}", 2 + i, fact(f"svc{i}", "language", "go")) for i in range(3)
    ]
    extra = [Probe("f1", "Is auth written in node or go?", "auth", "language", "tech")]
    full, incremental = both_modes(
        events, lambda: ReferenceMemory(supersession=False, top_k=1), extra
    )
    assert incremental == full
    path = str(tmp_path / "shared.sqlite")
    mine = ReferenceMemory(path=path, namespace="A", supersession=False, top_k=1)
    theirs = ReferenceMemory(path=path, namespace="B")
    for event in events[:2]:
        mine.apply(event)
    before = [f.value for f in mine.answer(extra[0], day(5)).facts]
    for i in range(3):
        theirs.apply(added(f"b{i}", 2, fact(f"x{i}", "language", "node")))
    assert [f.value for f in mine.answer(extra[0], day(5)).facts] == before
