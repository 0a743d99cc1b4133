"""The Letta target (``letta``) through ``letta-client`` 1.x, against the local imitation of a
Letta server's REST API (``healthd/testing/letta.py``) whose agents' LLM is the stand-in. Each
refusal of the imitation cites the Letta server 0.16.8 source it is taken from
(``letta/server/rest_api/routers/v1/agents.py``, ``letta/schemas``, ``app.py``'s handlers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime

import pytest

pytest.importorskip("letta_client", reason="the letta extra is not installed")
httpx = pytest.importorskip("httpx")

from healthd.errors import MemoryAdapterError, TargetError
from healthd.memory import build_memory, parse_target
from healthd.model import ChangeEvent, Fact, Probe
from healthd.testing.letta import DEFAULT_PASSWORD, Letta
from healthd.testing.standin_llm import StandInLLM

PROBE = Probe("p-billing", "Who owns billing?", "billing", "owned_by", "ownership")
EMBEDDING = "openai/all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def letta():
    with Letta(style="verbatim") as running:
        yield running


@pytest.fixture
def api(letta):
    headers = {"Authorization": f"Bearer {DEFAULT_PASSWORD}"}
    with httpx.Client(base_url=f"{letta.base_url}/v1", headers=headers, timeout=60) as client:
        yield client


def owner(n: int, value: str, previous: str | None = None, kind: str = "") -> ChangeEvent:
    at = datetime(2024, 3, n, 9, tzinfo=UTC)
    fact = Fact("billing", "owned_by", value, "ownership")
    before = Fact("billing", "owned_by", previous, "ownership") if previous else None
    kind = kind or ("revised" if previous else "added")
    return ChangeEvent(f"e{n}-{uuid.uuid4().hex[:6]}", kind, at, "test", fact, before)


def target(letta, monkeypatch, **switches: str):
    monkeypatch.setenv("LETTA_API_KEY", DEFAULT_PASSWORD)
    options = {"shadow": "on", "base_url": letta.base_url, "embedding": EMBEDDING,
               "agent_name": f"shadow-{uuid.uuid4().hex[:8]}", **switches}  # fmt: skip
    return build_memory(parse_target("letta:" + ",".join(f"{k}={v}" for k, v in options.items())))


def texts(memory) -> list[str]:
    return [item.text for item in memory.answer(PROBE, datetime(2024, 3, 9, tzinfo=UTC)).items]


def agent_of(letta, memory):
    return letta.agents[memory._agent_id]


# --- the target through the SDK ---------------------------------------------------------------


def test_messages_the_agents_own_tool_calls_decide_and_archival_keeps_what_it_stored(
    letta, monkeypatch
):
    """Each event is a user message; the agent's tool calls (the stand-in as its LLM) insert
    into archival memory and its human block, and replace the block's line when the owner
    changes. Letta gives the agent no tool that deletes a passage: the old owner stays in
    archival memory and is served beside the new one."""
    memory = target(letta, monkeypatch)
    try:
        memory.reset()
        memory.apply(owner(1, "@alice"))
        memory.apply(owner(5, "@bob", previous="@alice"))
        agent = agent_of(letta, memory)
        human = next(b for b in agent.blocks if b.label == "human")
        assert "@bob" in human.value and "@alice" not in human.value
        assert sorted(p.text for p in agent.passages) == [
            "Billing is owned by @alice.", "Billing is owned by @bob.",
        ]  # fmt: skip
        served = memory.answer(PROBE, datetime(2024, 3, 9, tzinfo=UTC)).items
        assert {i.text for i in served} == {
            "Billing is owned by @alice.",
            "Billing is owned by @bob.",
        }
        # what the agent wrote is dated by the event whose turn wrote it, not the server's clock
        assert sorted(i.written_at.day for i in served if i.written_at) == [1, 5]
        memory.apply(owner(7, "@bob", kind="invalidated"))  # the agent removes the line...
        assert "@bob" not in next(b for b in agent.blocks if b.label == "human").value
        assert len(agent.passages) == 2  # ...and has no tool to delete the passage
    finally:
        memory.close()


def test_the_teams_model_and_embedder_are_what_the_agent_uses_and_its_calls_are_counted(
    monkeypatch,
):
    with StandInLLM(style="verbatim") as llm, Letta(llm_base_url=llm.base_url) as letta:
        memory = target(letta, monkeypatch, model="openai/team-model",
                        embedding="openai/healthd-hashing")  # fmt: skip
        try:
            memory.reset()
            memory.apply(owner(1, "@alice"))
            chats = [r for r in llm.requests if r["path"].endswith("/chat/completions")]
            embeds = [r for r in llm.requests if r["path"].endswith("/embeddings")]
            assert chats and {r["model"] for r in chats} == {"team-model"}
            assert embeds and {r["model"] for r in embeds} == {"healthd-hashing"}
            block = memory.llm_usage().block()
            assert block["calls"] == len(chats) == letta.llm_requests
            assert block["prompt_tokens"] == sum(
                len(" ".join(str(m.get("content") or "") for m in r["messages"]).split())
                for r in chats
            )
            assert "embedding calls" in block["not_counted"][0]
        finally:
            memory.close()


def test_passages_the_upper_bound_inserts_at_event_time_and_deletes_what_ends(letta, monkeypatch):
    memory = target(letta, monkeypatch, ingest="passages")
    try:
        memory.reset()
        before = letta.llm_requests
        memory.apply(owner(1, "@alice"))
        memory.apply(owner(5, "@bob", previous="@alice"))
        agent = agent_of(letta, memory)
        assert [(p.text, p.created_at.day) for p in agent.passages] == [
            ("Who owns billing? @bob", 5)
        ]
        assert letta.llm_requests == before  # healthd decided: no agent step
        memory.apply(owner(6, "@bob", kind="invalidated"))
        assert texts(memory) == []
    finally:
        memory.close()


def test_a_second_agents_memory_is_left_intact_and_unread(letta, api, monkeypatch):
    other = api.post("/agents/", json={"name": "support-bot", "model": "openai/m",
                                       "embedding": EMBEDDING,
                                       "memory_blocks": [{"label": "human",
                                                          "value": "Billing is owned by @carol."}]}
                     ).json()  # fmt: skip
    api.post(f"/agents/{other['id']}/archival-memory", json={"text": "Billing is owned by @carol."})
    memory = target(letta, monkeypatch)
    try:
        seen = len(letta.requests)
        memory.reset()
        memory.apply(owner(1, "@alice"))
        assert "@carol" not in " ".join(texts(memory))
        touched = [path for _, path, _ in letta.requests[seen:] if other["id"] in path]
        assert touched == []
        kept = letta.agents[other["id"]]
        assert [p.text for p in kept.passages] == ["Billing is owned by @carol."]
        assert kept.blocks[0].value == "Billing is owned by @carol."
    finally:
        memory.close()


def test_an_agent_of_that_name_healthd_did_not_create_is_refused(letta, api, monkeypatch):
    name = f"team-agent-{uuid.uuid4().hex[:6]}"
    made = api.post("/agents/", json={"name": name, "model": "openai/m"}).json()
    with pytest.raises(TargetError, match="was not created by healthd"):
        target(letta, monkeypatch, agent_name=name)
    assert made["id"] in letta.agents and letta.agents[made["id"]].passages == []


def test_a_shadow_agent_from_an_earlier_run_is_adopted(letta, monkeypatch):
    first = target(letta, monkeypatch)
    first.reset()
    again = target(letta, monkeypatch, agent_name=first.agent_name)
    try:
        assert again._agent_id == first._agent_id
    finally:
        first.close()
        again.close()


# --- the service misbehaving: a failed run, not a crash -----------------------------------------


def test_an_llm_that_fails_is_a_failed_run_naming_the_event(monkeypatch):
    with StandInLLM(fault="error") as llm, Letta(llm_base_url=llm.base_url) as letta:
        memory = target(letta, monkeypatch)
        try:
            memory.reset()
            with pytest.raises(MemoryAdapterError, match=r"event 'e1-.*HTTP 500"):
                memory.apply(owner(1, "@alice"))
        finally:
            memory.close()


def test_a_turn_that_runs_out_of_steps_is_a_failed_run(letta, monkeypatch):
    memory = target(letta, monkeypatch, max_steps=1)
    try:
        memory.reset()
        with pytest.raises(MemoryAdapterError, match="stopped with 'max_steps'"):
            memory.apply(owner(1, "@alice"))
    finally:
        memory.close()


# --- the imitation refuses what Letta refuses ----------------------------------------------------


@pytest.fixture
def agent(api):
    return api.post("/agents/", json={"name": "x", "model": "openai/m", "embedding": EMBEDDING,
                                      "memory_blocks": [{"label": "human", "value": "a\na"}],
                                      }).json()  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "said"),
    [
        # CreateArchivalMemory: text = Field(...); a field it does not know is ignored
        ("POST", "/agents/{id}/archival-memory", {"tags": ["t"]}, 422, "text"),
        # search_archival_memory: query = Query(...)
        ("GET", "/agents/{id}/archival-memory/search", None, 422, "query"),
        # AgentId path validator: agent-{uuid4}; LettaAgentNotFoundError / NoResultFound: 404
        ("GET", "/agents/agent-1", None, 422, "agent-{uuid4}"),
        ("GET", "/agents/agent-3f0c2b1e-8d7a-4c55-9e21-6b0f4a7d9c13", None, 404, "not found"),
        ("DELETE", "/agents/{id}/archival-memory/passage-nope", None, 404, "not found"),
        # agent_manager.create_agent_async: "llm_config is required"; HandleNotFoundError: 404
        ("POST", "/agents/", {"name": "n"}, 400, "llm_config is required"),
        ("POST", "/agents/", {"name": "n", "model": "anthropic/claude"}, 404, "Handle"),
        # CreateBlock is a LettaBase: extra="forbid"
        ("POST", "/agents/", {"model": "openai/m", "memory_blocks": [{"label": "h", "value": "",
                                                                     "colour": "red"}]}, 422,
         "extra"),
        # MessageCreate: role is a MessageRole, content required
        ("POST", "/agents/{id}/messages", {"messages": [{"role": "tool", "content": "hi"}]}, 422,
         "role"),
        ("POST", "/agents/{id}/messages", {"messages": [{"role": "user"}]}, 422, "content"),
    ],
)  # fmt: skip
def test_a_request_letta_refuses(api, agent, method, path, body, status, said):
    answer = api.request(method, path.replace("{id}", agent["id"]), json=body)
    assert answer.status_code == status, answer.text
    assert said in answer.json()["detail"]


def test_a_password_protected_server_asks_for_the_bearer_password(letta):
    # CheckPasswordMiddleware: "Authorization: Bearer <password>", health left open
    assert httpx.get(f"{letta.base_url}/v1/agents/").status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert httpx.get(f"{letta.base_url}/v1/agents/", headers=wrong).json() == {
        "detail": "Unauthorized"
    }
    assert httpx.get(f"{letta.base_url}/v1/health/").status_code == 200


def test_memory_replace_needs_its_old_string_exactly_once(letta, agent):
    # base.py memory_replace: "Multiple occurrences of old_string ... Please ensure it is unique."
    held = letta.agents[agent["id"]]
    status, said = letta._run_tool(held, "memory_replace",
                                   json.dumps({"label": "human", "old_string": "a", "new_string": "b"}))  # fmt: skip
    assert status == "error" and "occurs 2 times" in said
    assert held.blocks[0].value == "a\na"


# --- an answer that is not Letta's shape: one line naming the field ------------------------------
# letta-client constructs its objects without validating them; before these were checked,
# each of these answers was a traceback, a silently better score, or a loop of 10^30 steps.


class Mangling(Letta):
    """The imitation with its answers to one route (a method, the path's end) changed by
    ``mangle(answer)``."""

    def __init__(self, route: str, mangle) -> None:
        super().__init__(style="verbatim")
        self.method, _, self.path_end = route.partition(" ")
        self.mangle = mangle

    def _route(self, method, path, params, body):
        status, answer = super()._route(method, path, params, body)
        if status < 300 and method == self.method and path.endswith(self.path_end):
            answer = self.mangle(answer)
        return status, answer


def _set(answer, path: str, value):
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    held = answer
    for part in parents:
        held = held[part]
    if value is KeyError:
        del held[last]
    else:
        held[last] = value
    return answer


def _run_to_a_probe(letta, monkeypatch, **switches):
    """What a probe is served after one event."""
    memory = target(letta, monkeypatch, **switches)
    try:
        memory.reset()
        memory.apply(owner(1, "@alice"))
        return memory.answer(PROBE, datetime(2024, 3, 9, tzinfo=UTC)).items
    finally:
        memory.close()


@pytest.mark.parametrize(
    ("route", "field", "value", "said"),
    [
        # a passage id the adapter dated by the server's clock instead of the event (score up)
        ("GET /archival-memory/search", "results.0.id", None, "field 'results.0.id'"),
        ("GET /archival-memory/search", "results.0.id", KeyError, "field 'results.0.id'"),
        ("GET /archival-memory/search", "results.0.content", 5, "field 'results.0.content'"),
        ("GET /archival-memory/search", "results", "", "field 'results'"),  # read as nothing served
        ("GET /archival-memory/search", "results.0", None, "field 'results.0'"),  # a traceback
        ("GET /archival-memory", "0.id", None, "field '0.id'"),
        ("GET /core-memory/blocks", "0.value", 12, "value'"),
        ("POST /messages", "usage.step_count", "two", "field 'usage.step_count'"),
        ("POST /messages", "usage.prompt_tokens", -1, "'usage.prompt_tokens'"),
        ("POST /messages", "messages", {}, "field 'messages'"),
    ],
)  # fmt: skip
def test_an_answer_field_of_the_wrong_type_is_one_error_naming_it(
    monkeypatch, route, field, value, said
):
    def mangle(answer):
        return _set(answer, field, value) if answer else answer

    with Mangling(route, mangle) as letta, pytest.raises(MemoryAdapterError) as raised:
        _run_to_a_probe(letta, monkeypatch)
    message = str(raised.value)
    assert said in message and "not what Letta's schema says" in message
    assert "\n" not in message and len(message) < 600


def test_an_agent_list_item_that_is_not_an_agent_is_refused_before_anything_is_written(
    monkeypatch,
):
    with Mangling("GET /v1/agents", lambda answer: [*answer, None]) as letta:
        with pytest.raises(TargetError, match=r"field 'items\.0'"):
            target(letta, monkeypatch)
        assert letta.agents == {}


def test_a_turn_reporting_more_steps_than_max_steps_is_refused_not_counted(monkeypatch):
    """Letta ends a turn at max_steps: a larger step_count is no count. Before, 11 steps were
    counted as 11 LLM calls, and 10^30 looped for ever."""

    def steps(answer):
        answer["usage"]["step_count"] = 11
        return answer

    refused = pytest.raises(MemoryAdapterError, match="reports 11 steps, more than max_steps=10")
    with Mangling("POST /messages", steps) as letta, refused:
        _run_to_a_probe(letta, monkeypatch)


def test_a_passage_list_that_does_not_move_past_after_is_refused_not_read_for_ever(monkeypatch):
    """Reading what a turn stored pages with ``after``; a server that ignores it and answers
    the same full page again was read again for as long as the run lasted."""
    same = [{"id": f"passage-{i:03d}", "text": "x"} for i in range(100)]
    refused = pytest.raises(MemoryAdapterError, match="answered passages already read after")
    with Mangling("GET /archival-memory", lambda answer: list(same)) as letta, refused:
        _run_to_a_probe(letta, monkeypatch)


def test_a_stop_reason_of_a_megabyte_is_quoted_short(monkeypatch):
    def stop(answer):
        answer["stop_reason"]["stop_reason"] = "x" * 1_000_000
        return answer

    refused = pytest.raises(MemoryAdapterError, match="stopped with 'xxx")
    with Mangling("POST /messages", stop) as letta, refused as raised:
        _run_to_a_probe(letta, monkeypatch)
    assert len(str(raised.value)) < 400


def test_a_malformed_answer_is_one_line_and_exit_2_from_evaluate(tmp_path):
    """As a user sees it: `healthd evaluate` names the field, no traceback."""
    (tmp_path / "t.jsonl").write_text(
        json.dumps({"id": "e1", "type": "added", "timestamp": "2026-01-05T09:00:00Z",
                    "source": "git", "fact": {"subject": "billing", "predicate": "owned_by",
                                              "value": "@alice", "domain": "ownership"}}) + "\n"
    )  # fmt: skip

    def no_id(answer):
        for row in answer["results"]:
            row["id"] = None
        return answer

    with Mangling("GET /archival-memory/search", no_id) as letta:
        done = healthd(
            "--timeline", str(tmp_path / "t.jsonl"),
            "--target", f"letta:shadow=on,base_url={letta.base_url},embedding={EMBEDDING}",
            env={"LETTA_API_KEY": DEFAULT_PASSWORD},
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "field 'results.0.id'" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert DEFAULT_PASSWORD not in done.stderr


def test_a_passage_healthd_never_saw_stored_has_no_write_time(monkeypatch):
    """Letta's ``timestamp`` is its own clock's: a passage dated by it looked just written,
    and a stale fact fresh (the fuzz read freshness 0 as 0.8)."""

    def unseen(answer):
        for row in answer["results"]:
            row["id"] = f"passage-{uuid.uuid4()}"
        return answer

    with Mangling("GET /archival-memory/search", unseen) as letta:
        served = _run_to_a_probe(letta, monkeypatch)
    passages = [item for item in served if item.record_id.startswith("letta:passage-")]
    assert passages and all(item.written_at is None for item in passages)
    assert all("timestamp" in item.metadata for item in passages)  # Letta's stamp, kept


# --- configuration errors: one line, exit 2 ---------------------------------------------------


def healthd(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "LETTA_API_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", *args],
        capture_output=True, text=True, timeout=300, env={**base, **env},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("switches", "env", "said"),
    [
        ("shadow=on", {}, "LETTA_API_KEY is not set"),
        ("shadow=on", {"LETTA_API_KEY": "wrong"}, "HTTP 401: Unauthorized"),
        ("agent_name=support", {"LETTA_API_KEY": DEFAULT_PASSWORD}, "'support' is not declared shadow"),
        ("shadow=on,ingest=facts", {"LETTA_API_KEY": DEFAULT_PASSWORD}, "ingest='facts'"),
        ("shadow=on,model=gpt-4o", {"LETTA_API_KEY": DEFAULT_PASSWORD}, "provider/model"),
        ("shadow=on,base_url=http://127.0.0.1:9", {"LETTA_API_KEY": DEFAULT_PASSWORD}, "127.0.0.1:9"),
    ],
)  # fmt: skip
def test_each_configuration_error_is_one_line_and_exit_2(letta, switches, env, said):
    spec = (
        f"letta:{switches}"
        if "base_url" in switches
        else f"letta:base_url={letta.base_url},{switches}"
    )
    done = healthd("--target", spec, env=env)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert DEFAULT_PASSWORD not in done.stderr


def test_a_server_that_drips_its_answer_is_cut_at_timeout_seconds(monkeypatch, dripping_host):
    """Each call is bounded in all, not only between two reads: the agents lookup answered a
    byte every half second is given up at timeout_seconds, and the SDK does not retry it."""
    import time

    monkeypatch.setenv("LETTA_API_KEY", DEFAULT_PASSWORD)
    started = time.monotonic()
    with pytest.raises(TargetError, match="not read within 2 s"):
        build_memory(
            parse_target(f"letta:shadow=on,base_url={dripping_host.url},timeout_seconds=2")
        )
    assert time.monotonic() - started < 4
    assert dripping_host.accepted == 1  # no retry


def test_a_switch_letta_does_not_have_is_refused(monkeypatch):
    monkeypatch.setenv("LETTA_API_KEY", DEFAULT_PASSWORD)
    with pytest.raises(TargetError, match="unknown switch 'user_id'"):
        build_memory(parse_target("letta:shadow=on,user_id=u"))


# --- the bundled example, offline, as the docs give it ----------------------------------------


@pytest.mark.slow
def test_the_bundled_example_against_the_imitation_prints_every_metric():
    env = {k: v for k, v in os.environ.items() if k != "LETTA_API_KEY"}
    done = subprocess.run(
        [
            sys.executable, "-m", "healthd.testing.letta", "--",
            sys.executable, "-m", "healthd", "evaluate",
            "--target", f"letta:shadow=on,base_url_env=LETTA_BASE_URL,embedding={EMBEDDING}",
        ],
        capture_output=True, text=True, timeout=1200, env={**env, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    header = next(line for line in done.stdout.splitlines() if "freshness" in line)
    metrics = ("freshness", "consistency", "coverage", "forgetting", "contamination", "conflicts")
    assert all(name in header for name in metrics)
    row = next(line for line in done.stdout.splitlines() if line.startswith("│ all "))
    cells = [cell.strip() for cell in row.strip("│ ").split("│")][1:]
    assert len(cells) == len(metrics) and all(cell != "—" for cell in cells), row
    # archival memory keeps what the agent stored: ended facts are still served
    assert float(dict(zip(metrics, cells, strict=True))["contamination"]) > 0.3


# --- a real Letta server, when there are credentials ------------------------------------------


@pytest.mark.skipif(
    not os.environ.get("LETTA_API_KEY"),
    reason="LETTA_API_KEY is not set: no Letta server or Letta Cloud project to run against",
)
def test_the_live_letta_round_trip():
    """Against Letta Cloud (or the server LETTA_BASE_URL names), with the team's model and
    embedding handles in LETTA_MODEL / LETTA_EMBEDDING when given."""
    name = f"healthd-shadow-live-{uuid.uuid4().hex[:8]}"
    spec = f"letta:shadow=on,agent_name={name},ingest=passages"
    if os.environ.get("LETTA_BASE_URL"):
        spec += ",base_url_env=LETTA_BASE_URL"
    for switch, variable in (("model", "LETTA_MODEL"), ("embedding", "LETTA_EMBEDDING")):
        if os.environ.get(variable):
            spec += f",{switch}={os.environ[variable]}"
    memory = build_memory(parse_target(spec))
    try:
        memory.reset()
        memory.apply(owner(1, "@bob"))
        served = memory.answer(PROBE, datetime(2024, 3, 2, tzinfo=UTC)).items
        assert any("bob" in item.text.lower() for item in served)
    finally:
        if memory._agent_id:  # the shadow agent is not left behind
            memory._client.agents.delete(memory._agent_id)
        memory.close()


def test_the_shipped_config_checks_against_the_imitation_and_writes_nothing(letta):
    env = {"LETTA_API_KEY": DEFAULT_PASSWORD, "LETTA_BASE_URL": letta.base_url}
    before = sorted(letta.agents)
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "check-config", "--config", "config/letta.toml"],
        capture_output=True, text=True, timeout=120, env={**os.environ, **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(letta.agents) == before  # the shadow agent is looked up, not made


def test_the_varied_stand_in_rewords_and_still_acts_through_lettas_tools():
    """The stand-in's varied style (the imitation's default) writes what it was told as an
    unkind LLM would, and acts on what it wrote with Letta's tools: across seeds it replaces
    the block's line for a changed owner, and its archival texts are not always the
    sentence as said."""
    from healthd.testing.letta import Agent, Block, _system, _tool
    from healthd.testing.standin_llm import letta as responder

    line, said = "Billing is owned by @alice.", "Billing is owned by @bob (replacing @alice)."
    agent = Agent("agent-x", "x", [], {}, [Block("b", "human", line, None, 1000)],
                  ["memory_insert", "memory_replace", "archival_memory_insert"], "openai/m",
                  EMBEDDING, "now")  # fmt: skip
    request = {"messages": [{"role": "system", "content": _system(agent)},
                            {"role": "user", "content": said}],
               "tools": [_tool(name) for name in agent.tools]}  # fmt: skip
    replaced, stored = 0, set()
    for seed in range(30):
        answer = responder.respond(request, "varied", seed)
        assert answer is not None
        for name, arguments in answer["tool_calls"]:
            assert name in agent.tools
            if name == "memory_replace":
                assert arguments["old_string"] == line
                replaced += 1
            if name == "archival_memory_insert":
                stored.add(arguments["content"])
    assert replaced >= 15
    assert len(stored) > 3 and stored != {"Billing is owned by @bob."}
