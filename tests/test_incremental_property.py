"""Incremental evaluation is an optimisation: on any timeline it gives the numbers full does."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from healthd.evaluator import evaluate
from healthd.memory.naive import NaiveMemory
from healthd.memory.reference import ReferenceMemory
from healthd.model import ChangeEvent, FactKey
from healthd.probes import build_probe_set
from timeline_builders import day, fact

PREDICATES = {"exists": "tech", "lang": "tech", "owner": "ownership", "choice": "decision",
              "tags": "requirement"}
SHORT = {"ownership": timedelta(days=7), "tech": timedelta(days=15),
         "decision": timedelta(days=20), "requirement": timedelta(days=30)}

raw_event = st.tuples(
    st.sampled_from(["added", "added", "revised", "revised", "invalidated", "revalidated"]),
    st.sampled_from(["a", "b", "c"]), st.sampled_from(sorted(PREDICATES)),
    st.sampled_from(["1", "2", "3"]), st.sampled_from(["1", "2", "3"]),
    st.integers(min_value=0, max_value=120), st.sampled_from([None, "a", "b", "c"]))


def build(raw):
    events = []
    for n, (kind, subject, predicate, value, prev, at, depends) in enumerate(raw):
        f = fact(subject, predicate, value, PREDICATES[predicate])
        # Any fact may depend on any module's existence, cycles between modules included.
        deps = (FactKey(depends, "exists"),) if depends and (depends, predicate) != (subject, "exists") else ()
        meta = {"cardinality": "multi"} if predicate == "tags" else {}
        previous = fact(subject, predicate, prev, PREDICATES[predicate]) if kind == "revised" else None
        events.append(ChangeEvent(f"e{n}", kind, day(at), "prop", f, previous=previous,
                                  depends_on=deps, metadata=meta))
    return events


def stage_metrics(events, make_memory, mode, window):
    result = evaluate(events, make_memory(), build_probe_set(events), name="t", kind="t",
                      mode=mode, windows=SHORT, forgetting_window=window)
    return [s.metrics for s in result.stages], result.probe_queries


memories = st.sampled_from([
    lambda: NaiveMemory(),
    lambda: ReferenceMemory(ttl_windows=SHORT, grace=0.5),
    lambda: ReferenceMemory(ttl_windows=SHORT, supersession=False),
    lambda: ReferenceMemory(ttl_windows=SHORT, propagation=False, top_k=1),
    lambda: ReferenceMemory(ttl=False),
])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=st.lists(raw_event, min_size=1, max_size=30), make_memory=memories,
       window=st.integers(min_value=1, max_value=3))
def test_incremental_equals_full_on_random_timelines(raw, make_memory, window):
    events = build(raw)
    full, full_queries = stage_metrics(events, make_memory, "full", window)
    incremental, inc_queries = stage_metrics(events, make_memory, "incremental", window)
    assert incremental == full
    assert inc_queries <= full_queries
