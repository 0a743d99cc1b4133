"""A hosted memory's asynchronous processing (Mem0 Platform's async add, Zep's episode
processing) is waited for once per batch of writes (`batch_events = N`), before the probes
that read it, not once per change; the batch is one stage. Run against the imitations
(healthd/testing/mem0_platform.py, healthd/testing/zep.py), whose processing takes time, on
the first events of the bundled example: the number of waits is the number of batches, and
every write was waited for (no stage reads a memory still processing)."""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from healthd.cli import example_timeline_path
from healthd.evaluator import evaluate
from healthd.memory import build_memory, parse_target
from healthd.probes import build_probe_set
from healthd.timeline import read_timeline

os.environ["MEM0_TELEMETRY"] = "False"
httpx = pytest.importorskip("httpx")

pytestmark = pytest.mark.product

EVENTS = 7


def first_events() -> list[Any]:
    return list(read_timeline(str(example_timeline_path())))[:EVENTS]


def replay(target: str) -> tuple[Any, Any]:
    """The events replayed into ``target`` (scored as ``evaluate`` does); the memory, closed."""
    events = first_events()
    memory = build_memory(parse_target(target))
    try:
        result = evaluate(
            events,
            memory,
            build_probe_set(events),
            name="hosted",
            kind=target.split(":", maxsplit=1)[0],
        )
    finally:
        memory.close()
    return result, memory


@pytest.fixture(scope="module")
def platform() -> Iterator[Any]:
    pytest.importorskip("mem0", reason="the mem0 extra is not installed")
    from healthd.testing.mem0_platform import Mem0Platform

    hashing = {"embedding_model": "healthd-hashing", "embedding_dims": 256}
    with Mem0Platform(processing_seconds=0.2, style="verbatim", **hashing) as running:
        yield running


@pytest.fixture(scope="module")
def zep() -> Iterator[Any]:
    pytest.importorskip("zep_cloud", reason="the zep extra is not installed")
    pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed")
    from healthd.testing.zep import Zep

    with Zep(style="verbatim") as running:
        yield running


def check_batches(runs: dict[int, tuple[Any, Any]]) -> None:
    """Each batch size's replay: one wait per batch, one stage per batch, and the last stage
    (the state after every event) scored the same whatever the batch: nothing was read
    before the service had processed it."""
    for batch, (result, memory) in runs.items():
        batches = math.ceil(EVENTS / batch)
        assert memory.waits == batches
        assert [s.index for s in result.stages] == [*range(batch, EVENTS, batch), EVENTS]
        assert result.llm["by_purpose"]["ingest"]["calls"] == EVENTS
        assert result.llm["by_purpose"]["search"]["calls"] == result.probe_queries
        assert "reported to no one" in result.llm["not_counted"][0]
    (one, _), (three, _) = runs[1], runs[3]
    assert one.stages[-1].metrics == three.stages[-1].metrics
    assert (one.metrics["all"].coverage or 0) > 0


def test_mem0_platforms_adds_are_waited_for_once_per_batch(
    platform: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from healthd.testing.mem0_platform import DEFAULT_KEY

    monkeypatch.setenv("MEM0_API_KEY", DEFAULT_KEY)
    runs = {}
    for batch in (1, 3):
        seen = len(platform.requests)
        user = f"shadow-{uuid.uuid4().hex[:8]}"
        runs[batch] = replay(
            f"mem0:deployment=platform,shadow=on,host={platform.base_url},user_id={user},"
            f"batch_events={batch}"
        )
        sent = platform.requests[seen:]
        assert sum(1 for r in sent if r[1] == "/v3/memories/add/") == EVENTS
        assert runs[batch][1].events_read >= EVENTS  # each add read until processed
    check_batches(runs)


@pytest.mark.slow
def test_zeps_episodes_are_waited_for_once_per_batch(
    zep: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from healthd.testing.zep import DEFAULT_KEY

    monkeypatch.setenv("ZEP_API_KEY", DEFAULT_KEY)
    runs = {}
    for batch in (1, 3):
        runs[batch] = replay(
            f"zep:shadow=on,base_url={zep.base_url},user_id={uuid.uuid4().hex},batch_events={batch}"
        )
        assert runs[batch][1].tasks_read >= EVENTS  # each episode's task read until done
    check_batches(runs)
