"""The `graphiti` memory: Graphiti's temporal knowledge graph, embedded (Kuzu) or the team's.

Two ways in, the switch ``ingest``:

- ``episodes`` (Graphiti as a team runs it): each event is an episode, one sentence saying
  what changed (:mod:`healthd.memory.graphiti_episodes`), given to ``add_episode`` with
  ``reference_time`` = the event's time, under the team's LLM client, embedder and
  cross-encoder (the ``[targets.NAME.graphiti]`` table, :mod:`healthd.memory.graphiti_setup`).
  Graphiti's own extraction, deduplication and contradiction detection decide which edges
  exist and which end; what is measured is the text of the edges its search serves, read
  by the reader. An edge's write time is the time of the episode that first stated it, its
  validation time that of the newest episode Graphiti merged into it.
- ``edges`` (the default, an UPPER BOUND: healthd decides, as a perfect LLM would): facts are
  written as Graphiti's own entity nodes and entity edges, directly: the subject and the
  value are entity nodes, the fact is an edge named by the predicate, valid from the
  event's time. A revision invalidates the old edge with Graphiti's own
  ``resolve_edge_contradictions`` (``invalid_at`` = the new edge's ``valid_at``,
  ``expired_at`` = when the graph learned it, here the replay clock); an invalidation sets
  both on the edge; a revalidation stamps the edge's ``validated_at`` attribute. The LLM and
  cross-encoder clients refuse every call. Each edge's attributes carry the retrieval
  fingerprint it was written under.

Nothing cascades along ``depends_on``: Graphiti has no dependencies between edges. The
embedder is a local one unless the table names the team's (all-MiniLM-L6-v2 by default,
the hashing embedder with ``embedder=hashing``).

Probes run Graphiti's hybrid edge search (BM25 + cosine, RRF); in ``edges`` mode filtered to
the probe's predicate and subject node, in ``episodes`` mode over the group, with the
question alone, as the team's agent asks:
- ``search=default``: as Graphiti's ``search`` does by default, with no time filter, so
  invalidated edges are served beside current ones.
- ``search=valid``: filtered to edges valid at the probe time (``valid_at <= t`` and
  ``invalid_at`` unset or after ``t``).

The shadow scope is a ``group_id`` healthd owns; reset deletes only that group. Kuzu runs
with a bounded buffer pool (256 MiB unless the table's ``driver.buffer_pool_size`` says).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import re
import uuid
import warnings
from collections.abc import Coroutine, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from healthd.embedding import Embedder, HashingEmbedder
from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError
from healthd.llm_usage import LLMUsage
from healthd.memory import register_memory
from healthd.memory._embedder_switch import embedder_from_options
from healthd.memory._llm_count import budgeted_write, count_parts
from healthd.memory._offline import (
    IN_MEMORY,
    ReplayClock,
    first_line,
    memory_text,
    package_versions,
    require_extra,
    shadow_directory,
)
from healthd.memory._options import integer, reject_unknown, sweeps_option, switch
from healthd.memory.fingerprint import METADATA_KEY, RetrievalFingerprint, changed_since
from healthd.memory.graphiti_episodes import SOURCE_DESCRIPTION, episode_name, episode_text
from healthd.memory.graphiti_setup import (
    GraphitiTable,
    cross_encoder,
    kuzu_driver,
    llm_client,
    local_embedder,
    parse_table,
    remote_driver,
    remote_embedder,
)
from healthd.model import (
    DOMAINS,
    RETRIEVAL_CHANGED,
    Answer,
    ChangeEvent,
    Domain,
    FactKey,
    Probe,
    RetrievedFact,
    ServedItem,
    is_sweep,
)

DEFAULT_GROUP = "healthd-shadow"
SEARCHES = ("default", "valid")
#: ``edges``: healthd writes edges and decides what ends (an upper bound); ``episodes``:
#: Graphiti's own pipeline decides, with the team's LLM.
INGESTS = ("edges", "episodes")
_SWITCHES = {
    "search",
    "ingest",
    "path",
    "group_id",
    "shadow",
    "top_k",
    "embedder",
    "dimensions",
    "graphiti",
    "sweeps",
}
# A Kuzu connection keeps memory outside the buffer pool for every query it has run (measured:
# about a third of a MiB per replayed event, 3 GiB after 5,000); a fresh one every so many
# calls lets it go (benchmarks/bench_graphiti.py).
KUZU_CONNECTION_CALLS = 100
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


def _local_embedder(embedder: Embedder) -> Any:
    """A local embedder as Graphiti's."""
    from graphiti_core.embedder.client import EmbedderClient

    class LocalEmbedder(EmbedderClient):
        async def create(self, input_data: Any) -> list[float]:
            text = input_data if isinstance(input_data, str) else " ".join(map(str, input_data))
            return embedder.embed([text])[0]

        async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
            return embedder.embed(input_data_list)

    return LocalEmbedder()


def _refusing_clients() -> tuple[Any, Any]:
    """An LLM client and a cross-encoder that refuse every call."""
    from graphiti_core.cross_encoder.client import CrossEncoderClient
    from graphiti_core.llm_client.client import LLMClient

    class NoLLM(LLMClient):
        async def _generate_response(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            raise MemoryAdapterError("graphiti asked for an LLM; healthd runs it without one")

    class NoCrossEncoder(CrossEncoderClient):
        async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
            raise MemoryAdapterError("graphiti asked for a cross-encoder; healthd has none")

    return NoLLM(None), NoCrossEncoder()


class GraphitiMemory:
    kind = "graphiti"

    def __init__(
        self,
        *,
        search: str = "default",
        ingest: str = "edges",
        path: str = IN_MEMORY,
        group_id: str = DEFAULT_GROUP,
        shadow: bool | None = None,
        top_k: int = 5,
        embedder: Embedder | None = None,
        table: GraphitiTable | None = None,
        sweeps: str | None = None,
    ) -> None:
        if search not in SEARCHES:
            raise TargetError(f"switch search={search!r}: expected one of {', '.join(SEARCHES)}")
        if ingest not in INGESTS:
            raise TargetError(f"switch ingest={ingest!r}: expected one of {', '.join(INGESTS)}")
        table = table or GraphitiTable()
        remote = table.driver.provider != "kuzu"
        _check_group(group_id, table.driver.provider)
        if not (shadow if shadow is not None else path == IN_MEMORY and not remote):
            where = table.driver.provider if remote else repr(path)
            raise ShadowViolation(
                f"graphiti group {group_id!r} in {where} is not declared shadow "
                "(set shadow=on for a group healthd owns)"
            )
        if ingest == "episodes" and table.llm is None:
            raise TargetError(
                "ingest=episodes needs the team's LLM: a [targets.NAME.graphiti.llm] table "
                "(client, model, base_url, api_key_env)"
            )
        if embedder is not None and table.embedder is not None:
            raise TargetError("give the embedder either as a switch or in graphiti.embedder")
        _import_graphiti()
        from graphiti_core import Graphiti

        self.search = search
        self.ingest = ingest
        self.upper_bound = (
            "healthd writes the edges and decides which end (a perfect LLM), not Graphiti's "
            "extraction"
            if ingest == "edges"
            else None
        )
        self.group_id = group_id
        self.top_k = top_k
        self._provider = table.driver.provider
        # Built first: a missing secret or a bad table fails before anything is opened.
        if ingest == "episodes":
            assert table.llm is not None
            llm = llm_client(table.llm)
            encoder = cross_encoder(table.cross_encoder) or _refusing_clients()[1]
        else:
            llm, encoder = _refusing_clients()
        if table.embedder is not None and table.embedder.provider == "openai":
            self.embedder: Embedder | None = None
            embedder_client = remote_embedder(table.embedder)
            model = f"openai-compatible:{table.embedder.model or 'text-embedding-3-small'}"
            dimensions = table.embedder.dimensions or embedder_client.config.embedding_dim
            libraries = package_versions("graphiti-core", "openai")
        else:
            if table.embedder is not None:
                embedder = local_embedder(table.embedder)
            self.embedder = embedder or HashingEmbedder()
            embedder_client = _local_embedder(self.embedder)
            model, dimensions = self.embedder.model, self.embedder.dimensions
            libraries = {**package_versions("graphiti-core"), **self.embedder.libraries}
        if not remote:
            libraries["kuzu"] = package_versions("kuzu")["kuzu"]
        if ingest == "episodes":
            assert table.llm is not None  # the model that decides what is stored, too
            libraries["llm"] = f"{table.llm.client}:{table.llm.model or 'default'}"
        self._fingerprint = RetrievalFingerprint.of(model, dimensions, libraries)
        # Graphiti's own OpenAI clients, their requests counted as they are sent
        self._usage = LLMUsage()
        # an episode is an LLM's work: a sweep's facts about one subject are one episode;
        # edges are healthd's own writes, one per fact as any change
        self.sweeps = sweeps or ("subject" if ingest == "episodes" else "each")
        self._usage.sweeps = self.sweeps
        count_parts(
            {
                "graphiti.llm": llm,
                "graphiti.cross_encoder": encoder,
                "graphiti.embedder": embedder_client,
            },
            self._usage,
        )
        self._runner = asyncio.Runner()
        self._closed = False
        self._calls = 0
        self._scratch = None
        database = ""
        if not remote:
            # Even an ephemeral shadow is a database on disk (in a temporary directory): an
            # in-memory Kuzu database must fit its buffer pool, one on disk spills.
            directory, self._scratch = shadow_directory(path, "graphiti")
            database = database_path(directory)
        try:
            with warnings.catch_warnings():  # Kuzu's deprecation notice is Graphiti's to give
                warnings.simplefilter("ignore", DeprecationWarning)
                if remote:
                    self._driver = remote_driver(table.driver, group_id, ingest == "episodes")
                else:
                    self._driver = kuzu_driver(database, table.driver)
        except (RuntimeError, TargetError) as exc:
            self._runner.close()
            if self._scratch is not None:
                self._scratch.cleanup()
            raise TargetError(
                f"graphiti store {path!r} cannot be opened: {first_line(exc)}"
            ) from None
        self._graphiti = Graphiti(
            graph_driver=self._driver,
            embedder=embedder_client,
            llm_client=llm,
            cross_encoder=encoder,
        )
        self._clock = ReplayClock()
        self._touched: set[FactKey] = set()
        self._nodes: set[str] = set()
        self._episodes: dict[str, tuple[str, datetime]] = {}  # uuid: (event id, event time)
        try:
            self._run(self._ensure_indices())
            if path != IN_MEMORY or remote:
                self._run(self._resume_clock())
        except Exception as exc:
            self.close()  # let go of the database before saying why
            raise TargetError(
                f"graphiti store {path!r} cannot be opened: {first_line(exc)}"
            ) from None

    async def _resume_clock(self) -> None:
        """A reopened shadow goes on from the newest replay time its edges carry (and knows
        the events its episodes came from)."""
        from graphiti_core.edges import EntityEdge
        from graphiti_core.errors import GroupsEdgesNotFoundError
        from graphiti_core.nodes import EpisodicNode

        for episode in await EpisodicNode.get_by_group_ids(self._driver, [self.group_id]):
            self._episodes[episode.uuid] = (episode.name, _utc(episode.valid_at))

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
        self._episodes.clear()

    def apply(self, event: ChangeEvent) -> None:
        if self.sweeps == "off" and is_sweep(event):
            return  # Graphiti is not told its facts still hold
        self._write([event])

    def apply_sweep(self, events: list[ChangeEvent]) -> None:
        """A revalidation sweep's events about one subject: one episode (edges: each)."""
        if self.ingest == "episodes":
            self._write(events)
        else:
            for event in events:
                self._write([event])

    def _write(self, events: list[ChangeEvent]) -> None:
        event = events[0]
        now = self._clock.advance(events[-1].timestamp)
        if self.ingest == "episodes":
            write, what = self._add_episode(events), f"add_episode of event {event.id!r}"
        else:
            write, what = self._apply(event, now), f"apply of event {event.id!r}"
        budgeted_write(self._usage, lambda: self._call(write, what))

    def answer(self, probe: Probe, at: datetime) -> Answer:
        if self.ingest == "episodes":
            scored = self._call(self._search_group(probe, at), f"search for probe {probe.id!r}")
            items = [self._served(edge, score) for edge, score in scored]
            items.sort(key=lambda r: (-r[0], -_when(r[1].written_at), r[1].record_id))
            return Answer(probe.id, (), tuple(item for _, item in items))
        edges = self._call(self._search(probe, at), f"search for probe {probe.id!r}")
        facts = [_retrieved(edge, self._fingerprint) for edge in edges]
        return Answer(probe.id, tuple(facts))

    #: its writes' calls can be refused by an LLM budget (healthd.llm_budget)
    llm_budgets = True

    def llm_usage(self) -> LLMUsage:
        """The calls Graphiti's own clients made to the team's LLM, cross-encoder and
        embedding endpoints."""
        return self._usage

    def retrieval_fingerprint(self) -> RetrievalFingerprint:
        return self._fingerprint

    def changed_keys(self, at: datetime) -> set[FactKey] | None:
        """Answers change only when healthd writes: every edge's ``valid_at`` and
        ``invalid_at`` are event times, never after the probe time ``at``. In ``episodes``
        mode Graphiti decides which edges an episode touches: healthd cannot tell."""
        if self.ingest == "episodes":
            return None
        changed, self._touched = self._touched, set()
        return changed

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._provider == "kuzu":
            self._driver.client.close()
            self._driver.db.close()  # releases Kuzu's lock on its database file
        else:
            try:
                self._runner.run(self._driver.close())
            except Exception:  # already gone: nothing more to release
                pass
        self._runner.close()
        if self._scratch is not None:
            self._scratch.cleanup()

    # --- episodes ------------------------------------------------------------------------

    async def _add_episode(self, events: list[ChangeEvent]) -> None:
        from graphiti_core.nodes import EpisodeType

        event = events[0]
        result = await self._graphiti.add_episode(
            name=episode_name(event),
            episode_body="\n".join(episode_text(e) for e in events),
            source_description=SOURCE_DESCRIPTION,
            reference_time=event.timestamp,
            source=EpisodeType.text,
            group_id=self.group_id,
        )
        self._episodes[result.episode.uuid] = (event.id, event.timestamp)

    async def _search_group(self, probe: Probe, at: datetime) -> list[tuple[Any, float]]:
        """Graphiti's search over the shadow group with the probe's question alone."""
        from graphiti_core.search.search_config_recipes import EDGE_HYBRID_SEARCH_RRF

        filters = self._time_filter(at)
        config = EDGE_HYBRID_SEARCH_RRF.model_copy(update={"limit": self.top_k})
        results = await self._graphiti.search_(
            probe.question, config=config, group_ids=[self.group_id], search_filter=filters
        )
        missing = {u for e in results.edges for u in e.episodes} - set(self._episodes)
        if missing:
            from graphiti_core.nodes import EpisodicNode

            for episode in await EpisodicNode.get_by_uuids(self._driver, sorted(missing)):
                self._episodes[episode.uuid] = (episode.name, _utc(episode.valid_at))
        return list(zip(results.edges, results.edge_reranker_scores, strict=True))

    def _served(self, edge: Any, score: float) -> tuple[float, ServedItem]:
        """An edge as the agent reads it: its fact. Written when the first episode that
        stated it happened; validated when the newest episode merged into it did."""
        told = sorted(self._episodes[u] for u in edge.episodes if u in self._episodes)
        times = sorted(at for _, at in told)
        first = min(told, key=lambda t: (t[1], t[0]))[0] if told else edge.uuid
        digest = hashlib.sha256(f"{edge.name}\x1f{edge.fact}".encode()).hexdigest()[:8]
        item = ServedItem(
            str(edge.fact),
            f"graphiti:{first}:{digest}",
            times[0] if times else None,
            times[-1] if times else None,
        )
        return round(score, 6), item

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

        filters = self._time_filter(at)
        filters.edge_types = [probe.predicate]
        filters.edge_source_node_uuids = [self._id("node", probe.subject)]
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

    def _time_filter(self, at: datetime) -> Any:
        """No filter (``search=default``), or edges valid at ``at`` (``search=valid``)."""
        from graphiti_core.search.search_filters import (
            ComparisonOperator,
            DateFilter,
            SearchFilters,
        )

        filters = SearchFilters()
        if self.search == "valid":
            filters.valid_at = [
                [DateFilter(date=at, comparison_operator=ComparisonOperator.less_than_equal)]
            ]
            filters.invalid_at = [
                [DateFilter(comparison_operator=ComparisonOperator.is_null)],
                [DateFilter(date=at, comparison_operator=ComparisonOperator.greater_than)],
            ]
        return filters

    # --- plumbing ------------------------------------------------------------------------

    async def _ensure_indices(self) -> None:
        if self._provider != "kuzu":
            await self._graphiti.build_indices_and_constraints()
            return
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
        self._calls += 1
        if self._provider == "kuzu" and self._calls % KUZU_CONNECTION_CALLS == 0:
            import kuzu

            self._driver.client.close()
            self._driver.client = kuzu.AsyncConnection(self._driver.db, max_concurrent_queries=1)
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


_GROUP = re.compile(r"[a-zA-Z0-9_-]+")


def _check_group(group_id: str, provider: str) -> None:
    """The shadow group is one Graphiti keeps apart: only the characters its
    ``validate_group_id`` takes, and not the provider's default group (``""``; ``_`` on
    FalkorDB, ``get_default_group_id``), where it keeps every episode written without a
    ``group_id``: a reset of that group would delete the team's."""
    default = "_" if provider == "falkordb" else ""
    if group_id == default or not _GROUP.fullmatch(group_id):
        raise TargetError(
            f"graphiti group_id {group_id!r}: the shadow is a group of its own, ASCII letters, "
            f"digits, '-' and '_' (Graphiti's group ids), not the default group "
            f"{default!r} where Graphiti keeps what is written without one"
        )


def _when(at: datetime | None) -> float:
    return at.timestamp() if at is not None else 0.0


def _utc(at: datetime) -> datetime:
    """Kuzu gives back its timestamps without a zone; they were written in UTC."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


@register_memory("graphiti")
def graphiti_memory(options: Mapping[str, Any]) -> GraphitiMemory:
    reject_unknown(options, _SWITCHES, "graphiti")
    shadow = switch(options, "shadow", True) if "shadow" in options else None
    table = parse_table(options.get("graphiti"))
    given = "embedder" in options or "dimensions" in options
    return GraphitiMemory(
        search=str(options.get("search", "default")),
        ingest=str(options.get("ingest", "edges")),
        path=str(options.get("path", IN_MEMORY)),
        group_id=str(options.get("group_id", DEFAULT_GROUP)),
        shadow=shadow,
        top_k=integer(options, "top_k", 5),
        embedder=embedder_from_options(options) if given or table.embedder is None else None,
        table=table,
        sweeps=sweeps_option(options) if "sweeps" in options else None,
    )
