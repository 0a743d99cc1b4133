"""A long replay keeps bookkeeping in proportion to what is live, not to how often it changed.

Each re-validation moves a record's expiry and a probe's staleness instant; the instants they
replace must not pile up until their time comes. Dropping them changes no number.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
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


def _run(events, mode, memory=None, windows=TTL):
    memory = memory or ReferenceMemory(ttl_windows=windows)
    memory.reset()
    probes = build_probe_set(events)
    replay = Replay(memory, probes, mode=mode, windows=windows)
    stages = [replay.step(e) for e in events]
    result = TargetResult(
        "t", "t", stages, replay.metrics(), replay.report(), len(events), 0, replay.at
    )
    return replay, memory, report_json([result], probes.version, len(probes))


@pytest.mark.slow
def test_replaced_expiry_and_staleness_instants_are_dropped_without_changing_a_number():
    events = _timeline(3 * STALE_COMPACT_MIN)
    replay, memory, incremental = _run(events, "incremental")
    _, _, full = _run(events, "full")
    assert incremental == full
    # 4 keys, 4 probes: a few live instants each, never one per re-validation
    assert len(replay._stale_heap) < STALE_COMPACT_MIN
    assert len(memory._deadlines) < memory.deadlines_compact_min


class CompactingAtEveryPush(ReferenceMemory):
    def _push_deadlines(self, *args):
        super()._push_deadlines(*args)
        self._compact_deadlines()


def test_a_re_validated_record_is_still_purged_when_the_heap_is_compacted_as_it_is_pushed():
    """The expiry and purge a re-validation moves a record to are pushed and compacted in one
    step: they must survive, or the record's purge goes unseen and incremental asks too
    little."""
    short = {d: timedelta(days=10) for d in TTL}
    lang, owner = fact("api", "language", "go"), fact("api", "owner", "alice", "ownership")
    events = [
        added("a1", 0, lang),
        added("a2", 1, owner),
        revalidated("r1", 5, lang),  # moves its expiry from day 10 to 15, its purge to 25
        revalidated("r2", 26, owner),  # past day 25: lang's record is no longer returned
    ]
    reports = {
        mode: _run(events, mode, CompactingAtEveryPush(ttl_windows=short), short)[2]
        for mode in ("full", "incremental")
    }
    assert reports["incremental"] == reports["full"]


def test_a_staleness_instant_pushed_before_the_heap_is_compacted_still_comes():
    """A quiet key's record, served unchanged, goes stale long after the heap was compacted
    around it: incremental must still rescore it when its instant comes, as full mode does."""
    quiet = added("q", 0, fact("quiet", "language", "go"))
    events = [quiet, *_timeline(STALE_COMPACT_MIN + 100)]
    events.append(added("late", 500, fact("late", "language", "go")))
    reports = {
        mode: _run(events, mode, ReferenceMemory(ttl=False))[2] for mode in ("full", "incremental")
    }
    assert reports["incremental"] == reports["full"]
    assert reports["full"]["targets"][0]["final"]["metrics"]["all"]["freshness"] < 1.0


def test_the_final_report_of_a_baseline_answering_with_every_record_adds_a_status_per_record():
    import gc
    import tracemalloc

    from healthd.memory.naive import NaiveMemory

    events = _timeline(2000)  # 4 keys: each answer is some 500 records
    memory = NaiveMemory()
    replay = Replay(memory, build_probe_set(events), windows=TTL)
    for event in events:
        replay.step(event)
    gc.collect()
    tracemalloc.start()
    try:
        report = replay.report()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    records = sum(len(probe.retrieved) for probe in report)
    assert records == len(events)
    assert [status for _, status in report[0].retrieved][:2] == ["current", "current"]
    assert list(report[0].retrieved)[:1] == [report[0].retrieved[0]]
    # was a (fact, status) pair per record, 64 B each, while the whole replay is alive
    assert held / records < 16, f"{held / records:.0f} bytes a record"
