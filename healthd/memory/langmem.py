"""The `langmem` memory: LangMem's memory manager writing into a LangGraph store, as a shadow.

Each timeline event is one user message (the event said as a sentence, as a team member
would tell the agent) given to ``create_memory_store_manager(...).invoke``: LangMem searches
the store for related memories, asks the team's chat model (with tools: ``Memory`` to insert,
``PatchDoc`` to update, ``RemoveDoc`` to delete when ``enable_deletes`` is on) and applies
what the model decided to the store. Those create, update and delete decisions are LangMem's
and its model's; healthd writes nothing into the store itself. Probes are the store's own
``search`` with the probe's question over the shadow namespace (its vector index), as an
agent asks; the reader reads the memories' text.

The store is a LangGraph ``InMemoryStore`` (healthd's own, gone when the run ends) by default,
or the team's ``PostgresStore`` (``[targets.NAME.langmem.store]``, ``kind = "postgres"``, its
DSN from ``conn_string_env``). The index embeds with healthd's local all-MiniLM-L6-v2 unless
the team names its own (``index.embed``, any ``init_embeddings`` model). Everything is
written under one namespace tuple declared shadow; a store that may hold other namespaces
(Postgres) takes an explicit ``shadow = on``; nothing outside the shadow namespace is read,
written or deleted (LangMem's searches are namespace-prefix searches of it).

The team's chat models (and an OpenAI ``index.embed``) are counted as they send
(:mod:`healthd.llm_usage`): their OpenAI clients are given a counting HTTP client, so
``max_llm_calls_per_run`` and ``max_llm_tokens_per_day`` refuse a chat call before it is
sent. LangMem stores only after its model has decided (each put embedding as it goes), so
the index embedder's calls are counted and never refused: a refused write stores nothing.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from healthd.embedding import Embedder
from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError
from healthd.llm_usage import LLMUsage
from healthd.memory import register_memory
from healthd.memory._embedder_switch import embedder_from_options
from healthd.memory._langmem_config import (
    MODEL_SWITCHES,
    TeamLangMem,
    namespace_tuple,
    team_langmem,
)
from healthd.memory._llm_count import budgeted_write, counting
from healthd.memory._offline import ReplayClock, first_line, package_versions, require_extra
from healthd.memory._options import integer, reject_unknown, sweeps_option, switch
from healthd.memory.fingerprint import RetrievalFingerprint
from healthd.model import Answer, ChangeEvent, FactKey, Probe, ServedItem, is_sweep
from healthd.reading.render import statement

DEFAULT_NAMESPACE = ("memories", "healthd-shadow")
DEFAULT_TIMEOUT = 60
#: LangMem's own search default (``MemoryStoreManager.search``, the search tool): what an
#: agent that asks the store gets
LANGMEM_TOP_K = 10
#: LangGraph steps one ``invoke`` may take (trustcall's extract, validate and patch loop):
#: with each model call bounded by ``timeout_seconds``, the write is bounded too
RECURSION_LIMIT = 12
_PAGE = 500
_SWITCHES = {
    "namespace",
    "shadow",
    "top_k",
    "embedder",
    "dimensions",
    "timeout_seconds",
    "enable_deletes",
    "langmem",
    "store",
    "sweeps",
    *MODEL_SWITCHES,
}
_QUIET_LOGGERS = ("httpx", "openai", "langsmith")


class _LoggedErrors(logging.Handler):
    """What trustcall logs and goes on from ("Could not apply patch", "Could not find
    existing schema"): a decision of the model's that LangMem dropped. Kept per thread."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self._local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._local, "message", None) is None:
            self._local.message = record.getMessage()

    def drain(self) -> str | None:
        message: str | None = getattr(self._local, "message", None)
        self._local.message = None
        return message


_DROPPED = _LoggedErrors()


def _imports() -> tuple[Any, Any, Any]:
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    with warnings.catch_warnings():  # trustcall imports Send from where LangGraph 1 moved it
        warnings.simplefilter("ignore", DeprecationWarning)
        langmem = require_extra("langmem", "langmem", "langmem")
    chat_models = require_extra("langchain.chat_models", "langmem", "langmem")
    memory_store = require_extra("langgraph.store.memory", "langmem", "langmem")
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    trustcall_logger = logging.getLogger("trustcall")
    if _DROPPED not in trustcall_logger.handlers:
        trustcall_logger.addHandler(_DROPPED)
    return langmem, chat_models, memory_store


class LangMemMemory:
    kind = "langmem"

    def __init__(
        self,
        team: TeamLangMem,
        *,
        namespace: tuple[str, ...] = DEFAULT_NAMESPACE,
        shadow: bool | None = None,
        top_k: int = LANGMEM_TOP_K,
        embedder: Embedder | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT,
        store: Any = None,
        sweeps: str = "subject",
    ) -> None:
        self.namespace = namespace
        self.top_k = top_k
        self.team = team
        self.timeout_seconds = timeout_seconds
        # healthd's own InMemoryStore holds nothing but the shadow; the team's Postgres, or a
        # store handed in, may hold real memories under other namespaces
        ephemeral = team.store_kind == "memory" and store is None
        if not (shadow if shadow is not None else ephemeral):
            where = "the team's store" if not ephemeral else "healthd's store"
            raise ShadowViolation(
                f"langmem namespace {namespace!r} in {where} is not declared shadow "
                "(set shadow=on for a namespace healthd owns)"
            )
        langmem, chat_models, memory_store = _imports()
        self.embedder = None if team.index is not None else embedder
        self._connection: Any = None
        try:
            self.model = chat_models.init_chat_model(**self._bounded(team.model))
            query_model = (
                chat_models.init_chat_model(**self._bounded(team.query_model))
                if team.query_model
                else None
            )
        except Exception as exc:
            raise TargetError(f"langmem.model refused by LangChain: {first_line(exc)}") from None
        self._usage = LLMUsage()
        self.sweeps = self._usage.sweeps = sweeps
        _count_chat(self.model, self._usage, "langmem.model")
        if query_model is not None:
            _count_chat(query_model, self._usage, "langmem.query_model")
        index = self._index()
        self.store = store if store is not None else self._open_store(memory_store, index)
        try:
            self._check_alone()
        except (ShadowViolation, MemoryAdapterError) as exc:
            self.close()
            raise ShadowViolation(str(exc)) from None
        try:
            self.manager = langmem.create_memory_store_manager(
                self.model,
                namespace=namespace,
                store=self.store,
                query_model=query_model,
                **team.manager,
            )
        except Exception as exc:
            self.close()
            raise TargetError(f"langmem manager refused: {first_line(exc)}") from None
        self._fingerprint = self._retrieval(index)
        self._clock = ReplayClock()
        # healthd's own notes of what LangMem wrote when: its store stamps wall-clock times
        self._written: dict[str, tuple[str, datetime, datetime]] = {}

    # --- set-up --------------------------------------------------------------------------

    def _bounded(self, model: Mapping[str, Any]) -> dict[str, Any]:
        """The team's model arguments with healthd's bound on each call (unless it set one)
        and no silent retries (a failed call fails the run)."""
        return {"timeout": self.timeout_seconds, "max_retries": 0, **model}

    def _index(self) -> dict[str, Any] | None:
        team = self.team.index
        if team == {}:
            return None
        if team is None:
            assert self.embedder is not None
            embedder = self.embedder
            return {"dims": embedder.dimensions, "embed": lambda texts: embedder.embed(list(texts))}
        embeddings = require_extra("langchain.embeddings", "langmem", "langmem")
        try:
            embed = embeddings.init_embeddings(
                team["embed"], **{"timeout": self.timeout_seconds, **team["embed_kwargs"]}
            )
        except Exception as exc:
            raise TargetError(
                f"langmem.store.index.embed refused by LangChain: {first_line(exc)}"
            ) from None
        _count_embeddings(embed, self._usage)
        return {"dims": team["dims"], "embed": embed, "fields": team["fields"]}

    def _open_store(self, memory_store: Any, index: dict[str, Any] | None) -> Any:
        if self.team.store_kind == "memory":
            return memory_store.InMemoryStore(index=index)
        postgres = require_extra("langgraph.store.postgres", "langmem", "langmem")
        psycopg = require_extra("psycopg", "langmem", "langmem")
        rows = require_extra("psycopg.rows", "langmem", "langmem")
        timeout_ms = int(self.timeout_seconds * 1000)
        try:
            self._connection = psycopg.Connection.connect(
                self.team.conn_string,
                autocommit=True,
                prepare_threshold=0,
                row_factory=rows.dict_row,
                connect_timeout=max(1, int(self.timeout_seconds)),
                options=f"-c statement_timeout={timeout_ms}",
            )
            store = postgres.PostgresStore(self._connection, index=index)
            store.setup()
        except Exception as exc:
            self.close()
            # the DSN may hold a password: the error names the variable, never the value
            raise TargetError(
                f"langmem.store: the PostgresStore cannot be used: {first_line(exc)}"
            ) from None
        return store

    def _retrieval(self, index: Mapping[str, Any] | None) -> RetrievalFingerprint:
        libraries = package_versions("langmem", "langgraph", "trustcall")
        libraries["extraction_llm"] = self.team.model_name
        libraries["store"] = type(self.store).__name__
        if self.embedder is not None:
            return RetrievalFingerprint.of(
                self.embedder.model,
                self.embedder.dimensions,
                {**libraries, **self.embedder.libraries},
            )
        if index is None:  # no index: the store's search filters and ranks nothing
            return RetrievalFingerprint.of("none", 0, libraries)
        assert self.team.index
        return RetrievalFingerprint.of(self.team.index["embed"], int(index["dims"]), libraries)

    # --- the Memory protocol -------------------------------------------------------------

    def reset(self) -> None:
        """Delete every item under the shadow namespace (and nothing else)."""
        self._check_alone()
        try:
            while True:
                found = self.store.search(self.namespace, limit=_PAGE)
                for item in found:
                    self._check_scope(item.namespace)
                    self.store.delete(item.namespace, item.key)
                if len(found) < _PAGE:
                    break
        except ShadowViolation:
            raise
        except Exception as exc:
            raise MemoryAdapterError(
                f"langmem reset of {self.namespace}: {first_line(exc)}"
            ) from exc
        self._clock.reset()
        self._written.clear()

    def apply(self, event: ChangeEvent) -> None:
        now = self._clock.advance(event.timestamp)
        if self.sweeps == "off" and is_sweep(event):
            return  # LangMem is not told its facts still hold
        budgeted_write(self._usage, lambda: self._apply([event], now))

    def apply_sweep(self, events: list[ChangeEvent]) -> None:
        """A revalidation sweep's events about one subject, as one user message."""
        now = self._clock.advance(events[-1].timestamp)
        budgeted_write(self._usage, lambda: self._apply(events, now))

    def _apply(self, events: list[ChangeEvent], now: datetime) -> None:
        event = events[0]
        message = {"role": "user", "content": " ".join(statement(e) for e in events)}
        try:
            _DROPPED.drain()
            puts = self.manager.invoke(
                {"messages": [message]}, config={"recursion_limit": RECURSION_LIMIT}
            )
            dropped = _DROPPED.drain()
            if dropped is not None:
                raise MemoryAdapterError(f"LangMem dropped a decision: {dropped[:200]}")
        except Exception as exc:
            raise MemoryAdapterError(
                f"langmem apply of event {event.id!r}: {first_line(exc)}"
            ) from exc
        for put in puts:
            self._check_scope(tuple(put["namespace"]))
            key = str(put["key"])
            first = self._written.get(key)
            self._written[key] = (first[0], first[1], now) if first else (event.id, now, now)

    def answer(self, probe: Probe, at: datetime) -> Answer:
        try:
            found = self.store.search(self.namespace, query=probe.question, limit=self.top_k)
        except Exception as exc:
            raise MemoryAdapterError(
                f"langmem search for probe {probe.id!r}: {first_line(exc)}"
            ) from exc
        items = []
        for item in found:
            self._check_scope(tuple(item.namespace))
            items.append(self._served(item))
        return Answer(probe.id, (), tuple(items))

    def retrieval_fingerprint(self) -> RetrievalFingerprint:
        return self._fingerprint

    def changed_keys(self, at: datetime) -> set[FactKey] | None:
        """What LangMem keeps may answer any probe's search: it cannot tell."""
        return None

    #: its writes' chat calls can be refused by an LLM budget (healthd.llm_budget)
    llm_budgets = True

    def llm_usage(self) -> LLMUsage:
        """The calls the team's chat models (and OpenAI index embedder) made."""
        return self._usage

    def close(self) -> None:
        connection, self._connection = getattr(self, "_connection", None), None
        if connection is not None:
            connection.close()

    # --- helpers -------------------------------------------------------------------------

    def _check_alone(self) -> None:
        """The store holds no namespace under the shadow one but the shadow itself: LangMem
        searches its namespace as a prefix and updates or deletes each memory it finds where
        that memory lies, and a reset deletes what the prefix holds, so a shadow namespace
        above others (``("memories",)`` above LangMem's own ``("memories", user)``) would
        read, rewrite and wipe theirs."""
        try:
            under = self.store.list_namespaces(prefix=self.namespace, limit=2)
        except Exception as exc:
            raise MemoryAdapterError(
                f"langmem: listing the namespaces under {self.namespace!r}: {first_line(exc)}"
            ) from exc
        others = [tuple(ns) for ns in under if tuple(ns) != self.namespace]
        if others:
            raise ShadowViolation(
                f"langmem namespace {self.namespace!r} holds another namespace, "
                f"{others[0]!r}: LangMem would read, rewrite and delete its memories; "
                "choose a shadow namespace of its own (e.g. memories/healthd-shadow)"
            )

    def _check_scope(self, namespace: tuple[str, ...]) -> None:
        if tuple(namespace[: len(self.namespace)]) != self.namespace:
            raise ShadowViolation(
                f"langmem touched namespace {namespace!r} outside the shadow {self.namespace!r}"
            )

    def _served(self, item: Any) -> ServedItem:
        value = item.value
        content = value.get("content") if isinstance(value, Mapping) else None
        if isinstance(content, Mapping) and set(content) == {"content"}:
            text = str(content["content"])  # LangMem's default Memory schema
        else:
            text = str(content if content is not None else value)
        noted = self._written.get(str(item.key))
        return ServedItem(
            text,
            f"langmem:{noted[0] if noted else item.key}:{str(item.key)[:8]}",
            noted[1] if noted else None,
            noted[2] if noted else None,
            {"kind": str(value.get("kind", ""))} if isinstance(value, Mapping) else {},
        )


def _count_chat(model: Any, usage: LLMUsage, name: str) -> None:
    """A LangChain ``ChatOpenAI``'s OpenAI clients (``root_client``, ``root_async_client``
    and the completions resources it calls through) given counting HTTP clients; any other
    chat model is said not to be counted."""
    root, root_async = (
        getattr(model, "root_client", None),
        getattr(model, "root_async_client", None),
    )
    counted = counting(root, usage) if root is not None else None
    counted_async = counting(root_async, usage) if root_async is not None else None
    if counted is None or counted_async is None:
        usage.not_counted.append(
            f"{name}: {type(model).__name__} has no OpenAI client; its calls are not counted"
        )
        return
    model.root_client, model.client = counted, counted.chat.completions
    model.root_async_client, model.async_client = counted_async, counted_async.chat.completions


def _count_embeddings(embed: Any, usage: LLMUsage) -> None:
    """A LangChain ``OpenAIEmbeddings`` index embedder counted (never refused: the store
    embeds between two puts); any other is said not to be counted."""
    resource = getattr(embed, "client", None)
    root = getattr(resource, "_client", None)
    counted = counting(root, usage, refusable=False) if root is not None else None
    if counted is None or not hasattr(counted, "embeddings"):
        usage.not_counted.append(
            f"langmem.store.index.embed: {type(embed).__name__} has no OpenAI client; its "
            "calls are not counted"
        )
        return
    embed.client = counted.embeddings
    resource_async = getattr(embed, "async_client", None)
    root_async = getattr(resource_async, "_client", None)
    counted_async = counting(root_async, usage, refusable=False) if root_async else None
    if counted_async is not None:
        embed.async_client = counted_async.embeddings


@register_memory("langmem")
def langmem_memory(options: Mapping[str, Any]) -> LangMemMemory:
    reject_unknown(options, _SWITCHES, "langmem")
    shadow = switch(options, "shadow", True) if "shadow" in options else None
    team = team_langmem(options.get("langmem"), options, os.environ)
    if "enable_deletes" in options:
        if "enable_deletes" in team.manager:
            raise TargetError("switch enable_deletes: it is langmem.enable_deletes; give one")
        team.manager["enable_deletes"] = switch(options, "enable_deletes", False)
    if team.index is not None and {"embedder", "dimensions"} & set(options):
        raise TargetError("switch embedder: the team's embedder is langmem.store.index; give one")
    store = options.get("store")
    if isinstance(store, str):
        raise TargetError("switch store: the store is the table langmem.store in the config file")
    return LangMemMemory(
        team,
        namespace=namespace_tuple(options.get("namespace", "/".join(DEFAULT_NAMESPACE))),
        shadow=shadow,
        top_k=integer(options, "top_k", LANGMEM_TOP_K),
        embedder=None if team.index is not None else embedder_from_options(options),
        timeout_seconds=integer(options, "timeout_seconds", DEFAULT_TIMEOUT),
        store=store,
        sweeps=sweeps_option(options),
    )
