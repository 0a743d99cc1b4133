"""healthd's numbers equal an oracle's written from DESIGN.md alone (``tests/oracle.py``,
which shares no code with healthd) at every stage, for all domains and per domain, on random
timelines without dependencies: late cardinality declarations, one (key, value) given several
domains, revisions across keys, any arrival order. Both evaluation modes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from oracle import stage_metrics
from random_timelines import EXAMPLES, build, raw_timelines

from healthd.evaluator import evaluate
from healthd.memory.naive import NaiveMemory
from healthd.probes import build_probe_set


def as_oracle_events(raw: list[tuple]) -> list[tuple]:
    def plain(f):
        return (f.subject, f.predicate, f.value, f.domain) if f is not None else None

    return [(kind, plain(cur), plain(prev), multi, at) for kind, cur, prev, _, multi, at in raw]


@pytest.mark.parametrize("mode", ["full", "incremental"])
@settings(
    max_examples=max(1, EXAMPLES // 8), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(raw=raw_timelines(deps=False))
def test_every_stage_equals_the_oracle_s_numbers(raw, mode):
    events = build(raw)
    result = evaluate(events, NaiveMemory(), build_probe_set(events), name="n", kind="naive",
                      mode=mode)  # fmt: skip
    expected = stage_metrics(as_oracle_events(raw))
    for stage, oracle in zip(result.stages, expected, strict=True):
        for bucket, metrics in stage.metrics.items():
            got = metrics.as_dict()
            for name, want in oracle[bucket].items():
                assert got[name] == pytest.approx(want), (stage.event_id, bucket, name)
