"""Mem0 as a team runs it (`ingest = "messages"`): each event a dated conversation turn
through `add(infer=True)`, Mem0's own extraction deciding, with the team's LLM, embedder and
vector store from `[targets.NAME.mem0]`. The LLM is the stand-in (healthd.testing.standin_llm,
not a model: it extracts deterministically from healthd's turns), on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from healthd.embedding import HashingEmbedder
from healthd.errors import MemoryAdapterError, TargetError
from healthd.evaluator import Replay
from healthd.memory import TargetSpec, build_memory
from healthd.model import ChangeEvent, Fact
from healthd.probes import build_probe_set
from healthd.testing.standin_llm import StandInLLM

os.environ["MEM0_TELEMETRY"] = "False"  # read once, when mem0 is first imported
pytest.importorskip("mem0", reason="the mem0 extra is not installed")
from healthd.memory.mem0 import _langchain_embeddings

KEY_VAR = "TEAM_LLM_KEY_FOR_TESTS"
T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)
ALICE = Fact("billing", "owners", "@alice", "ownership")
BOB = Fact("billing", "owners", "@bob", "ownership")
GO = Fact("auth-service", "language", "go", "tech")
EVENTS = [
    ChangeEvent("e1", "added", T0, "git", ALICE),
    ChangeEvent("e2", "added", T0.replace(day=2), "git", GO),
    ChangeEvent("e3", "revised", T0.replace(day=3), "git", BOB, previous=ALICE),
    ChangeEvent("e4", "revalidated", T0.replace(day=4), "git", BOB),
]


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInLLM]:
    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with StandInLLM(style="verbatim") as server:  # the pipeline, not the style, under test
        yield server


def team_table(base_url: str, store: Path | None = None) -> dict[str, Any]:
    """A team's Mem0 set-up: its LLM and embedder behind an OpenAI-compatible endpoint, and
    (given ``store``) its own Qdrant folder, collection and history database."""
    table: dict[str, Any] = {
        "llm": {
            "provider": "openai",
            "config": {
                "model": "team-extractor-7b",
                "openai_base_url": base_url,
                "api_key_env": KEY_VAR,
                "temperature": 0,
            },
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": "healthd-hashing",
                "openai_base_url": base_url,
                "api_key_env": KEY_VAR,
                "embedding_dims": 256,
            },
        },
    }
    if store is not None:
        table["vector_store"] = {
            "provider": "qdrant",
            "config": {
                "path": str(store / "qdrant"),
                "collection_name": "team_memories",
                "embedding_model_dims": 256,
                "on_disk": True,
            },
        }
        table["history_db_path"] = str(store / "history.db")
    return table


def messages_target(table: dict[str, Any], **switches: str) -> Any:
    return build_memory(TargetSpec("mem0", {"ingest": "messages", "mem0": table, **switches}))


def stored_points(store: Path) -> list[dict[str, Any]]:
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(store / "qdrant"))
    try:
        points, _ = client.scroll("team_memories", limit=1000, with_payload=True)
        return [dict(p.payload or {}) for p in points]
    finally:
        client.close()


def test_the_teams_llm_embedder_and_vector_store_are_what_mem0_runs_with(
    llm: StandInLLM, tmp_path: Path
) -> None:
    memory = messages_target(team_table(llm.base_url, tmp_path), shadow="on")
    try:
        memory.reset()
        replay = Replay(memory, build_probe_set(EVENTS), mode="full")
        for event in EVENTS:
            replay.step(event)
        reports = {p.probe.subject: p for p in replay.report()}
        fingerprint = memory.retrieval_fingerprint()
        assert fingerprint.embedder == "openai:healthd-hashing"
        assert ("extraction_llm", "openai:team-extractor-7b") in fingerprint.libraries
    finally:
        memory.close()
    chats = [r for r in llm.requests if r["path"].endswith("/chat/completions")]
    embeddings = [r for r in llm.requests if r["path"].endswith("/embeddings")]
    assert len(chats) == len(EVENTS)  # one extraction call per event, Mem0's own prompt
    assert {r["model"] for r in chats} == {"team-extractor-7b"}
    assert "You are a Memory Extractor" in chats[0]["messages"][0]["content"]
    assert (
        "(2026-03-01 09:00 UTC) Billing is owned by @alice." in chats[0]["messages"][1]["content"]
    )
    assert embeddings and {r["model"] for r in embeddings} == {"healthd-hashing"}
    # The team's collection, in the team's folder, holds what Mem0 extracted, in the shadow.
    texts = sorted(p["data"] for p in stored_points(tmp_path))
    assert texts == [
        "As of 2026-03-01, billing is owned by @alice.",
        "As of 2026-03-02, auth-service is written in go.",
        "As of 2026-03-03, billing is owned by @bob (replacing @alice).",
    ]  # the revalidation said nothing new: the extraction skipped it, as the prompt asks
    assert (tmp_path / "history.db").exists()
    # Served and read as text: Mem0 added the revision beside the old memory, and the text
    # of the newer one says Alice was replaced.
    billing = reports["billing"]
    assert {f.value for f, status in billing.retrieved if status == "current"} == {"@bob"}
    served = {r.item.text: r.reading for r in billing.served}
    assert served["As of 2026-03-03, billing is owned by @bob (replacing @alice)."].negated == (
        "@alice",
    )


def test_nothing_is_written_or_reset_outside_the_shadow_user(
    llm: StandInLLM, tmp_path: Path
) -> None:
    from mem0 import Memory

    from healthd.memory._mem0_config import team_config
    from healthd.memory.mem0 import mem0_config

    table = team_table(llm.base_url, tmp_path)
    team = Memory.from_config(mem0_config(str(tmp_path), team=team_config(table, os.environ)))
    team.add("Prefers tabs over spaces", user_id="alice-real", infer=False)
    team.vector_store.client.close()
    team.db.close()

    memory = messages_target(table, shadow="on")
    try:
        memory.reset()
        for event in EVENTS[:2]:
            memory.apply(event)
        memory.reset()
        memory.apply(EVENTS[2])
    finally:
        memory.close()
    by_user = sorted((p["user_id"], p["data"]) for p in stored_points(tmp_path))
    assert by_user == [
        ("alice-real", "Prefers tabs over spaces"),
        ("healthd-shadow", "As of 2026-03-03, billing is owned by @bob (replacing @alice)."),
    ]


@pytest.mark.parametrize("user_id", [" healthd-shadow", "healthd-shadow "])
def test_a_reset_forgets_the_last_messages_of_the_scope_mem0_wrote(
    llm: StandInLLM, tmp_path: Path, user_id: str
) -> None:
    """Mem0 trims the ids it is given (``_validate_and_trim_entity_id``) and keeps the
    scope's last messages under the trimmed ids: a reset forgets those, so the next replay's
    first extraction is not read beside the last one's turns."""
    import sqlite3

    memory = messages_target(team_table(llm.base_url, tmp_path), shadow="on", user_id=user_id)
    try:
        memory.reset()
        memory.apply(EVENTS[0])
        memory.reset()
    finally:
        memory.close()
    with sqlite3.connect(tmp_path / "history.db") as db:
        left = db.execute("SELECT session_scope FROM messages").fetchall()
    assert left == []


@pytest.mark.parametrize("kind", ["mem0", "mem0 platform"])
@pytest.mark.parametrize("name", ["run_id", "agent_id"])
def test_a_blank_scope_id_is_refused_not_dropped(kind: str, name: str) -> None:
    """Mem0 refuses a blank entity id ("cannot be empty or whitespace-only",
    ``_validate_and_trim_entity_id``). Trimmed to nothing and taken as unset, a run_id of
    spaces widened the shadow from one run to the whole user, whose reset then deleted the
    other runs' memories: it is a configuration error naming the id."""
    from healthd.memory._mem0_config import scope_ids

    with pytest.raises(TargetError, match=f"{name} is blank"):
        scope_ids({"user_id": "healthd-shadow", name: "   "}, kind)


def test_the_teams_store_is_refused_unless_declared_shadow(llm: StandInLLM, tmp_path: Path):
    with pytest.raises(TargetError, match="in the team's Mem0 store is not declared shadow"):
        messages_target(team_table(llm.base_url, tmp_path))
    assert not (tmp_path / "qdrant").exists()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda t: t.update(graph_store={"provider": "neo4j"}), "Mem0 2.2 has no graph store"),
        (lambda t: t.update(vector_db={}), "mem0.vector_db: not a Mem0 setting"),
        (
            lambda t: t["llm"].update(config={"model": "m", "api_key": "sk-literal"}),
            "mem0.llm.config.api_key: a secret is not written in the configuration",
        ),
        (
            lambda t: t["llm"]["config"].update(api_key_env="TEAM_TEST_UNSET_VAR"),
            "environment variable TEAM_TEST_UNSET_VAR is not set",
        ),
        (
            lambda t: t.update(vector_store={"provider": "nosuchdb", "config": {}}),
            "mem0 configuration refused by Mem0: vector_store: .*nosuchdb",
        ),
        (
            lambda t: t["llm"].update(provider="nosuchllm"),
            "mem0 configuration refused by Mem0: llm",
        ),
    ],
)
def test_a_configuration_mem0_refuses_is_one_clear_error(
    llm: StandInLLM, tmp_path: Path, change: Any, words: str
) -> None:
    table = team_table(llm.base_url)
    change(table)
    with pytest.raises(TargetError, match=words) as caught:
        messages_target(table, shadow="on")
    assert "\n" not in str(caught.value) and "sk-literal" not in str(caught.value)


def test_messages_need_the_teams_llm_and_mode_is_for_facts() -> None:
    with pytest.raises(TargetError, match=r"needs the team's LLM"):
        build_memory(TargetSpec("mem0", {"ingest": "messages"}))
    with pytest.raises(TargetError, match="with ingest=messages Mem0's own extraction decides"):
        build_memory(TargetSpec("mem0", {"ingest": "messages", "mode": "managed"}))
    with pytest.raises(TargetError, match=r"\[targets.NAME.mem0\]"):
        build_memory(TargetSpec("mem0", {"ingest": "messages", "mem0": "llm=openai"}))


@pytest.mark.parametrize("fault", ["garbage", "error", "prose"])
def test_an_llm_answering_garbage_fails_the_write_instead_of_storing_nothing(
    fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with StandInLLM(fault=fault) as server:
        table = team_table(server.base_url)
        table["embedder"] = {  # local, so that only the LLM is at fault
            "provider": "langchain",
            "config": {"model": _langchain_embeddings(HashingEmbedder()), "embedding_dims": 256},
        }
        memory = messages_target(table)
        try:
            with pytest.raises(MemoryAdapterError, match="mem0 apply of event 'e1'") as caught:
                memory.apply(EVENTS[0])
        finally:
            memory.close()
    assert "\n" not in str(caught.value)


# --- the CLI and the daemon --------------------------------------------------------------


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def config_text(tmp_path: Path, llm_url: str, embed_url: str, extra: str = "") -> str:
    return f"""
example = true
state_path = {json.dumps(str(tmp_path / "state.sqlite"))}
{extra}

[targets.team-mem0]
kind = "mem0"
shadow = true
ingest = "messages"
timeout_seconds = 10

[targets.team-mem0.mem0.llm]
provider = "openai"
config = {{ model = "team-extractor-7b", openai_base_url = "{llm_url}", api_key_env = "{KEY_VAR}" }}

[targets.team-mem0.mem0.embedder]
provider = "openai"
config = {{ model = "healthd-hashing", openai_base_url = "{embed_url}", api_key_env = "{KEY_VAR}", embedding_dims = 256 }}
"""


def healthd(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MEM0_TELEMETRY"}
    env[KEY_VAR] = "sk-standin-not-a-secret-0000"
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_cli_an_llm_endpoint_that_is_down_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with StandInLLM() as embedder:
        config = tmp_path / "healthd.toml"
        config.write_text(config_text(tmp_path, closed_port_url(), embedder.base_url))
        done = healthd("evaluate", "--config", str(config))
    assert done.returncode == 2, done.stderr
    assert "mem0 apply of event 'ex-001'" in done.stderr and "Connection error" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert "sk-standin" not in done.stderr


def test_cli_a_configuration_mem0_refuses_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "healthd.toml"
    text = config_text(tmp_path, closed_port_url(), closed_port_url())
    config.write_text(
        text + '\n[targets.team-mem0.mem0.vector_store]\nprovider = "nosuchdb"\nconfig = {}\n'
    )
    done = healthd("evaluate", "--config", str(config))
    assert done.returncode == 2, done.stderr
    assert "mem0 configuration refused by Mem0" in done.stderr
    assert "nosuchdb" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_daemon_an_llm_answering_garbage_is_a_failed_run_and_other_targets_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from prometheus_client import generate_latest

    from healthd.daemon.runner import Runner
    from healthd.daemon.state import StateStore
    from healthd.exporters.prometheus import build_registry
    from healthd.exporters.tracing import build_tracer_provider, get_tracer
    from healthd.settings import load_settings

    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with StandInLLM(fault="prose") as garbage, StandInLLM() as embedder:
        config = tmp_path / "healthd.toml"
        reference = '[targets.reference]\nkind = "reference"\nshadow = true\n'
        config.write_text(
            config_text(tmp_path, garbage.base_url, embedder.base_url) + "\n" + reference
        )
        settings = load_settings(str(config))
        state = StateStore(settings.state_path)
        runner = Runner(
            settings, state, get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
        )
        registry, _ = build_registry(runner.view)
        try:
            runner.run_once()
        finally:
            runner.close()
            state.close()
    text = generate_latest(registry).decode()
    assert 'healthd_runs_total{result="failure",role="subject",target="team-mem0"} 1.0' in text
    assert 'healthd_runs_total{result="success",role="subject",target="reference"} 1.0' in text
    error = runner.view()["targets"]["team-mem0"].last_error
    assert "Error parsing extraction response" in error and "sk-standin" not in error


# --- a live run against the team's own endpoint ------------------------------------------

LIVE_VARS = ("TEAM_LLM_BASE_URL", "TEAM_LLM_MODEL", "TEAM_LLM_API_KEY")


@pytest.mark.skipif(
    not all(os.environ.get(v) for v in LIVE_VARS),
    reason=f"no team LLM endpoint: set {', '.join(LIVE_VARS)} to run Mem0 live",
)
def test_live_mem0_extraction_through_the_teams_llm() -> None:
    table = {
        "llm": {
            "provider": "openai",
            "config": {
                "model": os.environ["TEAM_LLM_MODEL"],
                "openai_base_url": os.environ["TEAM_LLM_BASE_URL"],
                "api_key_env": "TEAM_LLM_API_KEY",
            },
        }
    }
    memory = messages_target(table)
    try:
        memory.reset()
        replay = Replay(memory, build_probe_set(EVENTS[:1]), mode="full")
        replay.step(EVENTS[0])
        (probe,) = replay.report()
        assert any("alice" in r.item.text.lower() for r in probe.served)
    finally:
        memory.close()


# --- the README's comparison: tests/test_standin_style_runs.py, in both styles of the stand-in


def test_an_llm_that_never_answers_fails_the_write_within_timeout_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A listener that accepts connections and never answers: Mem0 would leave the OpenAI
    SDK's ten-minute timeout (three times, with retries); healthd's ``timeout_seconds``
    bounds each call."""
    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        table = team_table(f"http://127.0.0.1:{silent.getsockname()[1]}/v1")
        table["embedder"] = {
            "provider": "langchain",
            "config": {"model": _langchain_embeddings(HashingEmbedder()), "embedding_dims": 256},
        }
        memory = messages_target(table, timeout_seconds="1")
        try:
            with pytest.raises(MemoryAdapterError, match="timed out"):
                memory.apply(EVENTS[0])
        finally:
            memory.close()
