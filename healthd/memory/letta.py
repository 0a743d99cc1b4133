"""The `letta` memory: a Letta agent's memory, through ``letta-client`` 1.x against a Letta
server (Letta Cloud, ``https://api.letta.com``, or a self-hosted one).

As a team on Letta runs it: a stateful agent (``letta_v1_agent``) with core memory blocks and
an archival memory, its LLM and embedder the team's (``model`` and ``embedding`` handles,
``provider/model``). healthd creates a **shadow agent** of its own (its name, the tag
``healthd-shadow`` and the metadata ``healthd_shadow: true``), with Letta's base tools and the
archival tools (``archival_memory_insert``, ``archival_memory_search``):

* ``ingest = "messages"`` (the default): each timeline event is the user's message to that
  agent (``agents.messages.create``, the sentence saying what changed); the agent's own
  steps, its LLM calling Letta's tools, decide what is inserted into archival memory and
  what is inserted, replaced or removed in its core memory blocks. Letta has no tool that
  deletes an archival passage: what the agent stored there stays.
* ``ingest = "passages"`` (the **upper bound**: healthd decides): each asserted fact is
  inserted into archival memory directly (``agents.passages.create``) with the event's time
  as its ``created_at``, and the passages of a fact that ends are deleted by healthd.

Probes are what the agent would read: Letta's archival search with the probe's question
(``agents.passages.search``, ``top_k``) and, with ``blocks`` (the ``human`` block by
default; ``off`` for none), the lines of that core memory block, which sit in the agent's
context. The reader reads the text served.

Shadow: ``shadow=on`` is required; an agent of that name healthd did not create (no
``healthd-shadow`` tag) is refused before anything is written, and no other agent is listed
beyond the name, read or written. ``reset`` deletes the shadow agent and creates it again.
The key (Letta Cloud's API key, or a self-hosted server's password) is read only from the
variable ``api_key_env`` names (``LETTA_API_KEY``); every call is bounded in total time
(``timeout_seconds``, no retries) and size (``max_response_bytes``); an agent's turn is bounded
in steps (``max_steps``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError, quote, shorten
from healthd.llm_usage import LLMUsage
from healthd.logging import env_secret
from healthd.memory import _letta_answers as answers
from healthd.memory import register_memory
from healthd.memory._offline import first_line, memory_text, package_versions, require_extra
from healthd.memory._options import integer, reject_unknown, sweeps_option, switch, url_option
from healthd.memory.fingerprint import RetrievalFingerprint
from healthd.model import Answer, ChangeEvent, FactKey, Probe, ServedItem, is_sweep
from healthd.reading.render import statement

DEFAULT_BASE_URL = "https://api.letta.com"
DEFAULT_AGENT = "healthd-shadow"
DEFAULT_KEY_ENV = "LETTA_API_KEY"
DEFAULT_MODEL = "openai/gpt-4o-mini"
DEFAULT_EMBEDDING = "openai/text-embedding-3-small"
SHADOW_TAG = "healthd-shadow"
SHADOW_MARK = "healthd_shadow"
INGESTS = ("messages", "passages")
ARCHIVAL_TOOLS = ["archival_memory_insert", "archival_memory_search"]
ENDED = ("end_turn", "no_tool_call")  # a turn that finished; any other stop is a failure
PERSONA = (
    "I am an assistant who keeps track of a software project: what is currently true about "
    "its services, people and decisions."
)
HUMAN = (
    "The human block: Stores key details about the person you are conversing with, allowing "
    "for more personalized and friend-like conversation."
)  # Letta's DEFAULT_HUMAN_BLOCK_DESCRIPTION
NOT_COUNTED = (
    "Letta's embedding calls (archival inserts and searches) are made inside the server, "
    "which reports no usage for them"
)
SWITCHES = {
    "shadow", "agent_name", "base_url", "base_url_env", "api_key_env", "project_id",
    "ingest", "model", "embedding", "blocks", "top_k", "max_steps", "timeout_seconds",
    "max_response_bytes", "sweeps",
}  # fmt: skip


class LettaMemory:
    kind = "letta"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        project_id: str | None = None,
        agent_name: str = DEFAULT_AGENT,
        ingest: str = "messages",
        model: str = DEFAULT_MODEL,
        embedding: str = DEFAULT_EMBEDDING,
        blocks: str | None = "human",
        top_k: int = 5,
        max_steps: int = 10,
        timeout_seconds: float = 60,
        max_response_bytes: int = 16 << 20,
        sweeps: str | None = None,
    ) -> None:
        require_extra("letta_client", "letta", "letta")  # before httpx, which the SDK brings
        import httpx
        from letta_client import Letta

        from healthd.memory.mem0_platform import _Bounded

        self.agent_name, self.ingest, self.model, self.embedding = (
            agent_name,
            ingest,
            model,
            embedding,
        )
        self.blocks, self.top_k, self.max_steps = blocks, top_k, max_steps
        self.upper_bound = (
            "healthd inserts each fact into archival memory and deletes the passages of a fact "
            "that ends, not the agent's own steps"
            if ingest == "passages"
            else None
        )
        self.tool_errors = 0  # the agent's own tool calls Letta refused, for the docs
        transport = _Bounded(timeout_seconds, max_response_bytes)
        self._http: Any = httpx.Client(transport=transport, timeout=timeout_seconds)  # type: ignore[arg-type]
        self._client: Any = Letta(api_key=api_key, base_url=base_url, project_id=project_id,
                                  max_retries=0, timeout=timeout_seconds, http_client=self._http)  # fmt: skip
        self._where = f"letta at {base_url}"
        self._usage = LLMUsage([NOT_COUNTED])
        self.sweeps = self._usage.sweeps = sweeps or ("subject" if ingest == "messages" else "each")
        self._written: dict[str, tuple[str, datetime]] = {}  # passage id: (event id, time)
        self._lines: dict[str, datetime] = {}  # block line: when it was first held
        self._passages: dict[FactKey, list[str]] = {}  # passages mode: a fact's passages
        self._seen: str | None = None  # the newest archival passage read
        try:
            found = self._lookup()
        except MemoryAdapterError as exc:
            self.close()
            raise TargetError(str(exc)) from None
        self._agent_id: str | None = found
        self._fingerprint = RetrievalFingerprint.of(
            f"letta:{base_url.rstrip('/')}/{embedding}/{blocks or 'no-blocks'}",
            0,  # the embedder's size is the server's
            {**package_versions("letta-client"), "ingest": ingest},
        )

    # --- the Memory protocol ---------------------------------------------------------------

    def reset(self) -> None:
        found = self._lookup()
        if found is not None:
            self._call(lambda: self._client.agents.delete(found), "delete of the shadow agent")
        self._agent_id = None
        self._written.clear()
        self._lines.clear()
        self._passages.clear()
        self._seen = None
        self._agent()

    def apply(self, event: ChangeEvent) -> None:
        if self.sweeps == "off" and is_sweep(event):
            return  # the agent is not told its facts still hold
        agent = self._agent()
        if self.ingest == "passages":
            self._apply_passages(agent, event)
            return
        self._message(agent, [event])

    def apply_sweep(self, events: list[ChangeEvent]) -> None:
        """A revalidation sweep's events about one subject: one message (one turn of the
        agent) with messages, a passage each with passages."""
        agent = self._agent()
        if self.ingest == "passages":
            for event in events:
                self._apply_passages(agent, event)
            return
        self._message(agent, events)

    def _message(self, agent: str, events: list[ChangeEvent]) -> None:
        event = events[0]
        message = {"role": "user", "content": " ".join(statement(e) for e in events)}
        self._usage.before_turn(self.max_steps)  # refused here, unsent, past a budget
        what = f"message of event {event.id!r}"
        turn = self._read(
            answers.Turn,
            lambda: self._client.agents.messages.create(
                agent, messages=[message], max_steps=self.max_steps
            ),
            what,
        )
        self._count(turn.usage, what)
        stop = turn.stop_reason.stop_reason if turn.stop_reason else ""
        if stop not in ENDED:
            raise MemoryAdapterError(
                f"{self._where}: the agent's turn for event {event.id!r} stopped with {quote(stop)}"
            )
        self.tool_errors += sum(
            1 for m in turn.messages
            if m.message_type == "tool_return_message" and m.status == "error"
        )  # fmt: skip
        self._note_written(agent, event)

    def answer(self, probe: Probe, at: datetime) -> Answer:
        agent = self._agent()
        found = self._read(
            answers.Search,
            lambda: self._client.agents.passages.search(
                agent, query=probe.question, top_k=self.top_k
            ),
            f"archival search for probe {probe.id!r}",
        )
        served = [self._passage(row) for row in found.results]
        if self.blocks:
            said = {item.text.strip() for item in served}
            for block in self._read_blocks(agent):
                if block.label == self.blocks:  # a line the search served already is read once
                    served.extend(i for i in self._block_lines(block) if i.text.strip() not in said)
        return Answer(probe.id, (), tuple(served))

    def retrieval_fingerprint(self) -> RetrievalFingerprint:
        return self._fingerprint

    def changed_keys(self, at: datetime) -> set[FactKey] | None:
        return None  # what the agent makes of a message may answer any probe

    #: a turn is refused when its max_steps could pass max_llm_calls_per_run, or the day's
    #: tokens are reached (healthd.llm_budget.LLMBudget.admit_turn)
    llm_budgets = True

    def llm_usage(self) -> LLMUsage:
        return self._usage

    def close(self) -> None:
        http = getattr(self, "_http", None)
        if http is not None:
            http.close()
            self._http = None

    # --- Letta's agents, passages and blocks -----------------------------------------------

    def _call(self, call: Any, what: str) -> Any:
        try:
            return call()
        except Exception as exc:
            raise MemoryAdapterError(f"{self._where}: {what}: {_why(exc)}") from exc

    def _read(self, shape: Any, call: Any, what: str) -> Any:
        """The call's answer as the shape healthd reads; one line naming the field that is
        not what Letta's schema says."""
        return answers.read(shape, self._call(call, what), f"{self._where}: {what}")

    def _lookup(self) -> str | None:
        """The shadow agent's id, or None when the server has no agent of that name; an
        agent of that name that healthd did not create is refused."""
        page = self._read(answers.AgentPage,
                          lambda: self._client.agents.list(name=self.agent_name, limit=10),
                          f"lookup of agent {self.agent_name!r}")  # fmt: skip
        named = [a for a in page.items if a.name == self.agent_name]
        foreign = [a for a in named if SHADOW_TAG not in (a.tags or [])]
        if foreign:
            raise ShadowViolation(
                f"letta agent {self.agent_name!r} ({foreign[0].id}) exists and was not created by "
                f"healthd (no {SHADOW_TAG!r} tag): it may be a real agent; choose another agent_name"
            )
        if len(named) > 1:
            raise ShadowViolation(
                f"letta: {len(named)} shadow agents are named {self.agent_name!r}; delete all "
                "but one, or choose another agent_name"
            )
        return named[0].id if named else None

    def _agent(self) -> str:
        if self._agent_id is not None:
            return self._agent_id
        blocks = [{"label": "human", "value": "", "description": HUMAN},
                  {"label": "persona", "value": PERSONA}]  # fmt: skip
        made = self._read(
            answers.Created,
            lambda: self._client.agents.create(
                name=self.agent_name, tags=[SHADOW_TAG], metadata={SHADOW_MARK: True},
                memory_blocks=blocks, tools=ARCHIVAL_TOOLS, model=self.model,
                embedding=self.embedding, include_base_tools=True,
            ),
            f"creating shadow agent {self.agent_name!r}",
        )  # fmt: skip
        self._agent_id = made.id
        return self._agent_id

    def _apply_passages(self, agent: str, event: ChangeEvent) -> None:
        """healthd's decisions: the asserted fact inserted at its event time, the ended
        fact's passages deleted."""
        ended = event.previous if event.type == "revised" else None
        if event.type == "invalidated":
            ended = event.fact
        if ended is not None:
            for passage_id in self._passages.pop(ended.key, []):
                self._call(lambda p=passage_id: self._client.agents.passages.delete(p, agent_id=agent),
                           f"delete of passage {passage_id} (event {event.id!r})")  # fmt: skip
                self._written.pop(passage_id, None)
        if event.type == "invalidated":
            return
        for passage_id in self._passages.pop(event.fact.key, []):  # revalidated: written again
            self._call(lambda p=passage_id: self._client.agents.passages.delete(p, agent_id=agent),
                       f"delete of passage {passage_id} (event {event.id!r})")  # fmt: skip
        made = self._read(
            answers.PASSAGES,
            lambda: self._client.agents.passages.create(
                agent, text=memory_text(event.fact), created_at=event.timestamp,
                tags=[event.fact.domain],
            ),
            f"insert of event {event.id!r}",
        )  # fmt: skip
        for passage in made:
            self._passages.setdefault(event.fact.key, []).append(passage.id)
            self._written[passage.id] = (event.id, event.timestamp)

    def _note_written(self, agent: str, event: ChangeEvent) -> None:
        """What the agent wrote during the event's turn, stamped with the event's time (the
        server stamps it with its own clock): the archival passages added since the last
        read, and the block lines not held before."""
        while True:
            kwargs: dict[str, Any] = {"limit": 100, "ascending": True}
            if self._seen is not None:
                kwargs["after"] = self._seen
            rows = self._read(answers.PASSAGES,
                              lambda k=kwargs: self._client.agents.passages.list(agent, **k),
                              f"reading what event {event.id!r} stored")  # fmt: skip
            new = [passage.id for passage in rows if passage.id not in self._written]
            for passage_id in new:
                self._written[passage_id] = (event.id, event.timestamp)
            if rows:
                self._seen = rows[-1].id
            if len(rows) < 100:
                break
            if not new:  # a full page of passages read before: the list did not move on
                raise MemoryAdapterError(
                    f"{self._where}: reading what event {event.id!r} stored: the passage list "
                    f"answered passages already read after {quote(kwargs.get('after'))}"
                )
        if self.blocks:
            held = set()
            for block in self._read_blocks(agent):
                if block.label == self.blocks:
                    held = {line for line in block.value.split("\n") if line.strip()}
            self._lines = {line: self._lines.get(line, event.timestamp) for line in held}

    def _read_blocks(self, agent: str) -> list[answers.Block]:
        what = "reading the core memory blocks"
        page = self._call(lambda: self._client.agents.blocks.list(agent), what)
        if hasattr(page, "items"):
            return list(answers.read(answers.BlockPage, page, f"{self._where}: {what}").items)
        return answers.read(answers.BLOCKS, page, f"{self._where}: {what}")

    def _count(self, usage: answers.Usage | None, what: str) -> None:
        """The turn's LLM calls as Letta reports them: its steps, and the tokens of the turn
        (one report covering every step)."""
        if usage is None:
            return
        steps = usage.step_count or 0
        if steps > self.max_steps:  # Letta stops a turn at max_steps; more is not a count
            raise MemoryAdapterError(
                f"{self._where}: {what}: the answer reports {steps} steps, more than "
                f"max_steps={self.max_steps}"
            )
        tokens = (usage.prompt_tokens or 0, usage.completion_tokens or 0)
        for step in range(steps):
            self._usage.sent("unknown", writing=False)  # made; Letta does not say what for
            self._usage.answered("unknown", tokens if step == 0 else (0, 0))

    def _passage(self, row: answers.Found) -> ServedItem:
        """A passage as the agent reads it, written when the event whose turn stored it
        happened. One healthd never saw stored has no such time: Letta's ``timestamp`` is
        its own clock's, not the replay's, and would make it look just written."""
        told = self._written.get(row.id)
        return ServedItem(row.content, f"letta:{told[0] if told else row.id}:{row.id}",
                          told[1] if told else None, None,
                          {"timestamp": row.timestamp})  # fmt: skip

    def _block_lines(self, block: answers.Block) -> list[ServedItem]:
        items = []
        for line in block.value.split("\n"):
            if line.strip():
                digest = hashlib.sha256(line.encode()).hexdigest()[:8]
                items.append(ServedItem(line, f"letta-block:{block.label}:{digest}",
                                        self._lines.get(line)))  # fmt: skip
        return items


def _why(exc: BaseException) -> str:
    """A client error as one line: Letta's own ``detail`` where it gave one."""
    status = getattr(exc, "status_code", None)
    if status is not None:
        body = getattr(exc, "body", None)
        detail = body.get("detail") if isinstance(body, Mapping) else None
        text = str(detail or body or "").strip().splitlines()
        return shorten(f"HTTP {status}: {text[0] if text else 'no message'}", 300)
    cause = exc.__cause__  # the SDK's connection and timeout errors wrap httpx's, which say more
    said = f" ({first_line(cause)})" if cause is not None else ""
    return shorten(first_line(exc) + said, 300)


@register_memory("letta")
def letta_memory(options: Mapping[str, Any]) -> LettaMemory:
    reject_unknown(options, SWITCHES, "letta")
    name = str(options.get("agent_name", DEFAULT_AGENT)).strip()
    if not switch(options, "shadow", False):
        raise ShadowViolation(
            f"letta agent {name!r} is not declared shadow: a Letta server holds real agents; "
            "set shadow=on for an agent healthd owns"
        )
    if not name:
        raise TargetError("letta: agent_name is empty (the shadow agent healthd owns)")
    key_env = str(options.get("api_key_env", DEFAULT_KEY_ENV))
    if not os.environ.get(key_env):
        raise TargetError(
            f"letta: environment variable {key_env} is not set (named by api_key_env; it holds "
            "the Letta API key, or a self-hosted server's password)"
        )
    ingest = str(options.get("ingest", "messages"))
    if ingest not in INGESTS:
        raise TargetError(f"switch ingest={ingest!r}: expected one of {', '.join(INGESTS)}")
    handles = {}
    for handle in ("model", "embedding"):
        value = str(options.get(handle, DEFAULT_MODEL if handle == "model" else DEFAULT_EMBEDDING))
        provider, sep, model = value.partition("/")
        if not sep or not provider or not model:
            raise TargetError(f"switch {handle}={value!r}: a Letta handle, provider/model")
        handles[handle] = value
    blocks = str(options.get("blocks", "human")).strip()
    return LettaMemory(
        api_key=env_secret(key_env),
        base_url=url_option(options, "base_url", DEFAULT_BASE_URL, "letta"),
        project_id=str(options["project_id"]) if options.get("project_id") else None,
        agent_name=name,
        ingest=ingest,
        blocks=None if blocks.lower() in ("off", "") else blocks,
        top_k=integer(options, "top_k", 5),
        max_steps=integer(options, "max_steps", 10),
        timeout_seconds=integer(options, "timeout_seconds", 60),
        max_response_bytes=integer(options, "max_response_bytes", 16 << 20, minimum=1024),
        sweeps=sweeps_option(options) if "sweeps" in options else None,
        **handles,
    )
