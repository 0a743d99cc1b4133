"""A long replay keeps bookkeeping in proportion to what is live, not to how often it changed.

Each re-validation moves a record's expiry and a probe's staleness instant; the instants they
replace must not pile up until their time comes. Dropping them changes no number.
"""

from __future__ import annotations

from datetime import timedelta

from timeline_builders import added, fact, revalidated

from healthd.evaluator import STALE_COMPACT_MIN, Replay, TargetResult
from healthd.exporters.report import report_json
from healthd.memory.reference import ReferenceMemory
from healthd.probes import build_probe_set

TTL = {d: timedelta(days=400) for d in ("tech", "ownership", "decision", "requirement")}


def _timeline(n: int):
    keys = [fact(f"svc-{i}", "language", "go") for i in range(4)]
    events = [added(f"a{i}", 0, f) for i, f in enumerate(keys)]
    # every key re-validated every 0.1 day, within the TTL and staleness window of 400 days:
    # each write replaces the instants of the last long before they come
    events += [revalidated(f"r{n}", 0.1 + n / 40, keys[n % 4]) for n in range(n)]
    return events


def _run(events, mode):
    memory = ReferenceMemory(ttl_windows=TTL)
    memory.reset()
    probes = build_probe_set(events)
    replay = Replay(memory, probes, mode=mode, windows=TTL)
    stages = [replay.step(e) for e in events]
    result = TargetResult(
        "t", "t", stages, replay.metrics(), replay.report(), len(events), 0, replay.at
    )
    return replay, memory, report_json([result], probes.version, len(probes))


def test_replaced_expiry_and_staleness_instants_are_dropped_without_changing_a_number():
    events = _timeline(3 * STALE_COMPACT_MIN)
    replay, memory, incremental = _run(events, "incremental")
    _, _, full = _run(events, "full")
    assert incremental == full
    # 4 keys, 4 probes: a few live instants each, never one per re-validation
    assert len(replay._stale_heap) < STALE_COMPACT_MIN
    assert len(memory._deadlines) < memory.deadlines_compact_min
