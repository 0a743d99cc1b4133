"""The `mem0` memory: Mem0's open-source ``Memory``, run offline as a shadow.

Written with ``infer=False`` (no LLM extraction: the fact is the memory), stored in Mem0's
embedded Qdrant in local path mode, embedded by a deterministic local embedder that Mem0
takes through its ``langchain`` embedder provider (any LangChain ``Embeddings`` instance):
all-MiniLM-L6-v2 by default, the hashing embedder with ``embedder=hashing``; telemetry off.
Every memory's metadata carries the event id, subject, predicate, value, domain, the replay
times it was written and last validated, and the retrieval fingerprint it was written under,
so answers map back to facts and a record embedded by another model is told apart.
Probes are Mem0 ``search`` calls scoped to the shadow's ``user_id`` (and ``agent_id``/
``run_id`` when given) with metadata filters on the probe's subject and predicate.

Two ingestions:
- ``ingest=messages``: Mem0 as a team runs it. Each event is the user's turn of a
  conversation, stamped with its event time, written with ``add(messages, infer=True)``:
  Mem0's own LLM extraction decides what is stored (Mem0 2.2 adds only; it never updates or
  deletes on its own). Probes are Mem0 searches over the shadow scope, as an assistant asks,
  with no filter of healthd's; the reader reads what comes back. The team's LLM, embedder,
  vector store and reranker come from ``[targets.NAME.mem0]``, passed to
  ``Memory.from_config`` (secrets only as ``*_env`` names of environment variables).
- ``ingest=facts`` (the default): healthd writes each fact as the answer to its own probe
  question with ``infer=False`` and probes filter on its key, in one of two modes:
  ``native``, add only (a revision adds the new value beside the old, an invalidation or a
  revalidation writes nothing); ``managed``, where the adapter calls Mem0's own ``update`` on
  a revision and a revalidation and ``delete`` on an invalidation: healthd's decisions, an
  upper bound of what Mem0 could serve. Nothing cascades along ``depends_on``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from healthd.embedding import Embedder, HashingEmbedder
from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError, shorten
from healthd.llm_usage import LLMUsage
from healthd.memory import Memory, register_memory
from healthd.memory._embedder_switch import embedder_from_options
from healthd.memory._llm_count import counting
from healthd.memory._mem0_config import DEFAULT_USER, scope_ids, team_config, turn
from healthd.memory._mem0_library import MEM0_ERRORS, import_mem0, served_item, when
from healthd.memory._offline import (
    IN_MEMORY,
    ReplayClock,
    first_line,
    memory_text,
    package_versions,
    shadow_directory,
)
from healthd.memory._options import integer, reject_unknown, sweeps_option, switch
from healthd.memory.fingerprint import METADATA_KEY, RetrievalFingerprint
from healthd.model import (
    Answer,
    ChangeEvent,
    Fact,
    FactKey,
    Probe,
    is_sweep,
)

COLLECTION = "healthd_shadow"
MODES = ("native", "managed")
INGESTS = ("facts", "messages")
MEM0_TOP_K = 20  # Mem0's own search default, what a team's assistant gets
DEFAULT_TIMEOUT = 60
# A closed local port: Mem0 insists on building an LLM client, which infer=False never calls;
# if anything ever did, it would fail here at once instead of reaching a network.
_UNUSED_LLM_URL = "http://127.0.0.1:9/v1"
DEPLOYMENTS = ("local", "platform")
_SWITCHES = {
    "deployment",
    "mode",
    "path",
    "user_id",
    "agent_id",
    "run_id",
    "shadow",
    "top_k",
    "embedder",
    "dimensions",
    "ingest",
    "mem0",
    "timeout_seconds",
    "sweeps",
}


def _langchain_embeddings(embedder: Embedder) -> Any:
    from langchain_core.embeddings import Embeddings

    class LocalEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed(texts)

        def embed_query(self, text: str) -> list[float]:
            return embedder.embed([text])[0]

    return LocalEmbeddings()


def mem0_config(
    directory: str,
    embedder: Embedder | None = None,
    team: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Mem0's configuration: the team's sections as given, and for each one it leaves out
    healthd's offline default in ``directory``: Qdrant in local path mode, the local
    embedder (the hashing one when none is given), an LLM client that is never called."""
    team = dict(team or {})
    if "embedder" in team:
        dimensions = _team_dimensions(team)
        local: dict[str, Any] = {}
    else:
        embedder = embedder or HashingEmbedder()
        dimensions = embedder.dimensions
        local = {
            "provider": "langchain",
            "config": {"model": _langchain_embeddings(embedder), "embedding_dims": dimensions},
        }
    config: dict[str, Any] = {
        "embedder": local,
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": os.path.join(directory, "qdrant"),
                "on_disk": True,
                "collection_name": COLLECTION,
                "embedding_model_dims": dimensions,
            },
        },
        "llm": {
            "provider": "openai",
            "config": {"api_key": "healthd-offline", "openai_base_url": _UNUSED_LLM_URL},
        },
        "history_db_path": os.path.join(directory, "history.db"),
    }
    config.update(team)
    return config


def _team_dimensions(team: Mapping[str, Any]) -> int:
    """The team embedder's vector size, which healthd's default vector store is made with."""
    dims = (team["embedder"].get("config") or {}).get("embedding_dims")
    if dims is None and "vector_store" not in team:
        raise TargetError(
            "mem0.embedder.config.embedding_dims: needed when healthd makes the vector "
            "store (no mem0.vector_store): the size of the embedder's vectors"
        )
    try:
        return int(dims) if dims is not None else 0
    except (TypeError, ValueError):
        raise TargetError(
            f"mem0.embedder.config.embedding_dims: {dims!r} is not a number"
        ) from None


class Mem0Memory:
    kind = "mem0"

    def __init__(
        self,
        *,
        mode: str = "native",
        ingest: str = "facts",
        path: str = IN_MEMORY,
        user_id: str = DEFAULT_USER,
        agent_id: str | None = None,
        run_id: str | None = None,
        shadow: bool | None = None,
        top_k: int = 5,
        embedder: Embedder | None = None,
        team: Mapping[str, Any] | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT,
        sweeps: str | None = None,
    ) -> None:
        if mode not in MODES:
            raise TargetError(f"switch mode={mode!r}: expected one of {', '.join(MODES)}")
        if ingest not in INGESTS:
            raise TargetError(f"switch ingest={ingest!r}: expected one of {', '.join(INGESTS)}")
        team = dict(team or {})
        if ingest == "messages" and "llm" not in team:
            raise TargetError(
                "ingest=messages: Mem0's extraction needs the team's LLM, a "
                "[targets.NAME.mem0.llm] table (provider and config)"
            )
        scope = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        self._scope = {k: v for k, v in scope.items() if v}
        # An ephemeral store is healthd's own; a store on disk or the team's own vector store
        # may hold someone's real memories, so writing there takes an explicit shadow=on.
        ephemeral = path == IN_MEMORY and not {"vector_store", "history_db_path"} & set(team)
        if not (shadow if shadow is not None else ephemeral):
            where = "the team's Mem0 store" if path == IN_MEMORY else repr(path)
            raise ShadowViolation(
                f"mem0 scope {self._scope} in {where} is not declared shadow "
                "(set shadow=on for a scope healthd owns)"
            )
        mem0 = import_mem0()
        self.mode = mode
        self.ingest = ingest
        self.upper_bound = _upper_bound(ingest, mode)
        self.top_k = top_k
        self.embedder = None if "embedder" in team else (embedder or HashingEmbedder())
        self._rerank = "reranker" in team
        directory, self._scratch = shadow_directory(path, "mem0")
        try:
            self._memory = mem0.Memory.from_config(mem0_config(directory, self.embedder, team))
        except TargetError:
            self._cleanup()
            raise
        except Exception as exc:
            self._cleanup()
            raise TargetError(  # pydantic's ValidationError is a ValueError
                f"mem0 configuration refused by Mem0: {_config_error(exc)}"
                if team and isinstance(exc, ValueError)
                else f"mem0 store in {path!r} cannot be opened: {first_line(exc)}"
            ) from None
        self._usage = LLMUsage()
        # a turn is an LLM's work: a sweep's facts about one subject are one turn; healthd's
        # own writes (ingest=facts) are one per fact as any change
        self.sweeps = sweeps or ("subject" if ingest == "messages" else "each")
        self._usage.sweeps = self.sweeps
        _bound(self._memory, timeout_seconds, self._usage, "reranker" in team)
        self._fingerprint = self._retrieval(team)
        self._clock = ReplayClock()
        self._touched: set[FactKey] = set()
        if path != IN_MEMORY and "vector_store" not in team:
            self._check_dimensions(path)
        if not ephemeral:
            self._resume_clock()

    def _retrieval(self, team: Mapping[str, Any]) -> RetrievalFingerprint:
        libraries = package_versions("mem0ai", "qdrant-client")
        if self.ingest == "messages":  # the extraction decides what there is to retrieve
            llm = self._memory.llm.config
            libraries["extraction_llm"] = f"{team['llm']['provider']}:{llm.model}"
        if self.embedder is not None:
            return RetrievalFingerprint.of(
                self.embedder.model,
                self.embedder.dimensions,
                {**libraries, **self.embedder.libraries},
            )
        used = self._memory.embedding_model.config  # Mem0's, with its defaults filled in
        return RetrievalFingerprint.of(
            f"{team['embedder']['provider']}:{used.model}",
            int(used.embedding_dims or 0),
            libraries,
        )

    def _check_dimensions(self, path: str) -> None:
        """A store's collection keeps the vector size it was made with (and may hold other
        scopes' memories, so healthd never recreates it): another embedder cannot write
        there, which is said at once rather than at the first write."""
        client = self._memory.vector_store.client
        stored = client.get_collection(COLLECTION).config.params.vectors.size
        used = self._fingerprint
        if stored != used.dimensions:
            self.close()
            raise TargetError(
                f"mem0 store in {path!r} holds vectors of {stored} dimensions; embedder "
                f"{used.embedder} makes {used.dimensions}: use a new path, or "
                f"the embedder it was written with (embedder=hashing,dimensions={stored} "
                "for a store written by healthd before the model embedder)"
            )

    def _resume_clock(self) -> None:
        """A reopened shadow goes on from the newest replay time its records carry."""
        found = self._memory.get_all(filters=dict(self._scope), top_k=1_000_000)
        for row in found["results"]:
            metadata = row.get("metadata") or {}
            for name in ("written_at", "validated_at"):
                if name in metadata:
                    self._clock.advance(datetime.fromisoformat(str(metadata[name])))

    # --- the Memory protocol -------------------------------------------------------------

    def reset(self) -> None:
        try:
            self._memory.delete_all(**self._scope)
            self._forget_messages()
        except Exception as exc:
            raise MemoryAdapterError(f"mem0 reset of {self._scope}: {first_line(exc)}") from exc
        self._clock.reset()
        self._touched.clear()

    def _forget_messages(self) -> None:
        """Mem0 keeps the scope's last messages apart from its memories (its history
        database's ``messages`` table, sent as "Last k Messages" with every extraction) and
        ``delete_all`` leaves them: a reset shadow would extract its first events with the
        previous replay's last turns as context. Only the shadow scope's rows go."""
        db = getattr(self._memory, "db", None)
        connection = getattr(db, "connection", None)
        if connection is None:
            return
        from mem0.memory.main import _build_session_scope

        with getattr(db, "_lock", threading.Lock()):
            connection.execute(
                "DELETE FROM messages WHERE session_scope = ?", (_build_session_scope(self._scope),)
            )
            connection.commit()

    def apply(self, event: ChangeEvent) -> None:
        if self.sweeps == "off" and is_sweep(event):
            return  # Mem0 is not told its facts still hold
        self._write([event])

    def apply_sweep(self, events: list[ChangeEvent]) -> None:
        """A revalidation sweep's events about one subject: one turn (facts: each)."""
        if self.ingest == "messages":
            self._write(events)
        else:
            for event in events:
                self._write([event])

    def _write(self, events: list[ChangeEvent]) -> None:
        now = self._clock.advance(events[-1].timestamp)
        budget = self._usage.budget
        self._usage.writing = True
        try:
            self._apply(events, now)
        except MemoryAdapterError:
            # a call a budget refused, whatever Mem0 made of it: every later call was
            # refused too, and Mem0 stores only after its calls, so nothing of it is stored
            refused = budget.take_refusal() if budget is not None else None
            if refused is not None:
                raise refused from None
            raise
        finally:
            self._usage.writing = False
        refused = budget.take_refusal() if budget is not None else None
        if refused is not None:  # Mem0 logged and skipped it (a failed embedding)
            raise refused

    def _apply(self, events: list[ChangeEvent], now: datetime) -> None:
        event = events[0]
        try:
            MEM0_ERRORS.drain()
            if self.ingest == "messages":
                self._apply_messages(events, now)
            elif self.mode == "native":
                self._apply_native(event, now)
            else:
                self._apply_managed(event, now)
            swallowed = MEM0_ERRORS.drain()
            if swallowed is not None:
                raise MemoryAdapterError(f"Mem0 logged and went on: {shorten(swallowed, 200)}")
        except Exception as exc:
            raise MemoryAdapterError(
                f"mem0 apply of event {event.id!r}: {first_line(exc)}"
            ) from exc

    def answer(self, probe: Probe, at: datetime) -> Answer:
        try:
            if self.ingest == "messages":  # as an assistant asks: the question, in its scope
                found = self._memory.search(
                    probe.question, filters=dict(self._scope), top_k=self.top_k, rerank=self._rerank
                )
            else:
                filters = {**self._scope, "subject": probe.subject, "predicate": probe.predicate}
                found = self._memory.search(
                    probe.question, filters=filters, top_k=self.top_k, threshold=0.0
                )
        except Exception as exc:
            raise MemoryAdapterError(
                f"mem0 search for probe {probe.id!r}: {first_line(exc)}"
            ) from exc
        # Qdrant's scores of equally similar texts differ in their last bits from one call to
        # the next: rounded, equal scores are ordered newest first, then by record.
        rows = [
            (round(row.get("score") or 0.0, 6), served_item(row, self._fingerprint))
            for row in found.get("results", [])
        ]
        rows.sort(key=lambda r: (-r[0], -when(r[1].written_at), r[1].record_id))
        # What Mem0 serves is the memory's text: the reader reads it; the metadata healthd
        # wrote (which infer=True copies onto every extraction) only tells a mismatch.
        return Answer(probe.id, (), tuple(item for _, item in rows))

    def retrieval_fingerprint(self) -> RetrievalFingerprint:
        return self._fingerprint

    #: its writes' calls can be refused by an LLM budget (healthd.llm_budget)
    llm_budgets = True

    def llm_usage(self) -> LLMUsage:
        """The calls Mem0's own clients made to the team's LLM and embedding endpoints."""
        return self._usage

    def changed_keys(self, at: datetime) -> set[FactKey] | None:
        """Mem0 answers change only when healthd writes (no expiry is set), and healthd knows
        which keys it wrote; but what Mem0 extracts from a message may answer any probe's
        unfiltered search, so with ``ingest=messages`` it cannot tell."""
        changed, self._touched = self._touched, set()
        return None if self.ingest == "messages" else changed

    def close(self) -> None:
        memory = getattr(self, "_memory", None)
        if memory is not None:
            client = getattr(memory.vector_store, "client", None)
            if client is not None:
                client.close()  # releases Qdrant's lock on its local folder
            memory.db.close()
            self._memory = None
        self._cleanup()

    # --- ingestions ----------------------------------------------------------------------

    def _apply_messages(self, events: list[ChangeEvent], now: datetime) -> None:
        """The event (or a sweep's events about one subject) as a turn of conversation;
        Mem0's extraction decides what it keeps. The metadata (the first event's key and
        replay times) lands on whatever it extracts."""
        event = events[0]
        metadata = self._metadata(event.id, event.fact, now, now)
        self._memory.add([turn(*events)], infer=True, metadata=metadata, **self._scope)

    def _apply_native(self, event: ChangeEvent, now: datetime) -> None:
        if event.type in ("added", "revised"):
            self._add(event, event.fact, now)

    def _apply_managed(self, event: ChangeEvent, now: datetime) -> None:
        if event.type == "added":
            existing = self._find(event.fact)
            if existing:  # the same fact again: Mem0 keeps one memory of it, now validated
                for memory_id, metadata in existing:
                    self._revalidate(memory_id, metadata, event.fact, now)
            else:
                self._add(event, event.fact, now)
        elif event.type == "revised":
            assert event.previous is not None
            existing = self._find(event.previous)
            if not existing:
                self._add(event, event.fact, now)
            for memory_id, _ in existing:
                metadata = self._metadata(event.id, event.fact, now, now)
                self._memory.update(memory_id, memory_text(event.fact), metadata=metadata)
                self._touched.add(event.fact.key)
            self._touched.add(event.previous.key)
        elif event.type == "invalidated":
            for memory_id, _ in self._find(event.fact):
                self._memory.delete(memory_id)
            self._touched.add(event.fact.key)
        elif event.type == "revalidated":
            for memory_id, metadata in self._find(event.fact):
                self._revalidate(memory_id, metadata, event.fact, now)

    # --- Mem0 calls ----------------------------------------------------------------------

    def _metadata(
        self, record: str, fact: Fact, validated_at: datetime, written_at: datetime
    ) -> dict[str, str]:
        return {
            "healthd_event": record,
            "subject": fact.subject,
            "predicate": fact.predicate,
            "value": fact.value,
            "domain": fact.domain,
            "written_at": written_at.isoformat(),
            "validated_at": validated_at.isoformat(),
            METADATA_KEY: self._fingerprint.id,
        }

    def _add(self, event: ChangeEvent, fact: Fact, now: datetime) -> None:
        metadata = self._metadata(event.id, fact, now, now)
        self._memory.add(memory_text(fact), infer=False, metadata=metadata, **self._scope)
        self._touched.add(fact.key)

    def _revalidate(
        self, memory_id: str, stored: Mapping[str, Any], fact: Fact, now: datetime
    ) -> None:
        """The same memory, its record and write time kept, validated now."""
        record = str(stored.get("healthd_event", memory_id))
        written = stored.get("written_at")
        written_at = datetime.fromisoformat(str(written)) if written else now
        metadata = self._metadata(record, fact, now, written_at)
        self._memory.update(memory_id, memory_text(fact), metadata=metadata)
        self._touched.add(fact.key)

    def _find(self, fact: Fact) -> list[tuple[str, dict[str, Any]]]:
        filters = {
            **self._scope,
            "subject": fact.subject,
            "predicate": fact.predicate,
            "value": fact.value,
        }
        found = self._memory.get_all(filters=filters, top_k=10_000)
        rows = [(str(row["id"]), dict(row.get("metadata") or {})) for row in found["results"]]
        return sorted(rows, key=lambda r: (str(r[1].get("written_at")), r[0]))

    def _cleanup(self) -> None:
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            scratch.cleanup()
            self._scratch = None


def _config_error(exc: Exception) -> str:
    """Mem0's refusal of a configuration as one line: pydantic's first error with where it
    is, or the exception's first line."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
        except (TypeError, IndexError, ValueError):
            return first_line(exc)
        where = ".".join(str(p) for p in first.get("loc", ()))
        return f"{where}: {first.get('msg', '')}" if where else str(first.get("msg", ""))
    return first_line(exc)


def _bound(memory: Any, timeout_seconds: float, usage: LLMUsage, reranker: bool) -> None:
    """Mem0 builds its OpenAI-compatible clients with the SDK's ten-minute timeout and no
    way to set it: a hung endpoint would wedge the run, so they get healthd's. The same
    clients are given a counting HTTP client, so every call Mem0 makes is counted in
    ``usage``; a client that is not OpenAI's keeps its own (bounded where it lets us)."""
    parts = {"mem0.llm": memory.llm, "mem0.embedder": memory.embedding_model}
    if reranker:
        parts["mem0.reranker"] = getattr(memory, "reranker", None)
    for name, part in parts.items():
        client = getattr(part, "client", None)
        if client is None:
            continue
        counted = counting(client, usage, timeout=timeout_seconds)
        if counted is not None:
            part.client = counted
            continue
        usage.not_counted.append(
            f"{name}: its client ({type(client).__name__}) is not OpenAI's, its calls are "
            "not counted"
        )
        with_options = getattr(client, "with_options", None)
        if callable(with_options):
            part.client = with_options(timeout=timeout_seconds)


def _upper_bound(ingest: str, mode: str) -> str | None:
    """What healthd decides for Mem0 with ``ingest = "facts"`` (None: Mem0's own pipeline)."""
    if ingest != "facts":
        return None
    said = (
        "healthd's own sentence for each fact is stored (add with infer=False), not Mem0's "
        "extraction"
    )
    if mode == "managed":
        said += ", and healthd decides what is updated and deleted"
    return said


@register_memory("mem0")
def mem0_memory(options: Mapping[str, Any]) -> Memory:
    deployment = str(options.get("deployment", "local"))
    if deployment not in DEPLOYMENTS:
        raise TargetError(
            f"switch deployment={deployment!r}: expected one of {', '.join(DEPLOYMENTS)}"
        )
    if deployment == "platform":  # the hosted Mem0 Platform, through MemoryClient
        from healthd.memory.mem0_platform import platform_memory

        return platform_memory(options)
    reject_unknown(options, _SWITCHES, "mem0")
    shadow = switch(options, "shadow", True) if "shadow" in options else None
    ingest = str(options.get("ingest", "facts"))
    if ingest == "messages" and "mode" in options:
        raise TargetError(
            "switch mode: it chooses healthd's writes with ingest=facts; with "
            "ingest=messages Mem0's own extraction decides"
        )
    team = team_config(options["mem0"], os.environ) if "mem0" in options else {}
    if "embedder" in team and {"embedder", "dimensions"} & set(options):
        raise TargetError("switch embedder: the team's embedder is mem0.embedder; give one")
    user_id, agent_id, run_id = scope_ids(options, "mem0")
    for name, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
        if value is not None and any(c.isspace() for c in value):
            raise TargetError(
                f"mem0: {name} {value!r} holds whitespace, which Mem0 refuses in an id "
                "(_validate_and_trim_entity_id); name the scope without it"
            )
    return Mem0Memory(
        mode=str(options.get("mode", "native")),
        ingest=ingest,
        path=str(options.get("path", IN_MEMORY)),
        user_id=user_id,
        agent_id=agent_id,
        run_id=run_id,
        shadow=shadow,
        top_k=integer(options, "top_k", MEM0_TOP_K if ingest == "messages" else 5),
        embedder=None if "embedder" in team else embedder_from_options(options),
        team=team,
        timeout_seconds=integer(options, "timeout_seconds", DEFAULT_TIMEOUT),
        sweeps=sweeps_option(options) if "sweeps" in options else None,
    )
