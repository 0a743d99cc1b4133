"""healthd's numbers equal an oracle's written from DESIGN.md alone (``tests/oracle.py``,
which shares no code with healthd) at every stage, for all domains and per domain, on random
timelines: late cardinality declarations, one (key, value) given several domains, revisions
across keys, any arrival order, and dependencies without cycles, whose ends cascade. Both
evaluation modes. And the reference memory, every mechanism on and no TTL elapsed, serves at
every stage exactly the values the oracle says each key holds."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import held_stretches, stage_metrics, status
from random_timelines import EXAMPLES, build, cascading_timelines, raw_timelines
from test_reference_property import NEVER_ELAPSED
from timeline_builders import day

from healthd.evaluator import evaluate
from healthd.memory.naive import NaiveMemory
from healthd.memory.reference import ReferenceMemory
from healthd.probes import build_probe_set


def as_oracle_events(raw: list[tuple]) -> list[tuple]:
    def plain(f):
        return (f.subject, f.predicate, f.value, f.domain) if f is not None else None

    return [
        (kind, plain(cur), plain(prev), multi, at, tuple((k.subject, k.predicate) for k in deps))
        for kind, cur, prev, deps, multi, at in raw
    ]


def assert_every_stage_equals_the_oracle(raw: list[tuple], mode: str) -> None:
    events = build(raw)
    result = evaluate(events, NaiveMemory(), build_probe_set(events), name="n", kind="naive",
                      mode=mode)  # fmt: skip
    expected = stage_metrics(as_oracle_events(raw))
    for stage, oracle in zip(result.stages, expected, strict=True):
        for bucket, metrics in stage.metrics.items():
            got = metrics.as_dict()
            for name, want in oracle[bucket].items():
                assert got[name] == pytest.approx(want), (stage.event_id, bucket, name)


@pytest.mark.parametrize("mode", ["full", "incremental"])
@settings(
    max_examples=max(1, EXAMPLES // 8), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(raw=raw_timelines(deps=False))
def test_every_stage_equals_the_oracle_s_numbers(raw, mode):
    assert_every_stage_equals_the_oracle(raw, mode)


@pytest.mark.parametrize("mode", ["full", "incremental"])
@settings(
    max_examples=max(1, EXAMPLES // 2), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(raw=st.one_of(raw_timelines(acyclic=True), cascading_timelines()))
def test_every_stage_equals_the_oracle_s_numbers_where_ends_cascade(raw, mode):
    assert_every_stage_equals_the_oracle(raw, mode)


@settings(
    max_examples=max(1, EXAMPLES // 4), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(raw=st.one_of(raw_timelines(acyclic=True), cascading_timelines()))
def test_the_reference_memory_serves_what_the_oracle_says_each_key_holds(raw):
    events, plain = build(raw), as_oracle_events(raw)
    probes = build_probe_set(events)
    memory = ReferenceMemory(ttl_windows=NEVER_ELAPSED, top_k=10)
    for i, event in enumerate(events, 1):
        memory.apply(event)
        t = max(e[4] for e in plain[:i])
        held = held_stretches(plain[:i])
        for probe in probes:
            found = held.get((probe.subject, probe.predicate), [])
            holds = {s.value for s in found if status(found, s.value, t)[0] == "current"}
            served = [
                f.value
                for f in memory.answer(probe, day(t)).facts
                if f.key == probe.key and "historical" not in f.flags
            ]
            assert sorted(served) == sorted(holds), (event.id, probe.subject, probe.predicate)
    memory.close()
