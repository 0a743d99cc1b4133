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

Two modes:
- ``native``: add only, as most deployments use Mem0's ``add``; a revision adds the new
  value beside the old, an invalidation or a revalidation writes nothing (Mem0's
  add path with ``infer=False`` has no notion of either).
- ``managed``: the adapter calls Mem0's own ``update`` on a revision (the old memory becomes
  the new value) and a revalidation, and ``delete`` on an invalidation. Nothing cascades
  along ``depends_on``: Mem0 has no dependencies between memories.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError
from healthd.memory import register_memory
from healthd.memory._embedding import Embedder, HashingEmbedder, embedder_from_options
from healthd.memory._offline import (
    IN_MEMORY,
    ReplayClock,
    first_line,
    memory_text,
    package_versions,
    require_extra,
    shadow_directory,
)
from healthd.memory._options import integer, reject_unknown, switch
from healthd.memory.fingerprint import METADATA_KEY, RetrievalFingerprint, changed_since
from healthd.model import (
    RETRIEVAL_CHANGED,
    Answer,
    ChangeEvent,
    Fact,
    FactKey,
    Probe,
    ServedItem,
)

DEFAULT_USER = "healthd-shadow"
COLLECTION = "healthd_shadow"
MODES = ("native", "managed")
# A closed local port: Mem0 insists on building an LLM client, which infer=False never calls;
# if anything ever did, it would fail here at once instead of reaching a network.
_UNUSED_LLM_URL = "http://127.0.0.1:9/v1"
_SWITCHES = {
    "mode",
    "path",
    "user_id",
    "agent_id",
    "run_id",
    "shadow",
    "top_k",
    "embedder",
    "dimensions",
}
_QUIET_LOGGERS = ("mem0", "qdrant_client", "httpx", "posthog")


def _import_mem0() -> Any:
    # Read once, when mem0 is first imported: healthd never lets it phone home, and keeps its
    # home directory (~/.mem0 by default) out of the user's home.
    already_imported = "mem0" in sys.modules
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", os.path.join(tempfile.gettempdir(), "healthd-mem0-home"))
    module = require_extra("mem0", "mem0", "mem0")
    if already_imported and require_extra("mem0.memory.telemetry", "mem0", "mem0").MEM0_TELEMETRY:
        raise TargetError(
            "mem0 was imported with its telemetry on before healthd could turn it off; "
            "set MEM0_TELEMETRY=False in the environment"
        )
    require_extra("langchain.embeddings.base", "mem0", "mem0")
    for name in _QUIET_LOGGERS:  # optional-feature notices (spaCy, fastembed) are not errors
        logging.getLogger(name).setLevel(logging.ERROR)
    return module


def _langchain_embeddings(embedder: Embedder) -> Any:
    from langchain_core.embeddings import Embeddings

    class LocalEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.embed(texts)

        def embed_query(self, text: str) -> list[float]:
            return embedder.embed([text])[0]

    return LocalEmbeddings()


def mem0_config(directory: str, embedder: Embedder | None = None) -> dict[str, Any]:
    """Mem0's configuration for a store in ``directory``: Qdrant in local path mode, the
    local embedder (the hashing one when none is given), and an LLM client that is never
    called."""
    embedder = embedder or HashingEmbedder()
    dimensions = embedder.dimensions
    return {
        "embedder": {
            "provider": "langchain",
            "config": {"model": _langchain_embeddings(embedder), "embedding_dims": dimensions},
        },
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


class Mem0Memory:
    kind = "mem0"

    def __init__(
        self,
        *,
        mode: str = "native",
        path: str = IN_MEMORY,
        user_id: str = DEFAULT_USER,
        agent_id: str | None = None,
        run_id: str | None = None,
        shadow: bool | None = None,
        top_k: int = 5,
        embedder: Embedder | None = None,
    ) -> None:
        if mode not in MODES:
            raise TargetError(f"switch mode={mode!r}: expected one of {', '.join(MODES)}")
        scope = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        self._scope = {k: v for k, v in scope.items() if v}
        # An ephemeral store is healthd's own; a store on disk may hold someone's real
        # memories, so writing to it takes an explicit shadow=on.
        if not (shadow if shadow is not None else path == IN_MEMORY):
            raise ShadowViolation(
                f"mem0 scope {self._scope} in {path!r} is not declared shadow "
                "(set shadow=on for a scope healthd owns)"
            )
        mem0 = _import_mem0()
        self.mode = mode
        self.top_k = top_k
        self.embedder = embedder or HashingEmbedder()
        self._fingerprint = RetrievalFingerprint.of(
            self.embedder.model,
            self.embedder.dimensions,
            {**package_versions("mem0ai", "qdrant-client"), **self.embedder.libraries},
        )
        directory, self._scratch = shadow_directory(path, "mem0")
        config = mem0_config(directory, self.embedder)
        try:
            self._memory = mem0.Memory.from_config(config)
        except Exception as exc:
            self._cleanup()
            raise TargetError(
                f"mem0 store in {path!r} cannot be opened: {first_line(exc)}"
            ) from None
        self._clock = ReplayClock()
        self._touched: set[FactKey] = set()
        if path != IN_MEMORY:
            self._check_dimensions(path)
            self._resume_clock()

    def _check_dimensions(self, path: str) -> None:
        """A store's collection keeps the vector size it was made with (and may hold other
        scopes' memories, so healthd never recreates it): another embedder cannot write
        there, which is said at once rather than at the first write."""
        client = self._memory.vector_store.client
        stored = client.get_collection(COLLECTION).config.params.vectors.size
        if stored != self.embedder.dimensions:
            self.close()
            raise TargetError(
                f"mem0 store in {path!r} holds vectors of {stored} dimensions; embedder "
                f"{self.embedder.model} makes {self.embedder.dimensions}: use a new path, or "
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
        except Exception as exc:
            raise MemoryAdapterError(f"mem0 reset of {self._scope}: {first_line(exc)}") from exc
        self._clock.reset()
        self._touched.clear()

    def apply(self, event: ChangeEvent) -> None:
        now = self._clock.advance(event.timestamp)
        try:
            if self.mode == "native":
                self._apply_native(event, now)
            else:
                self._apply_managed(event, now)
        except Exception as exc:
            raise MemoryAdapterError(
                f"mem0 apply of event {event.id!r}: {first_line(exc)}"
            ) from exc

    def answer(self, probe: Probe, at: datetime) -> Answer:
        filters = {**self._scope, "subject": probe.subject, "predicate": probe.predicate}
        try:
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
            (round(row.get("score") or 0.0, 6), _served(row, self._fingerprint))
            for row in found.get("results", [])
        ]
        rows.sort(key=lambda r: (-r[0], -_when(r[1].written_at), r[1].record_id))
        # What Mem0 serves is the memory's text: the reader reads it; the metadata healthd
        # wrote (which infer=True copies onto every extraction) only tells a mismatch.
        return Answer(probe.id, (), tuple(item for _, item in rows))

    def retrieval_fingerprint(self) -> RetrievalFingerprint:
        return self._fingerprint

    def changed_keys(self, at: datetime) -> set[FactKey]:
        """Mem0 answers change only when healthd writes (no expiry is set), and healthd knows
        which keys it wrote."""
        changed, self._touched = self._touched, set()
        return changed

    def close(self) -> None:
        memory = getattr(self, "_memory", None)
        if memory is not None:
            client = getattr(memory.vector_store, "client", None)
            if client is not None:
                client.close()  # releases Qdrant's lock on its local folder
            memory.db.close()
            self._memory = None
        self._cleanup()

    # --- modes ---------------------------------------------------------------------------

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


def _served(row: Mapping[str, Any], fingerprint: RetrievalFingerprint) -> ServedItem:
    """A Mem0 memory as served: its text, and the times healthd stamped on it (a memory
    healthd did not write has only Mem0's own ``created_at``); flagged when it was written
    under another retrieval fingerprint."""
    metadata = {k: v for k, v in (row.get("metadata") or {}).items() if isinstance(v, str)}
    written = _time(metadata.get("written_at")) or _time(row.get("created_at"))
    return ServedItem(
        str(row.get("memory") or ""),
        f"mem0:{metadata.get('healthd_event', row.get('id'))}",
        written,
        _time(metadata.get("validated_at")),
        metadata,
        frozenset({RETRIEVAL_CHANGED})
        if changed_since(metadata.get(METADATA_KEY), fingerprint)
        else frozenset(),
    )


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _when(at: datetime | None) -> float:
    return at.timestamp() if at is not None else 0.0


@register_memory("mem0")
def mem0_memory(options: Mapping[str, Any]) -> Mem0Memory:
    reject_unknown(options, _SWITCHES, "mem0")
    shadow = switch(options, "shadow", True) if "shadow" in options else None
    return Mem0Memory(
        mode=str(options.get("mode", "native")),
        path=str(options.get("path", IN_MEMORY)),
        user_id=str(options.get("user_id", DEFAULT_USER)),
        agent_id=str(options["agent_id"]) if options.get("agent_id") else None,
        run_id=str(options["run_id"]) if options.get("run_id") else None,
        shadow=shadow,
        top_k=integer(options, "top_k", 5),
        embedder=embedder_from_options(options),
    )
