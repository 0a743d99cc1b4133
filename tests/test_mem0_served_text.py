"""Mem0 scored by the text it serves, not by the metadata healthd wrote."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest

from healthd.evaluator import Replay
from healthd.memory import build_memory, parse_target
from healthd.model import ChangeEvent, Fact
from healthd.probes import build_probe_set

os.environ["MEM0_TELEMETRY"] = "False"  # read once, when mem0 is first imported
pytest.importorskip("mem0", reason="the mem0 extra is not installed")

T0 = datetime(2026, 3, 1, tzinfo=UTC)
ALICE = Fact("billing", "owners", "@alice", "ownership")
BOB = Fact("billing", "owners", "@bob", "ownership")
CAROL = Fact("billing", "owners", "@carol", "ownership")
EVENTS = [
    ChangeEvent("e1", "added", T0, "git", ALICE),
    ChangeEvent("e2", "revised", T0.replace(day=2), "git", BOB, previous=ALICE),
    ChangeEvent("e3", "revised", T0.replace(day=3), "git", CAROL, previous=BOB),
]


def test_an_infer_true_extraction_is_scored_by_its_text_and_the_mismatch_counted():
    """With infer=True, Mem0 copies the metadata of ``add()`` onto every memory its LLM
    extracts. Here healthd's metadata says @bob while the extraction says Carol took over
    from Alice: the text is what the assistant reads, so the memory serves Carol, current,
    and the disagreement is counted."""
    memory = build_memory(parse_target("mem0:mode=managed"))
    try:
        memory.reset()
        replay = Replay(memory, build_probe_set(EVENTS), mode="full")
        for event in EVENTS:
            replay.step(event)
        now = T0.replace(day=3)
        # what Mem0's add(infer=True) stores: the LLM's extraction under the caller's metadata
        memory._memory.add(
            "Alice handed billing over to Carol",
            infer=False,
            metadata=memory._metadata("e2", BOB, now, now),
            **memory._scope,
        )
        replay.step(ChangeEvent("e4", "revalidated", T0.replace(day=4), "git", CAROL))
        (probe,) = replay.report()
        assert {(f.value, status) for f, status in probe.retrieved} == {("@carol", "current")}
        extraction = next(r for r in probe.served if r.item.text.startswith("Alice handed"))
        assert extraction.read_as() == {
            "asserted": ["@carol"],
            "negated": ["@alice"],
            "unread": False,
            "mismatch": True,
            "other": [],
        }
        assert replay.reading_counts().metadata_mismatch == 1
        metrics = replay.metrics()["all"]
        assert metrics.consistency == 1.0 and metrics.contamination == 0.0
    finally:
        memory.close()


def test_a_memory_healthd_did_not_write_is_read_not_a_failed_run():
    memory = build_memory(parse_target("mem0:mode=managed"))
    try:
        memory.reset()
        replay = Replay(memory, build_probe_set(EVENTS), mode="full")
        for event in EVENTS:
            replay.step(event)
        memory._memory.add(
            "Prefers dark mode when reviewing billing code",
            infer=False,
            metadata={"subject": "billing", "predicate": "owners"},
            **memory._scope,
        )
        replay.step(ChangeEvent("e4", "revalidated", T0.replace(day=4), "git", CAROL))
        (probe,) = replay.report()
        foreign = next(r for r in probe.served if r.item.text.startswith("Prefers"))
        assert foreign.reading.unread and not foreign.mismatch
        assert replay.reading_counts().unread == 1
        assert {f.value for f, _ in probe.retrieved} == {"@carol"}
    finally:
        memory.close()
