"""The collector's thresholds around a one-off replay (`healthd evaluate`): no collection
scans the replay's long-lived heap, cyclic garbage is still freed, the thresholds come back."""

from __future__ import annotations

import gc
import weakref

import pytest

from healthd._collector import (
    ONE_OFF_YOUNG,
    REPLAY_THRESHOLDS,
    one_off_collection,
    replay_collection,
)


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def collections():
    seen: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    yield seen
    gc.callbacks.remove(count)


def test_a_one_off_replay_allocating_a_large_heap_runs_no_collection(collections):
    with one_off_collection():
        kept = [[i] for i in range(ONE_OFF_YOUNG // 4)]  # far past the default 700
        assert collections == []
    # the allocations it made are not left counted (the next one would scan them all)
    assert collections == []
    # nor of that heap just after: it went to the oldest generation, not counted as promoted
    more = [[i] for i in range(10_000)]
    assert 2 not in collections and len(kept) + len(more) > 0


def test_thresholds_come_back_and_cyclic_garbage_made_during_it_is_still_freed(collections):
    before = gc.get_threshold()
    with one_off_collection():
        assert gc.get_threshold()[0] >= ONE_OFF_YOUNG
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        assert gone() is not None  # a cycle: only a collection frees it
    assert gc.get_threshold() == before
    gc.collect()
    assert gone() is None


def test_a_collection_still_runs_every_one_off_young_allocations(collections):
    with one_off_collection():
        kept = [[i] for i in range(ONE_OFF_YOUNG + 100_000)]
        assert 0 in collections and 2 not in collections
    assert len(kept) > ONE_OFF_YOUNG


def test_what_a_replay_kept_is_not_scanned_when_the_thresholds_come_back(collections):
    """A pull returns its events: restoring the default thresholds must not make the next
    allocation collect them all again (about 25 ms of a 10,000-event pull, to free nothing)."""
    before = gc.get_threshold()
    with replay_collection():
        kept = [[i] for i in range(REPLAY_THRESHOLDS[0] // 2)]  # no collection yet
        assert collections == []
    assert gc.get_threshold() == before
    more = [[i] for i in range(before[0] // 2)]  # well within the restored young threshold
    assert collections == [] and len(kept) + len(more) > 0


def test_cyclic_garbage_made_during_a_replay_is_still_freed(collections):
    with replay_collection():
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
    gc.collect()
    assert gone() is None
