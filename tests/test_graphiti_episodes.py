"""Graphiti as a team runs it (`ingest = "episodes"`): every event an episode through
Graphiti's own add_episode, its own LLM calls deciding what is stored and what ends.

The LLM here is healthd's stand-in (healthd.testing.standin_llm, not a model: it answers
Graphiti's prompts deterministically from the sentences healthd renders), reached through
Graphiti's real OpenAI clients over HTTP on 127.0.0.1; the embedder is Graphiti's real
OpenAIEmbedder on the stand-in's /v1/embeddings."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from healthd.memory.graphiti_episodes import STATEMENT, episode_text
from healthd.model import ChangeEvent, Fact, Probe
from healthd.testing.standin_llm import StandInLLM
from healthd.timeline import event_from_dict

pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed")

from healthd.memory.graphiti import GraphitiMemory
from healthd.memory.graphiti_setup import parse_table

ROOT = Path(__file__).resolve().parent.parent
MODEL = "team-model-standin"


def _event(id: str, type: str, at: str, value: str, previous: str | None = None) -> ChangeEvent:
    data: dict[str, Any] = {
        "id": id,
        "type": type,
        "timestamp": at,
        "source": "tickets",
        "fact": {
            "subject": "billing",
            "predicate": "owners",
            "value": value,
            "domain": "ownership",
        },
    }
    if previous is not None:
        data["previous"] = {**data["fact"], "value": previous}
    return event_from_dict(data)


HANDOVER = [
    _event("t-1", "added", "2026-01-06T10:00:00Z", "@alice"),
    _event("t-2", "revised", "2026-03-20T09:00:00Z", "@bob", previous="@alice"),
    _event("t-3", "revalidated", "2026-04-28T09:00:00Z", "@bob"),
]
PROBE = Probe("p-billing", "billing", "owners", "Who owns billing?", "ownership")
AT = datetime(2026, 5, 1, tzinfo=UTC)


def _table(base_url: str, client: str = "openai_generic") -> Any:
    return parse_table(
        {
            "llm": {"client": client, "model": MODEL, "small_model": MODEL, "base_url": base_url},
            "embedder": {
                "provider": "openai",
                "model": "healthd-hashing",
                "base_url": base_url,
                "dimensions": 256,
            },
        }
    )


@pytest.fixture
def standin() -> Iterator[StandInLLM]:
    with StandInLLM(style="verbatim") as server:  # the pipeline, not the style, under test
        yield server


def _edges(memory: GraphitiMemory) -> dict[str, Any]:
    from graphiti_core.edges import EntityEdge

    edges = memory._run(EntityEdge.get_by_group_ids(memory._driver, [memory.group_id]))
    return {edge.fact: edge for edge in edges}


def _schema(request: Mapping[str, Any]) -> str | None:
    format_ = request.get("response_format") or (request.get("text") or {}).get("format") or {}
    return format_.get("json_schema", {}).get("name") or format_.get("name")


@pytest.mark.parametrize(
    ("client", "route"), [("openai_generic", "/v1/chat/completions"), ("openai", "/v1/responses")]
)
def test_an_episode_run_ends_the_old_edge_by_graphitis_own_contradiction_detection(
    standin: StandInLLM, client: str, route: str
) -> None:
    memory = GraphitiMemory(ingest="episodes", table=_table(standin.base_url, client))
    try:
        for event in HANDOVER:
            memory.apply(event)
        edges = _edges(memory)
        alice, bob = (
            edges['The owners of billing is "@alice".'],
            edges['The owners of billing is "@bob".'],
        )
        # Graphiti's pipeline ended Alice's edge at the handover's event time; healthd wrote
        # no edge and decided nothing.
        assert alice.invalid_at.replace(tzinfo=UTC) == datetime(2026, 3, 20, 9, tzinfo=UTC)
        assert alice.expired_at is not None
        assert bob.invalid_at is None and bob.expired_at is None
        assert len(bob.episodes) == 2  # the revalidation merged into Bob's edge

        served = memory.answer(PROBE, AT).items
        assert {item.text for item in served} >= {alice.fact, bob.fact}
        bob_item = next(item for item in served if item.text == bob.fact)
        assert bob_item.written_at == datetime(2026, 3, 20, 9, tzinfo=UTC)
        assert bob_item.validated_at == datetime(2026, 4, 28, 9, tzinfo=UTC)
        memory.search = "valid"
        assert [item.text for item in memory.answer(PROBE, AT).items] == [bob.fact]
    finally:
        memory.close()

    chats = [r for r in standin.requests if "embeddings" not in r["path"]]
    assert {r["path"] for r in chats} == {route}
    assert {r["model"] for r in chats} == {MODEL}  # the team's model, as configured
    decisions = [r for r in chats if _schema(r) == "EdgeDuplicate"]
    assert any("@alice" in json.dumps(r) and "@bob" in json.dumps(r) for r in decisions)
    embedded = [r for r in standin.requests if r["path"].endswith("/embeddings")]
    assert embedded and {r["model"] for r in embedded} == {"healthd-hashing"}


def test_what_ends_is_the_llms_decision_not_healthds(standin: StandInLLM) -> None:
    """The same episodes with an LLM that never sees a contradiction: Alice's edge stays."""

    def never_contradicts(request: Mapping[str, Any], *style_and_seed: object) -> str | None:
        if _schema(request) != "EdgeDuplicate":
            return None
        return json.dumps({"duplicate_facts": [], "contradicted_facts": []})

    standin._responders.insert(0, never_contradicts)
    memory = GraphitiMemory(ingest="episodes", table=_table(standin.base_url))
    try:
        for event in HANDOVER[:2]:
            memory.apply(event)
        alice = _edges(memory)['The owners of billing is "@alice".']
        assert alice.invalid_at is None and alice.expired_at is None
    finally:
        memory.close()


def test_episode_sentences_say_what_changed_and_read_back() -> None:
    cases = [
        (HANDOVER[0], 'The owners of billing is "@alice".'),
        (HANDOVER[1], 'The owners of billing changed from "@alice" to "@bob".'),
        (HANDOVER[2], 'The owners of billing is still "@bob".'),
        (
            _event("t-4", "invalidated", "2026-06-01T00:00:00Z", "@bob"),
            'The owners of billing is no longer "@bob".',
        ),
    ]
    for event, text in cases:
        assert episode_text(event) == text
        assert STATEMENT.match(text)
    ended = ChangeEvent(
        "m-1",
        "invalidated",
        datetime(2026, 9, 15, tzinfo=UTC),
        "git",
        Fact("payments-v1", "exists", "true", "tech"),
    )
    assert episode_text(ended) == "payments-v1 no longer exists."


# --- bad input: one line, exit 2, a failed-run metric ---------------------------------------


def _timeline(tmp: Path) -> Path:
    path = tmp / "timeline.jsonl"
    with path.open("w") as out:
        for event in HANDOVER:
            from healthd.timeline import dumps_event

            out.write(dumps_event(event) + "\n")
    return path


def _config(tmp: Path, base_url: str, **llm: str) -> Path:
    llm_lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in llm.items())
    path = tmp / "healthd.toml"
    path.write_text(
        f"""state_path = {json.dumps(str(tmp / "state.sqlite"))}

[sources.tickets]
kind = "file"
path = {json.dumps(str(_timeline(tmp)))}

[targets.reference]
kind = "reference"
shadow = true

[targets.graph]
kind = "graphiti"
shadow = true
ingest = "episodes"

[targets.graph.graphiti.llm]
base_url = {json.dumps(base_url)}
model = "standin"
{llm_lines}

[targets.graph.graphiti.embedder]
provider = "hashing"
"""
    )
    return path


def _healthd(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("fault", ["down", "garbage", "error"])
def test_an_llm_endpoint_down_or_answering_garbage_is_one_line_and_exit_2(
    tmp_path: Path, fault: str
) -> None:
    if fault == "down":
        result = _healthd(
            "evaluate", "--config", str(_config(tmp_path, f"http://127.0.0.1:{_closed_port()}/v1"))
        )
    else:
        with StandInLLM(fault=fault) as server:
            result = _healthd("evaluate", "--config", str(_config(tmp_path, server.base_url)))
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "graphiti add_episode of event 't-1'" in lines[0]


@pytest.mark.parametrize(
    ("llm", "expected"),
    [
        ({"modle": "x"}, "graphiti.llm.modle: Extra inputs are not permitted"),
        (
            {"client": "anthropic"},
            "graphiti.llm.client: Input should be 'openai' or 'openai_generic'",
        ),
        (
            {"api_key_env": "HEALTHD_TEST_UNSET_KEY"},
            "graphiti.llm: environment variable 'HEALTHD_TEST_UNSET_KEY' (api_key_env) is not set",
        ),
    ],
)
def test_a_bad_graphiti_table_is_one_line_naming_the_key(
    tmp_path: Path, llm: dict[str, str], expected: str
) -> None:
    result = _healthd(
        "check-config", "--config", str(_config(tmp_path, "http://127.0.0.1:9/v1", **llm))
    )
    assert result.returncode == 2
    assert expected in result.stderr
    assert "HEALTHD_TEST_UNSET_KEY=" not in result.stderr


def test_episodes_without_the_teams_llm_is_refused(tmp_path: Path) -> None:
    from healthd.errors import TargetError

    with pytest.raises(TargetError, match=r"ingest=episodes needs the team's LLM"):
        GraphitiMemory(ingest="episodes")


def test_a_down_llm_is_a_failed_run_metric_in_the_daemon_and_the_others_run(
    tmp_path: Path,
) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "daemon"))
    from daemon_helpers import parse_metrics, sample
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from prometheus_client import generate_latest

    from healthd.daemon.runner import Runner
    from healthd.daemon.state import StateStore
    from healthd.exporters.prometheus import build_registry
    from healthd.exporters.tracing import build_tracer_provider, get_tracer
    from healthd.settings import load_settings

    settings = load_settings(str(_config(tmp_path, f"http://127.0.0.1:{_closed_port()}/v1")))
    state = StateStore(settings.state_path)
    runner = Runner(
        settings, state, get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
    )
    registry, _ = build_registry(runner.view)
    try:
        runner.run_once()
        metrics = parse_metrics(generate_latest(registry).decode())
        assert sample(metrics, "healthd_runs_total", target="graph", result="failure") == 1
        assert sample(metrics, "healthd_runs_total", target="reference", result="success") == 1
        error = runner.view()["targets"]["graph"].last_error
        assert "add_episode of event 't-1'" in error and "\n" not in error
    finally:
        runner.close()
        state.close()


# --- Kuzu's memory bound ----------------------------------------------------------------------


def test_kuzu_runs_on_a_bounded_buffer_pool_as_graphitis_own_driver() -> None:
    from graphiti_core.driver.kuzu_driver import KuzuDriver

    default = GraphitiMemory()
    configured = GraphitiMemory(
        table=parse_table({"driver": {"buffer_pool_size": "64MiB", "max_db_size": "1GiB"}})
    )
    try:
        assert isinstance(default._driver, KuzuDriver)
        assert default._driver.db.buffer_pool_size == 256 * 1024**2
        assert configured._driver.db.buffer_pool_size == 64 * 1024**2
        assert configured._driver.db.max_db_size == 1024**3
        assert default._driver.db.checkpoint_threshold == 1024**2
        with pytest.warns(DeprecationWarning):
            stock = KuzuDriver(db=":memory:")
        # every operation Graphiti's own driver sets up, and nothing else
        assert set(vars(configured._driver)) == set(vars(stock))
        stock.client.close()
        stock.db.close()
    finally:
        default.close()
        configured.close()


def test_a_buffer_pool_size_that_is_not_a_size_is_one_line() -> None:
    from healthd.errors import TargetError

    with pytest.raises(TargetError, match=r"graphiti.driver.buffer_pool_size: .*not a size"):
        parse_table({"driver": {"buffer_pool_size": "lots"}})


# --- the team's LLM, live ---------------------------------------------------------------------

LIVE = ("HEALTHD_LIVE_LLM_BASE_URL", "HEALTHD_LIVE_LLM_MODEL", "HEALTHD_LIVE_LLM_API_KEY_ENV")


@pytest.mark.skipif(
    not all(os.environ.get(name) for name in LIVE),
    reason="the team's LLM is not configured: set " + ", ".join(LIVE) + " (and the key's variable)",
)
def test_live_graphiti_with_the_teams_llm_ends_a_handed_over_ownership() -> None:
    table = parse_table(
        {
            "llm": {
                "client": os.environ.get("HEALTHD_LIVE_LLM_CLIENT", "openai"),
                "model": os.environ["HEALTHD_LIVE_LLM_MODEL"],
                "base_url": os.environ["HEALTHD_LIVE_LLM_BASE_URL"],
                "api_key_env": os.environ["HEALTHD_LIVE_LLM_API_KEY_ENV"],
            },
            "embedder": {"provider": "minilm"},
        }
    )
    memory = GraphitiMemory(ingest="episodes", search="valid", table=table)
    try:
        for event in HANDOVER:
            memory.apply(event)
        texts = " ".join(item.text for item in memory.answer(PROBE, AT).items)
        assert "bob" in texts.lower() and "alice" not in texts.lower()
    finally:
        memory.close()


def test_the_stand_in_answers_graphitis_prompts_only_from_healthds_sentences() -> None:
    from healthd.testing.standin_llm import graphiti as responder

    def ask(schema: str, content: str) -> Any:
        request = {
            "messages": [{"role": "user", "content": content}],
            "response_format": {"type": "json_schema", "json_schema": {"name": schema}},
        }
        answer = responder.respond(request, "verbatim")
        return None if answer is None else json.loads(answer)

    text = '<TEXT>\nThe language of auth-service changed from "node" to "go".\n</TEXT>'
    assert ask("ExtractedEntities", text)["extracted_entities"] == [
        {"name": n, "entity_type_id": 0, "episode_indices": [0]}
        for n in ("auth-service", "node", "go")
    ]
    assert ask("ExtractedEntities", "<TEXT>\nbob said hi\n</TEXT>") == {"extracted_entities": []}
    decision = ask(
        "EdgeDuplicate",
        "<EXISTING FACTS>\n[{'idx': 0, 'fact': 'The language of auth-service is \"node\".'}]\n"
        "</EXISTING FACTS>\n<FACT INVALIDATION CANDIDATES>\n"
        "[{'idx': 1, 'fact': 'The language of billing is \"node\".'}]\n"
        "</FACT INVALIDATION CANDIDATES>\n<NEW FACT>\n"
        'The language of auth-service is "go".\n</NEW FACT>',
    )
    assert decision == {"duplicate_facts": [], "contradicted_facts": [0]}
    assert ask("SomeoneElsesModel", text) is None  # another product's prompt: not ours
    assert responder.respond({"messages": [{"role": "user", "content": "2+2?"}]}) is None
