"""A local imitation of a Letta server's REST API (``/v1``), for tests and demos.

Why an imitation: the Letta server no longer runs from PyPI as a package here (``letta`` on
PyPI is now Letta Code, a terminal agent; the last server release, 0.16.8, does not install
offline: see docs/targets/letta.md). This server speaks the endpoints ``letta-client`` 1.x
(``Letta(api_key=..., base_url=...)``) calls and healthd's ``letta`` target uses, with the
paths, bodies, answers and errors of the Letta server 0.16.8 source
(``letta/server/rest_api/routers/v1/agents.py``, ``letta/schemas``; github.com/letta-ai/letta,
archived 2026-08):

* ``POST /v1/agents/``: ``name``, ``tags``, ``metadata``, ``memory_blocks`` (each ``label``,
  ``value``, ``description``, ``limit``: a field a block does not have is refused, 422, as
  ``CreateBlock``, a ``LettaBase`` with ``extra="forbid"``, does; the agent's other fields
  are a plain pydantic model, which ignores what it does not know), ``tools``, ``model`` and ``embedding`` handles
  (``provider/model``; none given is 400 ``llm_config is required``; a handle of a provider
  it has not configured is 404), ``agent_type`` (``letta_v1_agent``, the default; others are
  refused here, 400, saying they are not modelled), ``include_base_tools``; the agent's tools
  are Letta 0.16's base tools for ``letta_v1_agent`` (``conversation_search``,
  ``memory_insert``, ``memory_replace``) and those named in ``tools``;
* ``GET /v1/agents/`` filtered by ``name`` and ``tags`` (any, or all with
  ``match_all_tags``); ``GET`` and ``DELETE /v1/agents/{agent_id}``: an id not of the form
  ``agent-<uuid4>`` is 422, an unknown one 404 (``{"detail": ...}``);
* ``POST /v1/agents/{agent_id}/messages``: ``messages`` (``role`` one of ``user``,
  ``system``, ``assistant``, ``content`` required), ``max_steps`` (50): the agent's loop runs before the answer, each step one
  chat request to the LLM endpoint with the agent's system prompt (Letta's ``letta_v1``
  base instructions and its ``<memory_blocks>``), the turn and the agent's tools, its tool
  calls executed as Letta executes them (``archival_memory_insert`` embeds and stores a
  passage dated now; ``memory_replace`` fails unless ``old_string`` occurs exactly once;
  ...) until a step calls no tool; answered ``{"messages", "stop_reason", "usage"}`` with
  the ``tool_call_message``/``tool_return_message``/``assistant_message`` items, the steps
  and the tokens the endpoint reported;
* ``POST /v1/agents/{agent_id}/archival-memory`` (``text`` required, ``tags``,
  ``created_at``), ``GET .../archival-memory`` (``limit``, ``after``, ``ascending``),
  ``GET .../archival-memory/search`` (``query`` required; ``top_k`` defaulting to Letta's 5;
  ``start_datetime``/``end_datetime`` on the passages' ``created_at``; answered
  ``{"results": [{"id", "content", "timestamp", "tags"}], "count"}`` by cosine similarity),
  ``DELETE .../archival-memory/{memory_id}``;
* ``GET /v1/agents/{agent_id}/core-memory/blocks``; ``GET /v1/health/``.

With a password (a server run with ``SECURE=true``), every route but health asks for
``Authorization: Bearer <password>`` (401 ``{"detail": "Unauthorized"}`` otherwise), as
Letta's ``CheckPasswordMiddleware`` does. The LLM and the embedder behind the handles are the
endpoint given (the stand-in LLM, ``healthd/testing/standin_llm``, in ``style``, when none
is): what the agent stores, replaces and removes is the stand-in's choice through Letta's
tools, not a model's. Not modelled: streaming, conversations, folders, identities, templates, sleep-time
agents, compaction (the turn is sent with the system prompt alone before it, no history).

    python -m healthd.testing.letta -- healthd evaluate --target letta:shadow=on,base_url_env=LETTA_BASE_URL
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from healthd.testing._imitation import Imitation, add_common_arguments, serve
from healthd.testing.standin_style import DEFAULT_SEED, DEFAULT_STYLE

MAX_BODY = 8 * 1024 * 1024
DEFAULT_PASSWORD = "letta-healthd-imitation-password"
DEFAULT_MODEL = "openai/gpt-4o-mini"
DEFAULT_EMBEDDING = "openai/all-MiniLM-L6-v2"
SEARCH_TOP_K = 5  # Letta's RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE
DEFAULT_MAX_STEPS = 50  # Letta's DEFAULT_MAX_STEPS
BLOCK_LIMIT = 100000  # Letta's CORE_MEMORY_BLOCK_CHAR_LIMIT
V1_BASE_TOOLS = ("conversation_search", "memory_insert", "memory_replace")
ARCHIVAL_TOOLS = ("archival_memory_insert", "archival_memory_search")
AGENT_FIELDS = frozenset({
    "name", "memory_blocks", "tools", "tool_ids", "block_ids", "tags", "system", "agent_type",
    "include_base_tools", "include_base_tool_rules", "description", "metadata", "model",
    "embedding", "timezone", "project_id", "initial_message_sequence", "tool_rules",
    "context_window_limit", "max_tokens", "model_settings", "enable_sleeptime", "hidden",
})  # fmt: skip
BLOCK_FIELDS = frozenset({"label", "value", "description", "limit", "read_only", "metadata",
                          "hidden", "preserve_on_migration", "project_id", "name"})  # fmt: skip
_AGENT_ID = re.compile(
    r"^agent-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
)
SYSTEM = (
    "<base_instructions>\nYou are a helpful self-improving agent with advanced memory and file "
    "system capabilities.\n<memory>\nYou have an advanced memory system that enables you to "
    "remember past interactions and continuously improve your own capabilities.\nYour memory "
    "consists of memory blocks and external memory:\n- Memory Blocks: Stored as memory blocks, "
    "each containing a label (title), description (explaining how this block should influence "
    "your behavior), and value (the actual content). Memory blocks have size limits. Memory "
    "blocks are embedded within your system instructions and remain constantly available "
    "in-context.\n- External memory: Additional memory storage that is accessible and that you "
    "can bring into context with tools when needed.\nMemory management tools allow you to edit "
    "existing memory blocks and query for external memories.\n</memory>\nContinue executing "
    "and calling tools until the current task is complete or you need user input. To "
    "continue: call another tool. To yield control: end your response without calling a "
    "tool.\nBase instructions complete.\n</base_instructions>"
)  # letta/prompts/system_prompts/letta_v1.py, its file system paragraph left out
TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "conversation_search": {"query": ("string", True)},
    "memory_insert": {"label": ("string", True), "new_string": ("string", True),
                      "insert_line": ("integer", False)},
    "memory_replace": {"label": ("string", True), "old_string": ("string", True),
                       "new_string": ("string", True)},
    "archival_memory_insert": {"content": ("string", True), "tags": ("array", False)},
    "archival_memory_search": {"query": ("string", True), "top_k": ("integer", False),
                               "start_datetime": ("string", False),
                               "end_datetime": ("string", False)},
}  # fmt: skip


class ApiError(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


@dataclasses.dataclass
class Block:
    id: str
    label: str
    value: str
    description: str | None
    limit: int

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "value": self.value,
                "description": self.description, "limit": self.limit,
                "read_only": False, "metadata": {}}  # fmt: skip


@dataclasses.dataclass
class Passage:
    id: str
    text: str
    vector: list[float]
    created_at: datetime
    tags: list[str]

    def as_json(self, agent: Agent) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "archive_id": agent.archive_id,
                "created_at": _iso(self.created_at), "tags": self.tags, "metadata": {},
                "is_deleted": False}  # fmt: skip


@dataclasses.dataclass
class Agent:
    id: str
    name: str
    tags: list[str]
    metadata: dict[str, Any]
    blocks: list[Block]
    tools: list[str]
    model: str
    embedding: str | None
    created_at: str
    archive_id: str = dataclasses.field(default_factory=lambda: f"archive-{uuid.uuid4()}")
    passages: list[Passage] = dataclasses.field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "tags": self.tags, "metadata": self.metadata,
                "agent_type": "letta_v1_agent", "created_at": self.created_at,
                "system": SYSTEM, "memory": {"blocks": [b.as_json() for b in self.blocks]},
                "blocks": [b.as_json() for b in self.blocks],
                "tools": [{"name": t, "tool_type": "letta_core"} for t in self.tools],
                "llm_config": {"handle": self.model, "model": self.model.split("/", 1)[1],
                               "model_endpoint_type": "openai", "context_window": 128000},
                "embedding_config": None if self.embedding is None else {
                    "handle": self.embedding, "embedding_model": self.embedding.split("/", 1)[1],
                    "embedding_endpoint_type": "openai", "embedding_dim": 384}}  # fmt: skip


class Letta(Imitation):
    """The server. ``requests`` keeps (method, path, body) of each request, for tests;
    ``password`` None: no password asked (a server run without ``SECURE``)."""

    def __init__(
        self,
        password: str | None = DEFAULT_PASSWORD,
        llm_base_url: str | None = None,
        providers: tuple[str, ...] = ("openai",),
        host: str = "127.0.0.1",
        port: int = 0,
        style: str = DEFAULT_STYLE,
        seed: int = DEFAULT_SEED,
    ) -> None:
        super().__init__(llm_base_url, host, port, style, seed, "healthd-letta-")
        self.password = password
        self.providers = providers
        self.agents: dict[str, Agent] = {}
        self.llm_requests = 0
        import httpx

        self._http = httpx.Client(timeout=120)
        self._agent_lock = threading.Lock()  # one agent step at a time, as a worker would

    @property
    def base_url(self) -> str:
        """What ``Letta(base_url=...)`` is given: the server's root (the client adds ``/v1``)."""
        return self.root_url

    def _stopped(self) -> None:
        self._http.close()

    def _work(self) -> None:
        while self._queue.get() is not None:  # the agent loop runs in the request
            pass

    # --- requests -------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        url = urlsplit(handler.path)
        params = parse_qs(url.query, keep_blank_values=True)
        try:
            body = self._body(handler, method)
            with self._lock:
                self.requests.append((method, handler.path, body))
            path = url.path.rstrip("/")
            open_path = path in ("/v1/health", "/latest/health") or self.password is None
            if not open_path and handler.headers.get("Authorization") != f"Bearer {self.password}":
                raise ApiError(401, "Unauthorized")
            status, answer = self._route(method, path, params, body)
        except ApiError as exc:
            status, answer = exc.status, {"detail": exc.detail}
        except Exception as exc:  # a bug here is a 500, as a server's would be
            status, answer = 500, {"detail": f"An unknown error occurred: {exc}"}
        self._reply(handler, status, answer)

    def _body(self, handler: BaseHTTPRequestHandler, method: str) -> Any:
        length = int(handler.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ApiError(413, "request body too large")
        raw = handler.rfile.read(length) if length else b""
        if method not in ("POST", "PATCH"):
            return None
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            raise ApiError(422, "JSON decode error") from None
        if not isinstance(body, dict):
            raise ApiError(422, "the request body must be a JSON object")
        return body

    def _route(
        self, method: str, path: str, params: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        if parts in (["v1", "health"], ["latest", "health"]):
            return 200, {"version": "0.16.8", "status": "ok"}
        if parts[:2] != ["v1", "agents"]:
            raise ApiError(404, "Not Found")
        rest = parts[2:]
        if not rest:
            if method == "POST":
                return 200, self._create_agent(body)
            if method == "GET":
                return 200, self._list_agents(params)
            raise ApiError(405, "Method Not Allowed")
        agent = self._agent(rest[0])
        route = (method, *rest[1:])
        if route == ("GET",):
            return 200, agent.as_json()
        if route == ("DELETE",):
            with self._lock:
                self.agents.pop(agent.id, None)
            return 200, None
        if route == ("POST", "messages"):
            return 200, self._messages(agent, body)
        if route == ("GET", "core-memory", "blocks"):
            return 200, [b.as_json() for b in agent.blocks]
        if route == ("POST", "archival-memory"):
            return 200, self._insert(agent, body)
        if route == ("GET", "archival-memory"):
            return 200, self._list_passages(agent, params)
        if route == ("GET", "archival-memory", "search"):
            return 200, self._search(agent, params)
        if method == "DELETE" and rest[1:2] == ["archival-memory"] and len(rest) == 3:
            with self._lock:
                kept = [p for p in agent.passages if p.id != rest[2]]
                if len(kept) == len(agent.passages):
                    raise ApiError(404, f"Passage with id {rest[2]} not found")
                agent.passages = kept
            return 200, {"message": f"Memory id={rest[2]} successfully deleted"}
        raise ApiError(404, "Not Found")

    def _agent(self, agent_id: str) -> Agent:
        if not _AGENT_ID.match(agent_id):
            raise ApiError(
                422, f"agent_id: String should match pattern 'agent-{{uuid4}}' ({agent_id!r})"
            )
        with self._lock:
            agent = self.agents.get(agent_id)
        if agent is None:
            raise ApiError(404, f"Agent with id {agent_id} not found")
        return agent

    # --- agents -----------------------------------------------------------------------------

    def _create_agent(self, body: Mapping[str, Any]) -> dict[str, Any]:
        model = body.get("model")
        if not model:
            raise ApiError(400, "llm_config is required")
        self._handle_of(str(model))
        embedding = body.get("embedding")
        if embedding is not None:
            self._handle_of(str(embedding))
        if body.get("agent_type", "letta_v1_agent") != "letta_v1_agent":
            raise ApiError(
                400, f"agent_type {body['agent_type']!r}: not modelled by this imitation"
            )
        blocks = []
        for given in body.get("memory_blocks") or []:
            unknown = sorted(set(given) - BLOCK_FIELDS) if isinstance(given, dict) else ["?"]
            if unknown or "label" not in given or "value" not in given:
                raise ApiError(
                    422, f"memory_blocks: extra or missing fields ({unknown or 'label, value'})"
                )
            blocks.append(Block(f"block-{uuid.uuid4()}", str(given["label"]), str(given["value"]),
                                given.get("description"), int(given.get("limit") or BLOCK_LIMIT)))  # fmt: skip
        tools = list(V1_BASE_TOOLS) if body.get("include_base_tools", True) else []
        for name in body.get("tools") or []:
            if name not in TOOL_SCHEMAS:
                raise ApiError(404, f"Tool with name {name} not found")
            if name not in tools:
                tools.append(name)
        agent = Agent(
            f"agent-{uuid.uuid4()}", str(body.get("name") or f"agent-{uuid.uuid4().hex[:6]}"),
            list(body.get("tags") or []), dict(body.get("metadata") or {}), blocks, tools,
            str(model), None if embedding is None else str(embedding), _iso(datetime.now(UTC)),
        )  # fmt: skip
        with self._lock:
            self.agents[agent.id] = agent
        return agent.as_json()

    def _handle_of(self, handle: str) -> str:
        provider, sep, model = handle.partition("/")
        if not sep or not model or provider not in self.providers:
            raise ApiError(
                404, f"Handle {handle} not found, must be one of the configured providers"
            )
        return model

    def _list_agents(self, params: dict[str, list[str]]) -> list[dict[str, Any]]:
        name = params.get("name", [None])[-1]
        tags = params.get("tags", [])
        match_all = params.get("match_all_tags", ["false"])[-1] == "true"
        with self._lock:
            found = list(self.agents.values())
        if name is not None:
            found = [a for a in found if a.name == name]
        if tags:
            test = all if match_all else any
            found = [a for a in found if test(t in a.tags for t in tags)]
        return [a.as_json() for a in reversed(found)]  # newest first

    # --- archival memory --------------------------------------------------------------------

    def _embed(self, agent: Agent, texts: list[str]) -> list[list[float]]:
        if agent.embedding is None:
            raise ApiError(400, "Embedding config is required for archival memory")
        answer = self._http.post(
            f"{self._llm_url}/embeddings",
            json={"model": self._handle_of(agent.embedding), "input": texts},
        )
        if answer.status_code != 200:
            raise ApiError(500, f"embedding endpoint answered {answer.status_code}")
        return [row["embedding"] for row in answer.json()["data"]]

    def _store(self, agent: Agent, text: str, tags: list[str], at: datetime | None) -> Passage:
        (vector,) = self._embed(agent, [text])
        passage = Passage(f"passage-{uuid.uuid4()}", text, vector, at or datetime.now(UTC), tags)
        with self._lock:
            agent.passages.append(passage)
        return passage

    def _insert(self, agent: Agent, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        if not isinstance(body.get("text"), str):  # CreateArchivalMemory ignores other fields
            raise ApiError(422, "text: Field required (a string)")
        at = _parse_time(body.get("created_at"), "created_at")
        return [self._store(agent, body["text"], list(body.get("tags") or []), at).as_json(agent)]

    def _list_passages(self, agent: Agent, params: dict[str, list[str]]) -> list[dict[str, Any]]:
        rows = list(agent.passages)
        if params.get("ascending", ["true"])[-1] == "false":
            rows.reverse()
        after = params.get("after", [None])[-1]
        if after is not None:
            ids = [p.id for p in rows]
            rows = rows[ids.index(after) + 1 :] if after in ids else []
        limit = int(params.get("limit", ["100"])[-1])
        return [p.as_json(agent) for p in rows[:limit]]

    def _search(self, agent: Agent, params: dict[str, list[str]]) -> dict[str, Any]:
        query = params.get("query", [None])[-1]
        if query is None:
            raise ApiError(422, "query: Field required")
        found = self._ranked(agent, query, int(params.get("top_k", [SEARCH_TOP_K])[-1]),
                             _parse_time(params.get("start_datetime", [None])[-1], "start_datetime"),
                             _parse_time(params.get("end_datetime", [None])[-1], "end_datetime"))  # fmt: skip
        results = [{"id": p.id, "content": p.text, "timestamp": _iso(p.created_at),
                    "tags": p.tags} for p in found]  # fmt: skip
        return {"results": results, "count": len(results)}

    def _ranked(
        self, agent: Agent, query: str, top_k: int, start: datetime | None, end: datetime | None
    ) -> list[Passage]:
        if not query.strip():
            return []
        (vector,) = self._embed(agent, [query])
        with self._lock:
            rows = [p for p in agent.passages if (start is None or p.created_at >= start)
                    and (end is None or p.created_at <= end)]  # fmt: skip
        rows.sort(key=lambda p: -_cosine(vector, p.vector))
        return rows[:top_k]

    # --- the agent's loop -------------------------------------------------------------------

    def _messages(self, agent: Agent, body: Mapping[str, Any]) -> dict[str, Any]:
        given = body.get("messages")  # LettaRequest and MessageCreate ignore other fields
        if not isinstance(given, list) or not given:
            raise ApiError(422, "messages: a list of messages is required (input is not modelled)")
        turn: list[dict[str, Any]] = []
        for message in given:
            if not isinstance(message, dict) or "content" not in message:
                raise ApiError(422, "messages.content: Field required")
            if message.get("role") not in ("user", "system", "assistant"):
                raise ApiError(
                    422, "messages.role: Input should be 'user', 'system' or 'assistant'"
                )
            turn.append({"role": message["role"], "content": message["content"]})
        max_steps = int(body.get("max_steps", DEFAULT_MAX_STEPS))
        out: list[dict[str, Any]] = []
        counts = dict.fromkeys(
            ("completion_tokens", "prompt_tokens", "total_tokens", "step_count"), 0
        )
        stop = "max_steps"
        with self._agent_lock:
            for _ in range(max_steps):
                answer = self._step(agent, turn)
                counts["step_count"] += 1
                for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
                    counts[name] += int((answer.get("usage") or {}).get(name) or 0)
                message = answer["choices"][0]["message"]
                calls = message.get("tool_calls") or []
                if not calls:
                    out.append(
                        _letta_message("assistant_message", content=message.get("content") or "")
                    )
                    stop = "end_turn"
                    break
                turn.append(
                    {"role": "assistant", "content": message.get("content"), "tool_calls": calls}
                )
                for call in calls:
                    function = call["function"]
                    out.append(_letta_message("tool_call_message", tool_call={
                        "name": function["name"], "arguments": function["arguments"],
                        "tool_call_id": call["id"]}))  # fmt: skip
                    status, result = self._run_tool(agent, function["name"], function["arguments"])
                    out.append(_letta_message("tool_return_message", tool_return=result,
                                              status=status, tool_call_id=call["id"]))  # fmt: skip
                    turn.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        return {"messages": out, "stop_reason": {"message_type": "stop_reason", "stop_reason": stop},
                "usage": {"message_type": "usage_statistics", **counts, "run_ids": None}}  # fmt: skip

    def _step(self, agent: Agent, turn: list[dict[str, Any]]) -> dict[str, Any]:
        request = {
            "model": self._handle_of(agent.model),
            "messages": [{"role": "system", "content": _system(agent)}, *turn],
            "tools": [_tool(name) for name in agent.tools],
            "tool_choice": "auto",
            "parallel_tool_calls": True,
        }
        with self._lock:
            self.llm_requests += 1
        answer = self._http.post(f"{self._llm_url}/chat/completions", json=request)
        if answer.status_code != 200:
            raise ApiError(500, f"LLM endpoint answered {answer.status_code}: {answer.text[:200]}")
        try:
            parsed: dict[str, Any] = answer.json()
            parsed["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ApiError(
                500, "LLM endpoint answered something that is not a chat completion"
            ) from None
        return parsed

    def _run_tool(self, agent: Agent, name: str, arguments: str) -> tuple[str, str]:
        """A tool call executed as Letta executes its base tools: (status, what it returns)."""
        try:
            args = json.loads(arguments or "{}")
            if name not in agent.tools:
                raise ValueError(f"tool {name} is not attached to this agent")
            if name == "archival_memory_insert":
                self._store(agent, str(args["content"]), list(args.get("tags") or []), None)
                return "success", "None"
            if name == "archival_memory_search":
                found = self._ranked(agent, str(args["query"]), int(args.get("top_k") or 10),
                                     None, None)  # fmt: skip
                rows = [{"timestamp": _iso(p.created_at), "content": p.text, "tags": p.tags}
                        for p in found]  # fmt: skip
                return "success", json.dumps(rows)
            if name == "conversation_search":
                return "success", "No results found."
            block = next((b for b in agent.blocks if b.label == args["label"]), None)
            if block is None:
                raise ValueError(f"Block with label {args['label']} does not exist")
            if name == "memory_replace":
                old, new = str(args["old_string"]), str(args["new_string"])
                count = block.value.count(old)
                if count != 1:
                    raise ValueError(f"No replacement was performed, old_string `{old}` "
                                     f"occurs {count} times in memory block `{block.label}`.")  # fmt: skip
                value = block.value.replace(old, new)
            else:  # memory_insert
                lines = block.value.split("\n")  # an empty block is one empty line, as in Letta
                at = int(args.get("insert_line", -1))
                at = len(lines) if at == -1 else at
                value = "\n".join(lines[:at] + str(args["new_string"]).split("\n") + lines[at:])
            if len(value) > block.limit:
                raise ValueError(f"Edit failed: exceeds {block.limit} character limit")
            with self._lock:
                block.value = value
            return "success", value
        except ApiError as exc:
            return "error", exc.detail
        except (ValueError, KeyError, TypeError) as exc:
            return "error", f"{type(exc).__name__}: {exc}"


def _system(agent: Agent) -> str:
    """Letta's system prompt: the base instructions, then the memory blocks as
    ``Memory._render_memory_blocks_standard`` writes them."""
    parts = []
    for block in agent.blocks:
        parts.append(
            f"<{block.label}>\n<description>\n{block.description or ''}\n</description>\n"
            f"<metadata>\n- chars_current={len(block.value)}\n- chars_limit={block.limit}\n"
            f"</metadata>\n<value>\n{block.value}\n</value>\n</{block.label}>"
        )
    blocks = "\n\n".join(parts)
    return (f"{SYSTEM}\n\n<memory_blocks>\nThe following memory blocks are currently engaged in "
            f"your core memory unit:\n\n{blocks}\n\n</memory_blocks>")  # fmt: skip


def _tool(name: str) -> dict[str, Any]:
    fields = TOOL_SCHEMAS[name]
    properties = {k: ({"type": t, "items": {"type": "string"}} if t == "array" else {"type": t})
                  for k, (t, _) in fields.items()}  # fmt: skip
    required = [k for k, (_, needed) in fields.items() if needed]
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": properties, "required": required}}}  # fmt: skip


def _letta_message(kind: str, **fields: Any) -> dict[str, Any]:
    return {"id": f"message-{uuid.uuid4()}", "date": _iso(datetime.now(UTC)),
            "message_type": kind, **fields}  # fmt: skip


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat()


def _parse_time(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        at = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(422, f"{name}: Input should be a valid datetime") from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m healthd.testing.letta",
        description="A local imitation of a Letta server's REST API on 127.0.0.1 (its agents' "
        "LLM and embedder the stand-in, not a model). With a command after --, runs it with "
        "LETTA_API_KEY and LETTA_BASE_URL set and stops when it ends.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free)")
    parser.add_argument("--password", default=DEFAULT_PASSWORD, help="the password it asks for")
    parser.add_argument("--llm-url", help="an OpenAI-compatible endpoint (default: the stand-in)")
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    letta = Letta(password=args.password, llm_base_url=args.llm_url, port=args.port,
                  style=args.style, seed=args.seed).start()  # fmt: skip
    return serve(
        letta,
        args.command,
        {"LETTA_API_KEY": args.password, "LETTA_BASE_URL": letta.base_url},
        f"{letta.base_url} password={args.password}",
    )


if __name__ == "__main__":
    sys.exit(main())
