"""The reference memory with every mechanism on serves only what is true, in any arrival order.

On random timelines (backdated removals and re-adds, cross-key revisions, multi-valued keys,
dependency chains and cycles), while no TTL has elapsed, every stage scores consistency 1.0 and
contamination 0.0 against the ground truth, and with room for every value, coverage 1.0.
Dependency cycles included: around a cycle nothing cascades, an explicit end in it does.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from random_timelines import EXAMPLES, timelines

from healthd.evaluator import evaluate
from healthd.memory.reference import ReferenceMemory
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
