"""Every LLM and embedding call healthd causes is counted, by target and purpose, with the
tokens the endpoint reports: in `evaluate --format json` (`targets[].llm`), on
`healthd_llm_calls_total` / `healthd_llm_tokens_total`, in the run's log line, on `/` and
in the HTML report. The products' own clients (Mem0's, Graphiti's) are counted as they send,
through the HTTP client healthd hands them; what is counted is checked against the other end:
the stand-in LLM's own log of the requests it received (healthd.testing.standin_llm, on
127.0.0.1, not a model)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from healthd.llm_usage import add_blocks, purpose_of
from healthd.logging import configure_logging
from healthd.testing.standin_llm import StandInLLM, message_text

os.environ["MEM0_TELEMETRY"] = "False"  # read once, when mem0 is first imported
pytest.importorskip("mem0", reason="the mem0 extra is not installed")

pytestmark = pytest.mark.product

KEY_VAR = "TEAM_LLM_KEY_FOR_TESTS"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInLLM]:
    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with StandInLLM() as server:
        yield server


def mem0_targets(base_url: str, extra: str = "") -> str:
    """A team's Mem0 target through the stand-in (its LLM and embedder behind one
    OpenAI-compatible endpoint, every event a conversation turn), ``extra`` lines added to
    its table, beside the reference target."""
    return f"""[targets.team-mem0]
kind = "mem0"
shadow = true
ingest = "messages"
{extra}
[targets.team-mem0.mem0.llm]
provider = "openai"
config = {{ model = "team-extractor-7b", openai_base_url = "{base_url}", api_key_env = "{KEY_VAR}" }}

[targets.team-mem0.mem0.embedder]
provider = "openai"
config = {{ model = "healthd-hashing", openai_base_url = "{base_url}", api_key_env = "{KEY_VAR}", embedding_dims = 256 }}

[targets.reference]
kind = "reference"
shadow = true
"""


def mem0_config(tmp_path: Path, base_url: str, source: str = "example = true") -> Path:
    """A team's Mem0 run through the stand-in: its LLM and embedder behind one
    OpenAI-compatible endpoint, every event a conversation turn (``ingest = "messages"``)."""
    config = tmp_path / "healthd.toml"
    config.write_text(
        f"""
state_path = {json.dumps(str(tmp_path / "state.sqlite"))}
{source}

{mem0_targets(base_url)}"""
    )
    return config


def standin_log(requests: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """What the stand-in received, by route, and the words it reported as tokens."""
    chats = [r for r in requests if r["path"].endswith("/chat/completions")]
    embeddings = [r for r in requests if r["path"].endswith("/embeddings")]
    assert len(chats) + len(embeddings) == len(requests)
    inputs = [r["input"] if isinstance(r["input"], list) else [r["input"]] for r in embeddings]
    return {
        "chats": len(chats),
        "embeddings": len(embeddings),
        "chat_words": sum(len(message_text(r["messages"]).split()) for r in chats),
        "embedding_words": sum(len(t.split()) for texts in inputs for t in texts),
    }


def sample(text: str, name: str, **labels: str) -> float | None:
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return None


@pytest.mark.slow
def test_the_bundled_example_through_mem0_counts_what_the_standin_received(
    llm: StandInLLM, tmp_path: Path
) -> None:
    """`evaluate --format json --html` on the bundled example: the `llm` block gives the
    calls the stand-in logged, by purpose (Mem0 2.2 makes one extraction call per event;
    everything else is embedding), and the tokens its answers reported; the page says so."""
    from healthd.cli import main

    config = mem0_config(tmp_path, llm.base_url)
    out, page = tmp_path / "report.json", tmp_path / "report.html"
    code = main(
        ["evaluate", "--config", str(config), "--format", "json", "--output", str(out)]
        + ["--html", str(page)]
    )
    assert code == 0
    received = standin_log(llm.requests)
    targets = {t["name"]: t for t in json.loads(out.read_text())["targets"]}
    block = targets["team-mem0"]["llm"]
    assert received["chats"] == 135  # one per event of the example
    assert block["by_purpose"]["extraction"] == {
        "calls": received["chats"],
        "prompt_tokens": received["chat_words"],
        "completion_tokens": block["completion_tokens"],
        "calls_without_usage": 0,
    }
    assert block["by_purpose"]["embedding"] == {
        "calls": received["embeddings"],
        "prompt_tokens": received["embedding_words"],
        "completion_tokens": 0,
        "calls_without_usage": 0,
    }
    assert block["calls"] == len(llm.requests) and set(block["by_purpose"]) == {
        "extraction",
        "embedding",
    }
    assert block["completion_tokens"] > 0 and block["not_counted"] == []
    # the embedded reference memory calls nothing, and says nothing is left uncounted
    assert targets["reference"]["llm"]["calls"] == 0
    assert targets["reference"]["llm"]["not_counted"] == []
    html = page.read_text()
    assert "id='llm-calls'" in html
    assert f"{len(llm.requests)} LLM/embedding calls (extraction 135, embedding" in html


@pytest.mark.slow
def test_the_daemon_exports_the_same_counts_logs_them_and_keeps_them_across_restarts(
    llm: StandInLLM, tmp_path: Path
) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from prometheus_client import generate_latest

    from healthd.daemon.runner import Runner
    from healthd.daemon.state import StateStore
    from healthd.exporters.prometheus import build_registry
    from healthd.exporters.tracing import build_tracer_provider, get_tracer
    from healthd.report.live import live_html
    from healthd.settings import load_settings

    settings = load_settings(str(mem0_config(tmp_path, llm.base_url)))

    def runner_on(state: StateStore) -> Runner:
        tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
        return Runner(settings, state, tracer)

    state = StateStore(settings.state_path)
    runner = runner_on(state)
    registry, _ = build_registry(runner.view)
    # logging set up now (an in-process `evaluate` before may have deferred it to the first
    # line, which would set it up again inside the capture)
    configure_logging("info", "json", io.StringIO())
    try:
        with capture_logs() as logs:
            runner.run_once()
        text = generate_latest(registry).decode()
        page = live_html(runner.view(), ready=True)
    finally:
        runner.close()
        state.close()
    received = standin_log(llm.requests)
    who = {"target": "team-mem0", "role": "subject"}
    calls = "healthd_llm_calls_total"
    tokens = "healthd_llm_tokens_total"
    assert sample(text, calls, purpose="extraction", **who) == received["chats"] == 135
    assert sample(text, calls, purpose="embedding", **who) == received["embeddings"]
    assert (
        sample(text, tokens, purpose="extraction", kind="prompt", **who) == (received["chat_words"])
    )
    assert (
        sample(text, tokens, purpose="embedding", kind="prompt", **who)
        == (received["embedding_words"])
    )
    assert sample(text, calls, target="reference") is None  # it called nothing
    (line,) = [e for e in logs if e["event"] == "run" and e.get("target") == "team-mem0"]
    assert line["llm_calls"] == len(llm.requests)
    assert line["llm_calls_by_purpose"] == {
        "extraction": received["chats"],
        "embedding": received["embeddings"],
    }
    assert line["llm_prompt_tokens"] == received["chat_words"] + received["embedding_words"]
    assert not [e for e in logs if e["event"] == "run" and "llm_calls" in e and e is not line]
    assert f"{len(llm.requests)} LLM/embedding calls (extraction 135" in page

    # a restarted daemon goes on counting from the stored totals (counters never go back)
    before = len(llm.requests)
    state = StateStore(settings.state_path)
    runner = runner_on(state)
    registry, _ = build_registry(runner.view)
    try:
        assert sample(generate_latest(registry).decode(), calls, purpose="extraction", **who) == 135
        runner.run_once()  # nothing new: a fresh replay of the example into the new shadow
        text = generate_latest(registry).decode()
    finally:
        runner.close()
        state.close()
    again = standin_log(llm.requests[before:])
    assert again["chats"] == 135
    assert sample(text, calls, purpose="extraction", **who) == 270
    assert sample(text, calls, purpose="embedding", **who) == (
        received["embeddings"] + again["embeddings"]
    )


def test_every_attempt_is_a_call_and_one_without_usage_is_said_so(llm: StandInLLM) -> None:
    """An endpoint answering 500: the OpenAI SDK under Mem0 tries three times, each an
    attempt the endpoint saw (and may bill); none reported tokens."""
    from healthd.errors import MemoryAdapterError
    from healthd.memory import TargetSpec, build_memory, llm_block
    from healthd.model import ChangeEvent, Fact

    llm.fault = "error"
    table = {
        "llm": {
            "provider": "openai",
            "config": {"model": "m", "openai_base_url": llm.base_url, "api_key_env": KEY_VAR},
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": "healthd-hashing",
                "openai_base_url": llm.base_url,
                "api_key_env": KEY_VAR,
                "embedding_dims": 256,
            },
        },
    }
    memory = build_memory(TargetSpec("mem0", {"ingest": "messages", "mem0": table}))
    try:
        at = datetime(2026, 3, 1, 9, tzinfo=UTC)
        event = ChangeEvent("e1", "added", at, "git", Fact("billing", "owners", "@a", "ownership"))
        with pytest.raises(MemoryAdapterError):
            memory.apply(event)
        block = llm_block(memory, "mem0")
    finally:
        memory.close()
    assert len(llm.requests) >= 2  # retried
    assert block["calls"] == len(llm.requests) == block["calls_without_usage"]
    assert block["prompt_tokens"] == block["completion_tokens"] == 0


@pytest.mark.parametrize("client", ["openai_generic", "openai"])
def test_graphitis_own_async_clients_are_counted_by_what_each_request_asks(
    llm: StandInLLM, client: str
) -> None:
    """Graphiti's add_episode through its own AsyncOpenAI clients (chat completions, or the
    Responses API): every request the stand-in received is counted once, under the purpose
    of the structured answer it asked for, with the tokens each answer reported."""
    pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed")
    from test_graphiti_episodes import HANDOVER, _schema, _table

    from healthd.memory.graphiti import GraphitiMemory

    memory = GraphitiMemory(ingest="episodes", table=_table(llm.base_url, client))
    try:
        for event in HANDOVER:
            memory.apply(event)
        block = memory.llm_usage().block()
    finally:
        memory.close()
    expected: dict[str, int] = {}
    for request in llm.requests:
        purpose = {
            "ExtractedEntities": "extraction",
            "ExtractedEdges": "extraction",
            "NodeResolutions": "dedupe",
            "EdgeDuplicate": "dedupe",
            "SummarizedEntities": "summary",
        }.get(_schema(request) or "", "embedding" if "embeddings" in request["path"] else "?")
        expected[purpose] = expected.get(purpose, 0) + 1
    assert "?" not in expected, expected
    assert {p: row["calls"] for p, row in block["by_purpose"].items()} == expected
    assert {"extraction", "dedupe", "embedding"} <= set(expected)
    assert block["calls"] == len(llm.requests) and block["calls_without_usage"] == 0
    assert block["prompt_tokens"] > 0 and block["completion_tokens"] > 0


def test_purpose_is_read_from_the_products_own_prompts() -> None:
    """Mem0's prompts as its package ships them; the embeddings route; anything else is
    `unknown`, never a guess."""
    from mem0.configs.prompts import ADDITIVE_EXTRACTION_PROMPT, DEFAULT_UPDATE_MEMORY_PROMPT

    def chat(system: str) -> dict[str, Any]:
        return {
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "x"}]
        }

    assert purpose_of("/v1/chat/completions", chat(ADDITIVE_EXTRACTION_PROMPT)) == "extraction"
    assert purpose_of("/v1/chat/completions", chat(DEFAULT_UPDATE_MEMORY_PROMPT)) == (
        "update_decision"
    )
    assert purpose_of("/v1/embeddings?x=1", {"input": "hello"}) == "embedding"
    assert purpose_of("/v1/chat/completions", chat("You are a helpful assistant.")) == "unknown"
    assert purpose_of("/v1/chat/completions", b"not json") == "unknown"


def test_a_daemons_totals_add_up_run_after_run() -> None:
    first = {
        "calls": 3,
        "prompt_tokens": 30,
        "completion_tokens": 3,
        "calls_without_usage": 1,
        "by_purpose": {
            "embedding": {
                "calls": 2,
                "prompt_tokens": 10,
                "completion_tokens": 0,
                "calls_without_usage": 0,
            },
            "extraction": {
                "calls": 1,
                "prompt_tokens": 20,
                "completion_tokens": 3,
                "calls_without_usage": 1,
            },
        },
        "not_counted": [],
    }
    total = add_blocks(add_blocks(None, first), first)
    assert total["calls"] == 6 and total["calls_without_usage"] == 2
    assert list(total["by_purpose"]) == ["extraction", "embedding"]  # in PURPOSES' order
    assert total["by_purpose"]["extraction"]["prompt_tokens"] == 40


def test_healthds_own_judge_is_counted_for_the_target_whose_served_text_it_read(
    tmp_path: Path,
) -> None:
    """`evaluate --reader llm` over two text-serving targets: every request the judge
    received is counted once, as `judge`, under the target whose answer it was reading, with
    the tokens its answers reported; the `http` target also says the service's own calls are
    not counted."""
    from fake_judge import FakeJudge
    from text_memory_service import TextMemoryService

    from healthd.cli import main

    out = tmp_path / "report.json"
    with FakeJudge() as judge, TextMemoryService() as service:
        reader = f"llm:base_url={judge.url},model=fake-judge-1"
        targets = [
            f"http:base_url={service.url},namespace=healthd/{name},shadow=on,baseline={b}"
            for name, b in (("one", "off"), ("two", "on"))
        ]
        args = ["evaluate", "--reader", reader, "--format", "json", "--output", str(out)]
        for target in targets:
            args += ["--target", target]
        assert main(args) == 0
        received = len(judge.requests)
    blocks = [t["llm"] for t in json.loads(out.read_text())["targets"]]
    assert received > 0 and all(b["by_purpose"]["judge"]["calls"] > 0 for b in blocks)
    assert sum(b["calls"] for b in blocks) == received
    for block in blocks:
        assert set(block["by_purpose"]) == {"judge"}
        judged = block["by_purpose"]["judge"]
        # the fake judge reports 1 prompt and 1 completion token an answer
        assert judged["prompt_tokens"] == judged["completion_tokens"] == judged["calls"]
        assert "the service's own LLM and embedding calls" in block["not_counted"][0]
