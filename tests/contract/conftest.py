"""The targets the shared contract suite runs against: one factory per target kind that runs
here. A new kind joins the suite by adding one factory to ``FACTORIES``."""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentcore_fixtures import DUMMY_AWS, MEMORY_ID, PREFIX, target_text
from serve_memory_process import serve_memory
from timeline_builders import added, day, fact

from healthd.memory import Memory, build_memory, parse_target
from healthd.memory._agentcore_records import FILTER_KEYS
from healthd.model import Probe
from healthd.testing.agentcore import AgentCoreEmulator

OUTSIDE_FACT = fact("billing", "owners", "@carol", "ownership")
OUTSIDE_PROBE = Probe("outside", "Who owns billing?", "billing", "owners", "ownership")


@dataclass
class ContractTarget:
    """A target kind under test.

    ``build(shadow)`` gives a memory on the kind's shadow scope (with ``shadow=False`` it
    must refuse); ``snapshot()`` reads everything the backend holds, inside the shadow scope
    and out, so a test can tell that nothing was written; ``write_outside()`` puts data
    outside the shadow scope and ``outside_intact()`` says whether it is still all there
    (both None for a kind with no scope outside its own)."""

    kind: str
    build: Callable[[bool], Memory]
    snapshot: Callable[[], Any]
    honours_event_time: bool
    forgets: bool
    write_outside: Callable[[], None] | None = None
    outside_intact: Callable[[], bool] | None = None
    isolation_checked_in: str | None = None  # where another suite checks it instead


def _switch(shadow: bool) -> str:
    return "on" if shadow else "off"


@contextmanager
def reference_target(tmp_path: Path) -> Iterator[ContractTarget]:
    path = tmp_path / "reference.sqlite"

    def build(shadow: bool) -> Memory:
        return build_memory(parse_target(f"reference:path={path},shadow={_switch(shadow)}"))

    outside = build_memory(parse_target(f"reference:path={path},namespace=team/live"))

    def write_outside() -> None:
        outside.apply(added("outside-1", 1, OUTSIDE_FACT))

    def snapshot() -> Any:
        if not path.exists():
            return []
        with sqlite3.connect(path) as db:
            return db.execute("SELECT * FROM records ORDER BY id").fetchall()

    try:
        yield ContractTarget(
            "reference", build, snapshot, honours_event_time=True, forgets=True,
            write_outside=write_outside,
            outside_intact=lambda: [f.value for f in outside.answer(OUTSIDE_PROBE, day(20)).facts] == ["@carol"],
        )  # fmt: skip
    finally:
        outside.close()


@contextmanager
def naive_target(tmp_path: Path) -> Iterator[ContractTarget]:
    def build(shadow: bool) -> Memory:
        return build_memory(parse_target(f"naive:shadow={_switch(shadow)}"))

    yield ContractTarget("naive", build, lambda: None, honours_event_time=False, forgets=False)


@contextmanager
def http_target(tmp_path: Path) -> Iterator[ContractTarget]:
    with serve_memory() as (url, _):

        def text(namespace: str, shadow: bool) -> str:
            return f"http:base_url={url},namespace={namespace},shadow={_switch(shadow)},backoff_seconds=0"

        outside = build_memory(parse_target(text("team/live", True)))

        def write_outside() -> None:
            outside.reset()
            outside.apply(added("outside-1", 1, OUTSIDE_FACT))

        def values(memory: Memory) -> list[str]:
            try:
                return [f.value for f in memory.answer(OUTSIDE_PROBE, day(20)).facts]
            except Exception:
                return []

        def snapshot() -> Any:
            import requests

            return [
                requests.get(f"{url}/v1/namespaces/{ns}", timeout=5).status_code
                for ns in ("healthd%2Fshadow", "team%2Flive")
            ] + [values(outside)]

        try:
            yield ContractTarget(
                "http", lambda shadow: build_memory(parse_target(text("healthd/shadow", shadow))),
                snapshot, honours_event_time=True, forgets=True, write_outside=write_outside,
                outside_intact=lambda: values(outside) == ["@carol"],
            )  # fmt: skip
        finally:
            outside.close()


def _agentcore(mode: str, honours: bool, forgets: bool) -> Callable[[Path], Any]:
    @contextmanager
    def factory(tmp_path: Path) -> Iterator[ContractTarget]:
        with AgentCoreEmulator() as emulator:
            emulator.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
            outside: list[str] = []

            def write_outside() -> None:
                for namespace in (f"{PREFIX}2/lookalike", "team/live", "healthd"):
                    outside.append(emulator.put_record(MEMORY_ID, namespace, "not healthd's"))

            def build(shadow: bool) -> Memory:
                return build_memory(
                    parse_target(target_text(emulator, mode=mode, shadow=_switch(shadow)))
                )

            yield ContractTarget(
                f"agentcore-{mode}", build,
                lambda: sorted((r.id, r.content) for r in emulator.stored(MEMORY_ID)),
                honours_event_time=honours, forgets=forgets, write_outside=write_outside,
                outside_intact=lambda: set(outside) <= {r.id for r in emulator.stored(MEMORY_ID)},
            )  # fmt: skip

    return factory


@contextmanager
def agentcore_events_target(tmp_path: Path) -> Iterator[ContractTarget]:
    """`agentcore:mode=events`: the emulator's stand-in strategy consolidates the events."""
    from healthd.testing.agentcore_events import Strategy

    with AgentCoreEmulator() as emulator:
        emulator.events.style = "verbatim"  # healthd's contract, not the stand-in's style
        emulator.events.configure(
            MEMORY_ID, strategies=[Strategy("facts-a1b2c3d4e5", "healthd/{actorId}/facts")]
        )
        outside: list[str] = []

        def write_outside() -> None:
            for namespace in ("healthd/healthd-shadow2/facts", "healthd/a-real-user/facts"):
                outside.append(emulator.put_record(MEMORY_ID, namespace, "not healthd's"))

        def build(shadow: bool) -> Memory:
            return build_memory(
                parse_target(
                    f"agentcore:mode=events,memory_id={MEMORY_ID},actor_id=healthd-shadow,"
                    f"strategy_id=facts-a1b2c3d4e5,shadow={_switch(shadow)},"
                    f"region=us-east-1,endpoint_url={emulator.url}"
                )
            )

        yield ContractTarget(
            "agentcore-events", build,
            lambda: (sorted((r.id, r.content) for r in emulator.stored(MEMORY_ID)),
                     [e.event_id for e in emulator.events.events(MEMORY_ID)]),
            honours_event_time=False, forgets=True, write_outside=write_outside,
            outside_intact=lambda: set(outside) <= {r.id for r in emulator.stored(MEMORY_ID)},
        )  # fmt: skip


@contextmanager
def mem0_platform_target(tmp_path: Path) -> Iterator[ContractTarget]:
    """`mem0:deployment=platform` through MemoryClient against the imitation of the platform
    API (open-source Mem0 with the stand-in LLM doing its inference)."""
    if importlib.util.find_spec("mem0") is None:
        pytest.skip("the mem0 extra is not installed")
    import httpx

    from healthd.testing.mem0_platform import DEFAULT_KEY, DEFAULT_PROJECT, Mem0Platform

    turn = {"role": "user", "content": "(2024-02-01 09:00 UTC) Billing is owned by @carol."}
    with Mem0Platform(  # verbatim: the stand-in keeps the outside memory it is given
        embedding_model="healthd-hashing",
        embedding_dims=256,
        processing_seconds=0.05,
        style="verbatim",
    ) as platform:
        auth = {"Authorization": f"Token {DEFAULT_KEY}"}

        def write_outside() -> None:
            for user in ("a-real-user", "healthd-shadow2"):
                httpx.post(f"{platform.base_url}/v3/memories/add/", headers=auth,
                           json={"user_id": user, "messages": [turn]}, timeout=30)  # fmt: skip
            platform.wait_idle()

        def snapshot() -> Any:
            platform.wait_idle()
            users = ("healthd-shadow", "a-real-user", "healthd-shadow2")
            return [platform.memories(DEFAULT_PROJECT, user) for user in users]

        def build(shadow: bool) -> Memory:
            os.environ["MEM0_API_KEY"] = DEFAULT_KEY
            return build_memory(parse_target(
                f"mem0:deployment=platform,host={platform.base_url},shadow={_switch(shadow)}"
            ))  # fmt: skip

        outside = ["As of 2024-02-01, billing is owned by @carol."]
        before = os.environ.get("MEM0_API_KEY")
        try:
            yield ContractTarget(
                "mem0-platform", build, snapshot, honours_event_time=False, forgets=False,
                write_outside=write_outside,
                outside_intact=lambda: all(
                    platform.memories(DEFAULT_PROJECT, u) == outside
                    for u in ("a-real-user", "healthd-shadow2")
                ),
            )  # fmt: skip
        finally:  # the key the imitation accepts is this test's alone
            if before is None:
                os.environ.pop("MEM0_API_KEY", None)
            else:
                os.environ["MEM0_API_KEY"] = before


def _zep(search: str, honours: bool, forgets: bool) -> Callable[[Path], Any]:
    """`zep` through zep-cloud against the imitation of Zep's v4 API (Graphiti on Kuzu with the
    stand-in LLM as its engine): two real users' graphs beside the shadow user's."""

    @contextmanager
    def factory(tmp_path: Path) -> Iterator[ContractTarget]:
        for extra in ("zep_cloud", "graphiti_core"):
            if importlib.util.find_spec(extra) is None:
                pytest.skip(f"the {extra.split('_')[0]} extra is not installed")
        import httpx

        from healthd.testing.zep import DEFAULT_KEY, Zep

        with Zep(processing_seconds=0, style="verbatim") as zep:
            auth = {"Authorization": f"Api-Key {DEFAULT_KEY}"}
            outside: dict[str, Any] = {}

            def write_outside() -> None:
                for user in ("a-real-user", "healthd-shadow2"):
                    made = httpx.post(f"{zep.base_url}/users", headers=auth,
                                      json={"user_id": user}, timeout=30).json()  # fmt: skip
                    outside[made["uuid"]] = None
                    httpx.post(f"{zep.base_url}/graphs/{made['uuid']}/episodes", headers=auth,
                               json={"data": 'The owners of billing is "@carol".'},
                               timeout=30)  # fmt: skip
                zep.wait_idle()
                outside.update({uuid: zep.facts(uuid) for uuid in outside})

            def snapshot() -> Any:
                zep.wait_idle()
                users = sorted(zep.users.values(), key=lambda u: str(u.user_id))
                return [(u.user_id, zep.facts(u.uuid)) for u in users], len(zep.episodes)

            def build(shadow: bool) -> Memory:
                os.environ["ZEP_API_KEY"] = DEFAULT_KEY
                return build_memory(parse_target(
                    f"zep:base_url={zep.base_url},search={search},shadow={_switch(shadow)}"
                ))  # fmt: skip

            before = os.environ.get("ZEP_API_KEY")
            try:
                yield ContractTarget(
                    f"zep-{search}", build, snapshot, honours_event_time=honours,
                    forgets=forgets, write_outside=write_outside,
                    outside_intact=lambda: len(outside) == 2 and all(
                        facts and zep.facts(uuid) == facts for uuid, facts in outside.items()
                    ),
                )  # fmt: skip
            finally:  # the key the imitation accepts is this test's alone
                if before is None:
                    os.environ.pop("ZEP_API_KEY", None)
                else:
                    os.environ["ZEP_API_KEY"] = before

    return factory


def _tree_digest(path: Path) -> dict[str, str]:
    import hashlib

    if not path.exists():
        return {}
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def _embedded(target: str, extra: str, honours: bool, forgets: bool) -> Callable[[Path], Any]:
    """Mem0 or Graphiti on a store under the test's directory. Their stores admit one
    process at a time, so data of another application in the same store is checked in
    tests/test_mem0_graphiti_contract.py, which writes it while healthd's target is closed."""

    @contextmanager
    def factory(tmp_path: Path) -> Iterator[ContractTarget]:
        if importlib.util.find_spec(extra) is None:  # not imported: the adapter sets it up
            pytest.skip(f"the {target.split(':', maxsplit=1)[0]} extra is not installed")
        store = tmp_path / "store"

        def build(shadow: bool) -> Memory:
            return build_memory(parse_target(f"{target},path={store},shadow={_switch(shadow)}"))

        yield ContractTarget(
            target.replace(":", "-").replace("=", "-"), build, lambda: _tree_digest(store),
            honours_event_time=honours, forgets=forgets,
            isolation_checked_in="tests/test_mem0_graphiti_contract.py",
        )  # fmt: skip

    return factory


@contextmanager
def langmem_target(tmp_path: Path) -> Iterator[ContractTarget]:
    """LangMem's manager (deletes on) through the stand-in LLM, into a LangGraph
    InMemoryStore that also holds another namespace's memory."""
    if importlib.util.find_spec("langmem") is None:
        pytest.skip("the langmem extra is not installed")
    from langgraph.store.memory import InMemoryStore

    from healthd.embedding import HashingEmbedder
    from healthd.memory import TargetSpec
    from healthd.testing.standin_llm import StandInLLM

    embedder = HashingEmbedder()
    store = InMemoryStore(index={"dims": embedder.dimensions, "embed": embedder.embed})
    outside = ("memories", "team-live")
    said = {"kind": "Memory", "content": {"content": "Billing is owned by @carol."}}

    def snapshot() -> Any:
        return sorted(
            (tuple(ns), i.key, repr(i.value))
            for ns in store.list_namespaces()
            for i in store.search(ns, limit=1000)
        )

    with StandInLLM(style="verbatim") as llm:  # healthd's contract, not the stand-in's style
        os.environ["HEALTHD_CONTRACT_LLM_KEY"] = "standin-not-a-secret"
        model = {
            "model": "openai:team-chat",
            "base_url": llm.base_url,
            "api_key_env": "HEALTHD_CONTRACT_LLM_KEY",
        }

        def build(shadow: bool) -> Memory:
            options = {
                "langmem": {"model": model, "enable_deletes": True},
                "store": store,
                "shadow": _switch(shadow),
                "embedder": "hashing",
            }
            return build_memory(TargetSpec("langmem", options, "langmem"))

        try:
            yield ContractTarget(
                "langmem", build, snapshot, honours_event_time=False, forgets=True,
                write_outside=lambda: store.put(outside, "carol", said),
                outside_intact=lambda: store.get(outside, "carol").value == said,
            )  # fmt: skip
        finally:
            del os.environ["HEALTHD_CONTRACT_LLM_KEY"]


def _letta(ingest: str, forgets: bool) -> Callable[[Path], Any]:
    """`letta` through letta-client against the imitation of Letta's REST API (its agent's
    LLM the stand-in): a real agent's archival memory and blocks beside the shadow agent."""

    @contextmanager
    def factory(tmp_path: Path) -> Iterator[ContractTarget]:
        if importlib.util.find_spec("letta_client") is None:
            pytest.skip("the letta extra is not installed")
        import httpx

        from healthd.testing.letta import DEFAULT_PASSWORD, Letta

        with Letta(style="verbatim") as letta:
            auth = {"Authorization": f"Bearer {DEFAULT_PASSWORD}"}
            outside: dict[str, Any] = {}

            def held(agent_id: str) -> Any:
                agent = letta.agents.get(agent_id)
                if agent is None:
                    return None
                return [p.text for p in agent.passages], [b.value for b in agent.blocks]

            def write_outside() -> None:
                for name in ("a-real-agent", "healthd-shadow2"):
                    made = httpx.post(f"{letta.base_url}/v1/agents/", headers=auth, timeout=30,
                                      json={"name": name, "model": "openai/standin",
                                            "embedding": "openai/all-MiniLM-L6-v2",
                                            "memory_blocks": [{"label": "human",
                                                               "value": "Carol owns billing."}]},
                                      ).json()  # fmt: skip
                    httpx.post(f"{letta.base_url}/v1/agents/{made['id']}/archival-memory",
                               headers=auth, json={"text": 'The owners of billing is "@carol".'},
                               timeout=30)  # fmt: skip
                    outside[made["id"]] = held(made["id"])

            def snapshot() -> Any:
                return sorted((a.name, a.id, held(a.id)) for a in letta.agents.values())

            def build(shadow: bool) -> Memory:
                os.environ["LETTA_API_KEY"] = DEFAULT_PASSWORD
                return build_memory(parse_target(
                    f"letta:base_url={letta.base_url},ingest={ingest},shadow={_switch(shadow)},"
                    "model=openai/standin,embedding=openai/all-MiniLM-L6-v2"
                ))  # fmt: skip

            before = os.environ.get("LETTA_API_KEY")
            try:
                yield ContractTarget(
                    f"letta-{ingest}", build, snapshot, honours_event_time=False,
                    forgets=forgets, write_outside=write_outside,
                    outside_intact=lambda: len(outside) == 2 and all(
                        facts and held(agent) == facts for agent, facts in outside.items()
                    ),
                )  # fmt: skip
            finally:  # the password the imitation accepts is this test's alone
                if before is None:
                    os.environ.pop("LETTA_API_KEY", None)
                else:
                    os.environ["LETTA_API_KEY"] = before

    return factory


FACTORIES: dict[str, Callable[[Path], Any]] = {
    "langmem": langmem_target,
    "reference": reference_target,
    "naive": naive_target,
    "http": http_target,
    "agentcore-native": _agentcore("native", honours=False, forgets=False),
    "agentcore-managed": _agentcore("managed", honours=True, forgets=True),
    "agentcore-events": agentcore_events_target,
    "mem0-native": _embedded("mem0:mode=native", "mem0", honours=False, forgets=False),
    "mem0-managed": _embedded("mem0:mode=managed", "mem0", honours=False, forgets=True),
    "mem0-platform": mem0_platform_target,
    "graphiti-default": _embedded("graphiti:search=default", "graphiti_core", False, False),
    "graphiti-valid": _embedded("graphiti:search=valid", "graphiti_core", True, True),
    "zep-default": _zep("default", honours=False, forgets=False),
    "zep-valid": _zep("valid", honours=True, forgets=True),
    "letta-messages": _letta("messages", forgets=False),
    "letta-passages": _letta("passages", forgets=True),
}


@pytest.fixture(params=sorted(FACTORIES))
def target(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in list(os.environ):
        if name.startswith("AWS_"):  # a developer's profile or keys must play no part
            monkeypatch.delenv(name)
    for name, value in DUMMY_AWS.items():
        monkeypatch.setenv(name, value)
    with FACTORIES[request.param](tmp_path) as under_test:
        yield under_test


__all__ = ["OUTSIDE_FACT", "ContractTarget", "day"]
