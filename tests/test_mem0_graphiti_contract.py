"""The target contract, as reusable checks, run against Mem0 and Graphiti in each mode.

Each check takes a :class:`TargetUnderTest`: how to build the target's shadow (ephemeral or
on a path), and how another application writes its own data into the same store, outside
the shadow scope. A shared contract suite can import ``CONTRACT_CHECKS`` and run them on
any target that provides those two things.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from timeline_builders import added, day, fact, invalidated, revalidated, revised

from healthd.errors import TargetError
from healthd.evaluator import evaluate
from healthd.exporters.report import report_json
from healthd.memory import Memory, TargetSpec, build_memory, parse_target
from healthd.model import Probe, RetrievedFact
from healthd.probes import build_probe_set, question_for
from healthd.reading import build_reader, read_facts
from healthd.timeline import read_timeline

os.environ["MEM0_TELEMETRY"] = "False"  # read once, when mem0 is first imported
pytest.importorskip("mem0", reason="the mem0 extra is not installed")
pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed")

from store_writers import (
    graphiti_foreign_read,
    graphiti_foreign_write,
    mem0_foreign_read,
    mem0_foreign_write,
)


@dataclass(frozen=True)
class TargetUnderTest:
    target: str  # kind:switches, without path/shadow
    # writes a foreign record into the store at a path, with the store closed afterwards
    foreign_write: Callable[[Path], None]
    # the foreign records' texts still in the store at a path
    foreign_read: Callable[[Path], list[str]]
    # does the target serve a revised-away value beside the new one?
    keeps_superseded: bool
    # does an invalidated fact stay in its answers?
    keeps_invalidated: bool

    def build(self, **switches: str) -> Memory:
        text = self.target
        if switches:
            joined = ",".join(f"{k}={v}" for k, v in switches.items())
            text += ("," if ":" in text else ":") + joined
        return build_memory(parse_target(text))


TARGETS = [
    TargetUnderTest("mem0:mode=native", mem0_foreign_write, mem0_foreign_read, True, True),
    TargetUnderTest("mem0:mode=managed", mem0_foreign_write, mem0_foreign_read, False, False),
    TargetUnderTest(
        "graphiti:search=default", graphiti_foreign_write, graphiti_foreign_read, True, True
    ),
    TargetUnderTest(
        "graphiti:search=valid", graphiti_foreign_write, graphiti_foreign_read, False, False
    ),
]

BILLING = fact("billing", "owner", "@alice", "ownership")
BILLING_BOB = fact("billing", "owner", "@bob", "ownership")
PG = fact("billing", "dependency:postgres", "13")


def probe_for(f: Any) -> Probe:
    return Probe(
        f"p-{f.predicate}",
        question_for(f.subject, f.predicate, f.domain),
        f.subject,
        f.predicate,
        f.domain,
    )


def served(memory: Memory, f: Any, at: datetime) -> tuple[RetrievedFact, ...]:
    """The facts the memory serves for ``f``'s probe: its structured facts, and those the
    default reader reads in its served text (Mem0 serves text)."""
    answer = memory.answer(probe_for(f), at)
    held = {g.value: g.domain for g in (BILLING, BILLING_BOB, PG) if g.key == f.key}
    return answer.facts + read_facts(build_reader(), f.key, held, answer.items)[1]


def values(memory: Memory, f: Any, at: datetime) -> list[str]:
    return sorted(r.value for r in served(memory, f, at))


def tree_digest(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


# --- the checks --------------------------------------------------------------------------


def check_apply_and_answer_map_back_to_facts(t: TargetUnderTest, tmp_path: Path) -> None:
    memory = t.build()
    try:
        memory.reset()
        memory.apply(added("e1", 0, BILLING))
        memory.apply(added("e2", 1, PG, deps=[("billing", "exists")]))
        assert memory.answer(probe_for(BILLING), day(1)).probe_id == "p-owner"
        [got] = served(memory, BILLING, day(1))
        assert got.fact == BILLING
        assert got.written_at == day(0)  # the replay's clock, not the wall clock
        assert values(memory, PG, day(1)) == ["13"]  # one key's probe gets that key only
        memory.apply(revalidated("e3", 5, BILLING))
        [got] = served(memory, BILLING, day(5))
        expected_validation = day(0) if t.target == "mem0:mode=native" else day(5)
        assert got.last_validated == expected_validation
        memory.apply(revised("e4", 10, BILLING, BILLING_BOB))
        expected = ["@alice", "@bob"] if t.keeps_superseded else ["@bob"]
        assert values(memory, BILLING, day(10)) == expected
        memory.apply(invalidated("e5", 12, BILLING_BOB))
        after = values(memory, BILLING, day(12))
        assert ("@bob" in after) == t.keeps_invalidated
    finally:
        memory.close()


def check_reset_empties_the_shadow(t: TargetUnderTest, tmp_path: Path) -> None:
    memory = t.build()
    try:
        memory.apply(added("e1", 0, BILLING))
        memory.reset()
        assert values(memory, BILLING, day(1)) == []
        memory.apply(added("e2", 2, BILLING_BOB))  # usable again after a reset
        assert values(memory, BILLING, day(2)) == ["@bob"]
    finally:
        memory.close()


def check_shadow_isolation(t: TargetUnderTest, tmp_path: Path) -> None:
    store = tmp_path / "store"
    t.foreign_write(store)
    memory = t.build(path=str(store), shadow="on")
    try:
        memory.reset()
        memory.apply(added("e1", 0, BILLING))
        assert values(memory, BILLING, day(1)) == ["@alice"]  # the foreign @carol never shows
        memory.reset()
        assert values(memory, BILLING, day(1)) == []
    finally:
        memory.close()
    assert t.foreign_read(store) == ["billing is owned by @carol"]


def check_non_shadow_refused_before_any_write(t: TargetUnderTest, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    with pytest.raises(TargetError, match="not declared shadow"):
        t.build(path=str(fresh))
    assert not fresh.exists()
    store = tmp_path / "store"
    t.foreign_write(store)
    before = tree_digest(store)
    for switches in ({"path": str(store)}, {"path": str(store), "shadow": "off"}):
        with pytest.raises(TargetError, match="not declared shadow"):
            t.build(**switches)
    assert tree_digest(store) == before
    with pytest.raises(TargetError, match="not declared shadow"):
        t.build(shadow="off")


def check_incremental_equals_full_on_the_example(t: TargetUnderTest, tmp_path: Path) -> None:
    from healthd.cli import example_timeline_path

    # The first 70 events hold revisions, invalidations, revalidations and a backdated event;
    # a full replay re-asks every probe at every stage, so the whole example would be slow.
    events = read_timeline(str(example_timeline_path()))[:70]
    probes = build_probe_set(events)
    reports = []
    for mode in ("full", "incremental"):
        memory = t.build()
        try:
            result = evaluate(events, memory, probes, name=t.target, kind="x", mode=mode)
        finally:
            memory.close()
        reports.append(report_json([result], probes.version, len(probes)))
    assert reports[0] == reports[1]


CONTRACT_CHECKS = [
    check_apply_and_answer_map_back_to_facts,
    check_reset_empties_the_shadow,
    check_shadow_isolation,
    check_non_shadow_refused_before_any_write,
    check_incremental_equals_full_on_the_example,
]


@pytest.mark.parametrize("check", CONTRACT_CHECKS, ids=lambda c: c.__name__.removeprefix("check_"))
@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.target)
def test_contract(target: TargetUnderTest, check: Callable[..., None], tmp_path: Path) -> None:
    check(target, tmp_path)


@pytest.mark.parametrize("group_id", ["", "healthd shadow", "team.shadow"])
def test_a_group_graphiti_would_not_keep_apart_is_refused_before_anything_is_opened(
    tmp_path: Path, group_id: str
) -> None:
    """The shadow group is one healthd owns: not the default group ``""``, where Graphiti
    keeps every episode written without a ``group_id`` (a reset would delete the team's),
    and only the characters Graphiti's ``validate_group_id`` takes (else the reset runs and
    the first search fails)."""
    store = tmp_path / "store"
    graphiti_foreign_write(store, group="")  # the team's, written without a group_id
    spec = TargetSpec("graphiti", {"path": str(store), "shadow": "on", "group_id": group_id})
    with pytest.raises(TargetError, match="group_id"):
        build_memory(spec)
    assert graphiti_foreign_read(store, group="") == ["billing is owned by @carol"]


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.target)
def test_a_reopened_shadow_resumes_its_replay_clock(target: TargetUnderTest, tmp_path: Path):
    store = str(tmp_path / "store")
    memory = target.build(path=store, shadow="on")
    memory.reset()
    memory.apply(added("e1", 5, BILLING))
    memory.close()
    memory = target.build(path=store, shadow="on")  # a daemon restarted
    try:
        memory.apply(added("e2", 2, PG))  # late, backdated: written at the clock, day 5
        [got] = served(memory, PG, day(5))
        assert got.written_at == day(5)
        assert values(memory, BILLING, day(5)) == ["@alice"]
    finally:
        memory.close()


@pytest.mark.parametrize(
    "target", [t for t in TARGETS if t.target != "mem0:mode=native"], ids=lambda t: t.target
)
def test_revalidation_and_a_repeated_fact_keep_the_record_and_its_write_time(
    target: TargetUnderTest,
):
    memory = target.build()
    try:
        memory.apply(added("e1", 0, BILLING))
        memory.apply(revalidated("e2", 5, BILLING))
        memory.apply(added("e3", 6, BILLING))  # a source saw the same fact again
        [got] = served(memory, BILLING, day(6))
        assert got.record_id.endswith(":e1")
        assert (got.written_at, got.last_validated) == (day(0), day(6))
    finally:
        memory.close()


def test_on_falkordb_the_shadow_graph_is_the_group_graphiti_writes_episodes_into(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Graphiti keeps each group in a FalkorDB graph of its name (``FalkorDriver.clone``,
    called by ``add_episode`` for a group other than the driver's database) while its search
    and ``clear_data`` read the driver's own: the driver is opened on the group's graph, so
    what the episodes wrote is what probes read and a reset clears; another database is
    refused before anything is opened."""
    import types

    from healthd.memory import _offline

    opened: list[dict[str, Any]] = []

    class FalkorDriver:  # what the adapter asks of FalkorDB's driver: its arguments
        def __init__(self, **kwargs: Any) -> None:
            opened.append(kwargs)
            raise RuntimeError("no FalkorDB here")

    real = _offline.require_extra

    def require_extra(module: str, *args: Any) -> Any:
        if module == "graphiti_core.driver.falkordb_driver":
            return types.SimpleNamespace(FalkorDriver=FalkorDriver)
        return real(module, *args)

    monkeypatch.setattr(_offline, "require_extra", require_extra)
    falkordb = {"driver": {"provider": "falkordb", "host": "127.0.0.1", "port": 9}}
    spec = TargetSpec("graphiti", {"shadow": "on", "group_id": "shadow-g", "graphiti": falkordb})
    with pytest.raises(TargetError, match="no FalkorDB here"):
        build_memory(spec)
    assert [o.get("database") for o in opened] == ["shadow-g"]

    llm = {"client": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    other = {"driver": {**falkordb["driver"], "database": "team_graph"}, "llm": llm}
    options = {"shadow": "on", "group_id": "shadow-g", "ingest": "episodes", "graphiti": other}
    with pytest.raises(TargetError, match="graphiti.driver.database"):
        build_memory(TargetSpec("graphiti", options))
    assert len(opened) == 1


def test_on_falkordb_edges_are_kept_in_the_database_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``ingest = "edges"`` (the default) healthd writes the edges into the driver's
    own graph and Graphiti searches and clears that same graph (no ``add_episode``, so no
    clone onto the group's graph): a ``database`` given is where the shadow group lives, as
    on Neo4j, and is not refused."""
    import types

    from healthd.memory import _offline

    opened: list[dict[str, Any]] = []

    class FalkorDriver:
        def __init__(self, **kwargs: Any) -> None:
            opened.append(kwargs)
            raise RuntimeError("no FalkorDB here")

    real = _offline.require_extra

    def require_extra(module: str, *args: Any) -> Any:
        if module == "graphiti_core.driver.falkordb_driver":
            return types.SimpleNamespace(FalkorDriver=FalkorDriver)
        return real(module, *args)

    monkeypatch.setattr(_offline, "require_extra", require_extra)
    driver = {"provider": "falkordb", "host": "127.0.0.1", "port": 9, "database": "team_graph"}
    options = {"shadow": "on", "group_id": "shadow-g", "graphiti": {"driver": driver}}
    with pytest.raises(TargetError, match="no FalkorDB here"):
        build_memory(TargetSpec("graphiti", options))
    assert [o.get("database") for o in opened] == ["team_graph"]
