"""The `graphiti` memory: Graphiti's temporal knowledge graph on its embedded Kuzu driver.

Facts are written as Graphiti's own entity nodes and entity edges, directly (no LLM
extraction): the subject and the value are entity nodes, the fact is an edge named by the
predicate, valid from the event's time. A revision invalidates the old edge with Graphiti's
own ``resolve_edge_contradictions`` (``invalid_at`` = the new edge's ``valid_at``,
``expired_at`` = when the graph learned it, here the replay clock); an invalidation sets
both on the edge; a revalidation stamps the edge's ``validated_at`` attribute. Nothing
cascades along ``depends_on``: Graphiti has no dependencies between edges.

The embedder is a local one (all-MiniLM-L6-v2 by default, the hashing embedder with
``embedder=hashing``), and the LLM and cross-encoder clients are passed explicitly as clients
that refuse every call, so nothing can reach a network. Each edge's attributes carry the
retrieval fingerprint it was written under.

Probes run Graphiti's hybrid edge search (BM25 + cosine, RRF), filtered to the probe's
predicate and subject node:
- ``search=default``: as Graphiti's ``search`` does by default, with no time filter, so
  invalidated edges are served beside current ones.
- ``search=valid``: filtered to edges valid at the probe time (``valid_at <= t`` and
  ``invalid_at`` unset or after ``t``).

The shadow scope is a ``group_id`` healthd owns; reset deletes only that group.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
import warnings
from collections.abc import Coroutine, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

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
    DOMAINS,
    RETRIEVAL_CHANGED,
    Answer,
    ChangeEvent,
    Domain,
    FactKey,
    Probe,
    RetrievedFact,
)

DEFAULT_GROUP = "healthd-shadow"
SEARCHES = ("default", "valid")
_SWITCHES = {"search", "path", "group_id", "shadow", "top_k", "embedder", "dimensions"}
_IDS = uuid.UUID("6f1c0c7e-4a57-4d0e-9a51-9b1f3f0c2d11")  # namespace of healthd's node/edge ids
_T = TypeVar("_T")


def database_path(directory: str) -> str:
    """Where the Kuzu database of a shadow kept in ``directory`` lives."""
    return os.path.join(directory, "graph.kuzu")


def _import_graphiti() -> None:
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"  # never phone home
    with warnings.catch_warnings():  # its pydantic deprecation notices are not the user's
        warnings.simplefilter("ignore", DeprecationWarning)
        require_extra("graphiti_core", "graphiti", "graphiti")
        require_extra("graphiti_core.driver.kuzu_driver", "graphiti", "graphiti")
    require_extra("kuzu", "graphiti", "graphiti")
    logging.getLogger("graphiti_core").setLevel(logging.CRITICAL)


def _clients(embedder: Embedder) -> tuple[Any, Any, Any]:
    """The local embedder as Graphiti's, and LLM and cross-encoder clients that refuse
    every call."""
    from graphiti_core.cross_encoder.client import CrossEncoderClient
    from graphiti_core.embedder.client import EmbedderClient
    from graphiti_core.llm_client.client import LLMClient

    class LocalEmbedder(EmbedderClient):
        async def create(self, input_data: Any) -> list[float]:
            text = input_data if isinstance(input_data, str) else " ".join(map(str, input_data))
            return embedder.embed([text])[0]

        async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
            return embedder.embed(input_data_list)

    class NoLLM(LLMClient):
        async def _generate_response(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            raise MemoryAdapterError("graphiti asked for an LLM; healthd runs it without one")

    class NoCrossEncoder(CrossEncoderClient):
        async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
            raise MemoryAdapterError("graphiti asked for a cross-encoder; healthd has none")

    return LocalEmbedder(), NoLLM(None), NoCrossEncoder()


class GraphitiMemory:
    kind = "graphiti"

    def __init__(
        self,
        *,
        search: str = "default",
        path: str = IN_MEMORY,
        group_id: str = DEFAULT_GROUP,
        shadow: bool | None = None,
        top_k: int = 5,
        embedder: Embedder | None = None,
    ) -> None:
        if search not in SEARCHES:
            raise TargetError(f"switch search={search!r}: expected one of {', '.join(SEARCHES)}")
        if not (shadow if shadow is not None else path == IN_MEMORY):
            raise ShadowViolation(
                f"graphiti group {group_id!r} in {path!r} is not declared shadow "
                "(set shadow=on for a group healthd owns)"
            )
        _import_graphiti()
        from graphiti_core import Graphiti
        from graphiti_core.driver.kuzu_driver import KuzuDriver

        self.search = search
        self.group_id = group_id
        self.top_k = top_k
        self.embedder = embedder or HashingEmbedder()
        self._fingerprint = RetrievalFingerprint.of(
            self.embedder.model,
            self.embedder.dimensions,
            {**package_versions("graphiti-core", "kuzu"), **self.embedder.libraries},
        )
        self._runner = asyncio.Runner()
        self._closed = False
        self._scratch = None
        database = IN_MEMORY
        if path != IN_MEMORY:
            directory, self._scratch = shadow_directory(path, "graphiti")
            database = database_path(directory)
        try:
            with warnings.catch_warnings():  # Kuzu's deprecation notice is Graphiti's to give
                warnings.simplefilter("ignore", DeprecationWarning)
                self._driver = KuzuDriver(db=database)
        except RuntimeError as exc:
            self._runner.close()
            raise TargetError(
                f"graphiti store {path!r} cannot be opened: {first_line(exc)}"
            ) from None
        embedder_client, llm, cross_encoder = _clients(self.embedder)
        self._graphiti = Graphiti(
            graph_driver=self._driver,
            embedder=embedder_client,
            llm_client=llm,
            cross_encoder=cross_encoder,
        )
        self._clock = ReplayClock()
        self._touched: set[FactKey] = set()
        self._nodes: set[str] = set()
        try:
            self._run(self._ensure_fulltext_indices())
            if path != IN_MEMORY:
                self._run(self._resume_clock())
        except Exception as exc:
            self.close()  # let go of the database before saying why
            raise TargetError(
                f"graphiti store {path!r} cannot be opened: {first_line(exc)}"
            ) from None

    async def _resume_clock(self) -> None:
        """A reopened shadow goes on from the newest replay time its edges carry."""
        from graphiti_core.edges import EntityEdge
        from graphiti_core.errors import GroupsEdgesNotFoundError

        try:
            edges = await EntityEdge.get_by_group_ids(self._driver, [self.group_id])
        except GroupsEdgesNotFoundError:
            return
        for edge in edges:
            for at in (edge.created_at, edge.expired_at):
                if at is not None:
                    self._clock.advance(_utc(at))
            validated = (edge.attributes or {}).get("validated_at")
            if validated:
                self._clock.advance(datetime.fromisoformat(str(validated)))

    # --- the Memory protocol -------------------------------------------------------------

    def reset(self) -> None:
        from graphiti_core.utils.maintenance.graph_data_operations import clear_data

        self._call(clear_data(self._driver, group_ids=[self.group_id]), "reset")
        self._clock.reset()
        self._touched.clear()
        self._nodes.clear()

    def apply(self, event: ChangeEvent) -> None:
        now = self._clock.advance(event.timestamp)
        self._call(self._apply(event, now), f"apply of event {event.id!r}")

    def answer(self, probe: Probe, at: datetime) -> Answer:
        edges = self._call(self._search(probe, at), f"search for probe {probe.id!r}")
        facts = [_retrieved(edge, self._fingerprint) for edge in edges]
        return Answer(probe.id, tuple(facts))

    def retrieval_fingerprint(self) -> RetrievalFingerprint:
        return self._fingerprint

    def changed_keys(self, at: datetime) -> set[FactKey]:
        """Answers change only when healthd writes: every edge's ``valid_at`` and
        ``invalid_at`` are event times, never after the probe time ``at``."""
        changed, self._touched = self._touched, set()
        return changed

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._driver.client.close()
        self._driver.db.close()  # releases Kuzu's lock on its database file
        self._runner.close()
        if self._scratch is not None:
            self._scratch.cleanup()

    # --- writes --------------------------------------------------------------------------

    async def _apply(self, event: ChangeEvent, now: datetime) -> None:
        fact = event.fact
        if event.type in ("added", "revised"):
            on_key = await self._live_edges(fact.subject, fact.predicate)
            same = [e for e in on_key if e.target_node_uuid == self._id("node", fact.value)]
            if same and event.type == "added":  # Graphiti merges a duplicate fact into its edge
                await self._validate(same, now)
                return
            # What the new edge contradicts: the value it replaces, and on a single-valued key
            # every other value the key holds (Graphiti's LLM would judge these contradicted).
            candidates = [] if event.multi_valued else on_key
            if event.previous is not None:
                previous = await self._live_edges(event.previous.subject, event.previous.predicate)
                target = self._id("node", event.previous.value)
                seen = {e.uuid for e in candidates}
                candidates = candidates + [
                    e for e in previous if e.target_node_uuid == target and e.uuid not in seen
                ]
                self._touched.add(event.previous.key)
            await self._add_edge(event, now, candidates)
        elif event.type == "invalidated":
            for edge in await self._live_edges(fact.subject, fact.predicate, fact.value):
                edge.invalid_at = event.timestamp
                edge.expired_at = now
                await edge.save(self._driver)
            self._touched.add(fact.key)
        elif event.type == "revalidated":
            await self._validate(
                await self._live_edges(fact.subject, fact.predicate, fact.value), now
            )
            self._touched.add(fact.key)

    async def _validate(self, edges: list[Any], now: datetime) -> None:
        for edge in edges:
            edge.attributes = {**edge.attributes, "validated_at": now.isoformat()}
            await edge.save(self._driver)

    async def _add_edge(self, event: ChangeEvent, now: datetime, candidates: list[Any]) -> None:
        from graphiti_core.edges import EntityEdge
        from graphiti_core.utils.maintenance.edge_operations import resolve_edge_contradictions

        fact = event.fact
        source = await self._node(fact.subject, now)
        target = await self._node(fact.value, now)
        text = memory_text(fact)
        edge = EntityEdge(
            uuid=self._id("edge", event.id, fact.subject, fact.predicate, fact.value),
            source_node_uuid=source,
            target_node_uuid=target,
            name=fact.predicate,
            fact=text,
            fact_embedding=await self._graphiti.embedder.create(text),
            group_id=self.group_id,
            episodes=[],
            created_at=now,
            valid_at=event.timestamp,
            attributes={
                "healthd_event": event.id,
                "subject": fact.subject,
                "predicate": fact.predicate,
                "value": fact.value,
                "domain": fact.domain,
                "validated_at": now.isoformat(),
                METADATA_KEY: self._fingerprint.id,
            },
        )
        # Graphiti's temporal invalidation (edge_operations._apply_temporal_invalidation): a
        # candidate that starts later than the new edge ends it at once (a late, backdated
        # fact); otherwise the new edge ends the candidates it contradicts. Graphiti stamps
        # expired_at with its wall clock; healthd with the replay's.
        for candidate in sorted(candidates, key=lambda c: _utc(c.valid_at)):
            if _utc(candidate.valid_at) > event.timestamp:
                edge.invalid_at = candidate.valid_at
                edge.expired_at = now
                break
        unexpired = {c.uuid for c in candidates if c.expired_at is None}
        for old in resolve_edge_contradictions(edge, candidates):
            if old.uuid in unexpired:
                old.expired_at = now
            await old.save(self._driver)
        await edge.save(self._driver)
        self._touched.add(fact.key)

    async def _node(self, name: str, now: datetime) -> str:
        from graphiti_core.nodes import EntityNode

        node_id = self._id("node", name)
        if node_id not in self._nodes:
            node = EntityNode(
                uuid=node_id,
                name=name,
                group_id=self.group_id,
                labels=["Entity"],
                created_at=now,
                name_embedding=await self._graphiti.embedder.create(name),
            )
            await node.save(self._driver)
            self._nodes.add(node_id)
        return node_id

    async def _live_edges(
        self, subject: str, predicate: str, value: str | None = None
    ) -> list[Any]:
        """The key's edges (or one value's) in the shadow group not yet expired, oldest
        first, ready to be saved again."""
        from graphiti_core.edges import EntityEdge

        edges = await EntityEdge.get_by_node_uuid(self._driver, self._id("node", subject))
        target = self._id("node", value) if value is not None else None
        live = [
            e
            for e in edges
            if e.group_id == self.group_id
            and e.name == predicate
            and e.expired_at is None
            and target in (None, e.target_node_uuid)
        ]
        for edge in live:  # loaded without it; saving without it would erase it
            await edge.load_fact_embedding(self._driver)
        return sorted(live, key=lambda e: (_utc(e.created_at), e.uuid))

    # --- reads ---------------------------------------------------------------------------

    async def _search(self, probe: Probe, at: datetime) -> list[Any]:
        from graphiti_core.search.search_config_recipes import EDGE_HYBRID_SEARCH_RRF
        from graphiti_core.search.search_filters import (
            ComparisonOperator,
            DateFilter,
            SearchFilters,
        )

        filters = SearchFilters(
            edge_types=[probe.predicate],
            edge_source_node_uuids=[self._id("node", probe.subject)],
        )
        if self.search == "valid":
            filters.valid_at = [
                [DateFilter(date=at, comparison_operator=ComparisonOperator.less_than_equal)]
            ]
            filters.invalid_at = [
                [DateFilter(comparison_operator=ComparisonOperator.is_null)],
                [DateFilter(date=at, comparison_operator=ComparisonOperator.greater_than)],
            ]
        # The configuration Graphiti's own ``search`` uses, through ``search_`` for the scores.
        config = EDGE_HYBRID_SEARCH_RRF.model_copy(update={"limit": self.top_k})
        results = await self._graphiti.search_(
            probe.question, config=config, group_ids=[self.group_id], search_filter=filters
        )
        scored = zip(results.edges, results.edge_reranker_scores, strict=True)
        # Equal scores are ordered newest first, then by id, never by the engine's whim.
        ranked = sorted(
            scored, key=lambda r: (-round(r[1], 6), -_utc(r[0].created_at).timestamp(), r[0].uuid)
        )
        return [edge for edge, _ in ranked]

    # --- plumbing ------------------------------------------------------------------------

    async def _ensure_fulltext_indices(self) -> None:
        rows, _, _ = await self._driver.execute_query("CALL SHOW_INDEXES() RETURN *")
        names = {row.get("index_name") for row in rows if isinstance(row, dict)}
        if "edge_name_and_fact" not in names:
            await self._driver.graph_ops.build_indices_and_constraints(self._driver)

    def _id(self, *parts: str) -> str:
        return str(uuid.uuid5(_IDS, "\x1f".join((self.group_id, *parts))))

    def _run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        if self._closed:
            raise MemoryAdapterError("graphiti memory used after close")
        return self._runner.run(coroutine)

    def _call(self, coroutine: Coroutine[Any, Any, _T], what: str) -> _T:
        try:
            return self._run(coroutine)
        except MemoryAdapterError:
            raise
        except Exception as exc:
            raise MemoryAdapterError(f"graphiti {what}: {first_line(exc)}") from exc


def _retrieved(edge: Any, fingerprint: RetrievalFingerprint) -> RetrievedFact:
    attributes: Mapping[str, Any] = edge.attributes or {}
    domain = attributes.get("domain")
    if domain not in DOMAINS:
        raise MemoryAdapterError(f"graphiti edge {edge.uuid!r} carries no healthd fact")
    typed_domain: Domain = domain
    return RetrievedFact(
        str(attributes["subject"]),
        str(attributes["predicate"]),
        str(attributes["value"]),
        typed_domain,
        f"graphiti:{attributes['healthd_event']}",
        _utc(edge.created_at),
        datetime.fromisoformat(str(attributes["validated_at"])),
        flags=(
            frozenset({RETRIEVAL_CHANGED})
            if changed_since(attributes.get(METADATA_KEY), fingerprint)
            else frozenset()
        ),
    )


def _utc(at: datetime) -> datetime:
    """Kuzu gives back its timestamps without a zone; they were written in UTC."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


@register_memory("graphiti")
def graphiti_memory(options: Mapping[str, Any]) -> GraphitiMemory:
    reject_unknown(options, _SWITCHES, "graphiti")
    shadow = switch(options, "shadow", True) if "shadow" in options else None
    return GraphitiMemory(
        search=str(options.get("search", "default")),
        path=str(options.get("path", IN_MEMORY)),
        group_id=str(options.get("group_id", DEFAULT_GROUP)),
        shadow=shadow,
        top_k=integer(options, "top_k", 5),
        embedder=embedder_from_options(options),
    )
