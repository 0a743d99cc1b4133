"""Operation logs kept packed: the same folds and answers, a fraction of the memory.

Ground truth and the reference memory keep every operation of every key for the whole
history (a late event refolds a key from its start). The memory a long history costs them
is measured here with tracemalloc (objects, not time), and a packed log with tiny blocks
must give exactly what an unpacked one gives, late events and cascades included.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from random_timelines import EXAMPLES, SHORT_TTL, timelines
from timeline_builders import added, day, fact, revalidated, revised

import healthd._packed as packed
from healthd._packed import PackedLog
from healthd.evaluator import evaluate
from healthd.exporters.report import report_json
from healthd.memory.reference import ReferenceMemory
from healthd.model import ChangeEvent
from healthd.probes import build_probe_set
from healthd.truth import GroundTruth


class _Ints:
    def pack(self, entry: tuple[int, int]) -> tuple[int, int]:
        return entry

    def unpack(self, row: Any) -> tuple[int, int]:
        return (row[0], row[1])


def test_a_packed_log_keeps_order_across_blocks_and_late_insertions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(packed, "BLOCK", 3)
    log: PackedLog[tuple[int, int]] = PackedLog(_Ints(), lambda e: e)
    assert not log and log.last() is None
    expected = []
    for at in range(0, 40, 2):
        log.append((at, at))
        expected.append((at, at))
    for late in (1, 39, 17, 0, 25):  # before every block, inside one, after the tail's first
        log.insort((late, 100 + late))
        expected.append((late, 100 + late))
    expected.sort()
    assert list(log) == expected
    assert len(log) == len(expected)
    assert log.last() == expected[-1]


def _history(events: int) -> Iterator[ChangeEvent]:
    """A few long-lived keys revised and re-validated over and over, a dependency each."""
    owner = fact("svc", "exists", "true")
    yield added("e0", 0, owner)
    for i in range(1, events):
        key = ("lang", "owner", "db")[i % 3]
        value = str(i // 30 % 7)
        f = fact("svc", key, value)
        if i % 3 == 0:
            yield revised(f"e{i}", i * 0.01, fact("svc", key, str((i // 30 - 1) % 7)), f)
        elif i % 5 == 0:
            yield added(f"e{i}", i * 0.01, f, deps=[("svc", "exists")])
        else:
            yield revalidated(f"e{i}", i * 0.01, f)


def _bytes_held(build: Callable[[int], Any], events: int) -> tuple[float, Any]:
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        held = build(events)
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - start) / events, held
    finally:
        tracemalloc.stop()


def test_ground_truth_holds_a_long_history_in_a_few_dozen_bytes_an_event() -> None:
    # 6,000 events on four keys: the cost per event is the operations', not the keys'
    per_event, truth = _bytes_held(lambda n: GroundTruth(_history(n)), 6000)
    assert len(truth.operations(next(iter(truth.keys())))) >= 1
    # Held as objects, each operation cost ~200 B (tuple, int, datetime, list slot), plus
    # an interval and its reason for each revision; packed, under 100 B in all.
    assert per_event < 100, f"{per_event:.0f} bytes an event"


@pytest.mark.slow
def test_many_keys_a_few_dozen_operations_deep_keep_only_their_newest_as_objects() -> None:
    def many_keys(n: int) -> GroundTruth:
        keys = n // 20  # each key added, then re-validated 19 times
        events = [added(f"a{k}", 0, fact(f"svc{k}", "lang", "go")) for k in range(keys)]
        events += [
            revalidated(f"e{i}", i * 0.001, fact(f"svc{i % keys}", "lang", "go"))
            for i in range(keys, n)
        ]
        return GroundTruth(events)

    per_event, truth = _bytes_held(many_keys, 40000)
    assert len(truth.operations(next(iter(truth.keys())))) == 20
    # Was ~227 B: a key's newest 8 to 15 operations were kept as objects (its tail), at a
    # project's depth most of them; now 1 to 8, and the per-key rest is the same.
    assert per_event < 190, f"{per_event:.0f} bytes an event"


def _replayed(history: Callable[[int], Iterator[ChangeEvent]]) -> Callable[[int], ReferenceMemory]:
    """A private reference memory fed the first ``n`` events of ``history``."""

    def replay(n: int) -> ReferenceMemory:
        memory = ReferenceMemory(path="")
        for event in history(n):
            memory.apply(event)
        return memory

    return replay


def test_the_reference_memory_holds_a_long_history_in_little_more_than_its_records() -> None:
    per_event, memory = _bytes_held(_replayed(_history), 6000)
    memory.close()
    # Was ~420 B an event: a log entry object and a dict entry for its expiry per operation,
    # a served fact (two datetimes, an id) kept on every record that ever ended.
    assert per_event < 250, f"{per_event:.0f} bytes an event"


def _revisions(events: int) -> Iterator[ChangeEvent]:
    """Four keys, each event a revision to a value never held before: every event ends a
    record and opens one, as a project's version bumps and owner changes do."""
    values = [0, 0, 0, 0]
    for i in range(4):
        yield added(f"a{i}", i * 0.01, fact("svc", f"k{i}", "0"))
    for i in range(4, events):
        k = i % 4
        old = fact("svc", f"k{k}", str(values[k]))
        values[k] = i
        yield revised(f"e{i}", i * 0.01, old, fact("svc", f"k{k}", str(i)))


@pytest.mark.slow
def test_the_reference_memory_holds_its_live_records_not_every_record_it_wrote() -> None:
    replay = _replayed(_revisions)
    short, memory = _bytes_held(replay, 5000)
    memory.close()
    long, memory = _bytes_held(replay, 10000)
    # the ended records are in the table, and a probe is still answered from the live ones
    probe = build_probe_set(list(_revisions(8))).for_key(fact("svc", "k1", "").key)[0]
    assert [f.value for f in memory.answer(probe, day(9999 * 0.01)).facts] == ["9997"]
    memory.close()
    # What each added event costs (the reasons' caches, bounded, are full at both sizes):
    # was ~560 B, each ended record keeping its object, its columns, its interval and the
    # two log entries that interval held; now the packed log.
    per_event = (long * 10000 - short * 5000) / 5000
    assert per_event < 200, f"{per_event:.0f} bytes an event"


@pytest.mark.slow
def test_ground_truth_keeps_the_values_a_key_holds_not_an_interval_for_every_value_it_had() -> None:
    def asked(n: int) -> GroundTruth:
        truth = GroundTruth(_revisions(n))
        for key in list(truth.keys()):  # a probe's scoring reads each key at the newest event
            truth.current(key, day((n - 1) * 0.01))
        return truth

    short, _ = _bytes_held(asked, 5000)
    long, truth = _bytes_held(asked, 10000)
    # a past instant is still answered, from the key's operations
    k1 = fact("svc", "k1", "").key
    assert [f.value for f in truth.current(k1, day(5001 * 0.01))] == ["5001"]
    assert truth.status_of(k1, "5001", day(5005 * 0.01)) == "superseded"
    assert truth.status_of(k1, "5001", day(5004 * 0.01)) == "current"
    assert truth.status_of(k1, "9997", day(9999 * 0.01)) == "current"
    # What each added event costs: was ~530 B, an interval (its start, its list in the
    # value's history) kept for every value ever held; now the packed operations and the
    # value's name, rank and how it ended.
    per_event = (long * 10000 - short * 5000) / 5000
    assert per_event < 350, f"{per_event:.0f} bytes an event"


def test_a_closed_reference_memory_lets_go_of_what_it_cached() -> None:
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        memory = ReferenceMemory(path="")
        for event in _history(3000):
            memory.apply(event)
        gc.collect()
        built = tracemalloc.get_traced_memory()[0] - start
        memory.close()  # `healthd evaluate` keeps each closed memory until every target ran
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    # its log, folds and records, built replaying 3,000 events, go with the database
    assert built > 100_000
    assert kept < built / 10, f"{kept} of {built} bytes still held"


def _report(events: list[ChangeEvent]) -> dict[str, Any]:
    probes = build_probe_set(events)
    result = evaluate(
        events, ReferenceMemory(ttl_windows=SHORT_TTL), probes, name="r", kind="reference"
    )
    return report_json([result], probes.version, len(probes))


@settings(
    max_examples=max(50, EXAMPLES // 10),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(events=timelines())
def test_logs_packed_one_entry_a_block_give_the_same_report(events: list[ChangeEvent]) -> None:
    unpacked = _report(events)  # 8 entries a block: these short histories are barely packed
    old = packed.BLOCK
    packed.BLOCK = 1  # every entry but the newest packed, so every refold unpacks
    try:
        assert _report(events) == unpacked
    finally:
        packed.BLOCK = old
