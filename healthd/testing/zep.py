"""A local imitation of the Zep v4 API (api.getzep.com/api/v4), for tests and demos.

A small HTTP server on 127.0.0.1 speaking the endpoints ``zep-cloud`` 4.x (``Zep(api_key=...,
base_url=...)``) calls and healthd's ``zep`` target uses, with the paths, bodies, answers and
errors of Zep's v4 SDK reference (help.getzep.com/sdk-reference, read 2026-12, and the Fern
client ``zep_cloud`` generates from it):

* ``POST /users``: ``user_id`` (an external identifier, unique within the project, at most
  500 characters: 409 for a second user with it), ``metadata``, names, ``time_zone``; 201
  with the user, its ``uuid`` and its graph's ``graph_uuid``;
* ``POST /users/lookup``: exactly one of ``user_id``, ``graph_id``, ``thread_id`` ("Mutually
  exclusive"), 404 for none found; ``GET /users/{uuid}``; ``DELETE /users/{uuid}``: 202, the
  user and its graph gone;
* ``POST /graphs/{graph_uuid}/episodes``: ``data`` required, ``type`` ``text``, ``json`` or
  ``message`` (default ``text``), ``reference_time``, ``source_description``, ``metadata``
  ("Max 10 keys. Values must be strings, numbers, booleans, or arrays of scalars"),
  ``document_id`` (at most 100 characters); answered 202 at once with the episode
  (``processed: false``, "readable immediately") and the ``task`` that tracks its graph
  extraction: the graph is built later, in the background, one episode at a time per graph;
* ``GET /graphs/{graph_uuid}/episodes/{episode_uuid}`` and ``GET /tasks/{task_uuid}``
  (``pending``, ``processing``, ``succeeded``, ``failed`` with its ``error``);
* ``POST /graphs/{graph_uuid}/search/edges`` and ``/search/nodes``: ``query`` required,
  ``page_size`` a query parameter, 1 to 50; ``reranker`` one of ``rrf`` (default), ``mmr``,
  ``node_distance``, ``episode_mentions``, ``cross_encoder``; ``mmr_lambda`` required with
  ``mmr``, ``center_node_uuid`` with ``node_distance``; ``filter_low_quality_results`` only
  with ``cross_encoder`` ("Invalid combinations return a 400 error"); answered
  ``{"items", "next_cursor", "total_size"}``.

A graph addressed by a user's uuid is that user's graph ("For a user graph, you can also use
the UUID of the user"). Errors are ``{"error": {"code", "message"}}`` (the reference's
``ErrorBody``); a missing or unknown ``Authorization: Api-Key`` is 401; a graph, user,
episode or task of another project is 404, as one that does not exist. Strict: a body
field the reference does not list is refused (400), as is a wrong type.

The graph engine is Graphiti itself (``graphiti-core``, Zep's open-source engine) on its
embedded Kuzu driver, one group per graph, with the stand-in LLM
(``healthd/testing/standin_llm``, not a model) as its LLM and all-MiniLM-L6-v2 as its
embedder: which edges exist and which Graphiti invalidates (``invalid_at``, ``expired_at``)
is Graphiti's own pipeline with the stand-in's answers, not the hosted service's models.
Not modelled (refused with a 400 that says so, never ignored): the ``cross_encoder``
reranker (no cross-encoder runs here), search ``filters``, ``bfs_origin_node_uuids``,
documents, ontologies and content policies.

    python -m healthd.testing.zep -- healthd evaluate --target zep:shadow=on,base_url_env=ZEP_BASE_URL
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import Future
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

from healthd.testing._imitation import Imitation, add_common_arguments, serve
from healthd.testing.standin_style import DEFAULT_SEED, DEFAULT_STYLE

MAX_BODY = 8 * 1024 * 1024
MAX_SEARCH_PAGE = 50  # search-edges and search-nodes: page_size "1-50" (lists take 1-100)
PREFIX = "/api/v4"
DEFAULT_KEY = "z-healthd-imitation-key"
DEFAULT_PROJECT = "proj_shadow"
EPISODE_TYPES = ("text", "json", "message")
RERANKERS = ("rrf", "mmr", "node_distance", "episode_mentions", "cross_encoder")
USER_FIELDS = frozenset({"content_policy", "disable_default_ontology", "email", "first_name",
                         "last_name", "metadata", "time_zone", "user_id"})  # fmt: skip
EPISODE_FIELDS = frozenset({"data", "document_id", "metadata", "reference_time",
                            "source_description", "strict_ontology", "type"})  # fmt: skip
SEARCH_FIELDS = frozenset({"query", "bfs_origin_node_uuids", "center_node_uuid",
                           "filter_low_quality_results", "filters", "mmr_lambda",
                           "reranker"})  # fmt: skip
LOOKUP_FIELDS = frozenset({"user_id", "graph_id", "thread_id"})
_T = TypeVar("_T")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


def bad_request(message: str) -> ApiError:
    return ApiError(400, "bad_request", message)


def not_found(what: str) -> ApiError:
    return ApiError(404, "not_found", f"{what} not found")


@dataclasses.dataclass
class User:
    uuid: str
    project: str
    user_id: str | None
    fields: dict[str, Any]
    created_at: str

    def as_json(self) -> dict[str, Any]:
        return {**self.fields, "uuid": self.uuid, "graph_uuid": self.uuid,
                "user_id": self.user_id, "created_at": self.created_at}  # fmt: skip


@dataclasses.dataclass
class Episode:
    uuid: str
    graph_uuid: str
    content: str
    source: str
    reference_time: str
    source_description: str | None
    metadata: dict[str, Any] | None
    created_at: str
    task_uuid: str
    status: str = "pending"
    error: str | None = None
    started_at: str | None = None
    completed_at: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"uuid": self.uuid, "graph_uuid": self.graph_uuid, "user_uuid": self.graph_uuid,
                "content": self.content, "source": self.source,
                "reference_time": self.reference_time,
                "source_description": self.source_description, "metadata": self.metadata,
                "created_at": self.created_at,
                "processed": self.status in ("succeeded", "failed")}  # fmt: skip

    def task(self) -> dict[str, Any]:
        return {"uuid": self.task_uuid, "type": "add_episode", "status": self.status,
                "created_at": self.created_at, "started_at": self.started_at,
                "completed_at": self.completed_at, "updated_at": self.completed_at
                or self.started_at or self.created_at,
                "error": {"code": "extraction_failed", "message": self.error}
                if self.error else None}  # fmt: skip


class Engine:
    """Graphiti on an embedded Kuzu database, run on a thread of its own (one event loop,
    one call at a time, as Kuzu's connection wants)."""

    def __init__(self, directory: str, llm_base_url: str) -> None:
        from healthd.memory._embedder_switch import embedder_from_options
        from healthd.memory.graphiti import _import_graphiti, _local_embedder, _refusing_clients
        from healthd.memory.graphiti_setup import DriverTable, LLMTable, kuzu_driver, llm_client

        _import_graphiti()
        from graphiti_core import Graphiti

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.driver = kuzu_driver(os.path.join(directory, "graph.kuzu"), DriverTable())
        self.graphiti = Graphiti(
            graph_driver=self.driver,
            embedder=_local_embedder(embedder_from_options({"embedder": "minilm"})),
            llm_client=llm_client(LLMTable(model="standin", base_url=f"{llm_base_url}/v1")),
            cross_encoder=_refusing_clients()[1],
        )
        self.run(self.driver.graph_ops.build_indices_and_constraints(self.driver))

    def run(self, coroutine: Coroutine[Any, Any, _T], timeout: float = 300) -> _T:
        future: Future[_T] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout)

    def close(self) -> None:
        self.driver.client.close()
        self.driver.db.close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


class Zep(Imitation):
    """The server. ``requests`` keeps (method, path, body) of each request, for tests;
    ``processing_seconds`` is how long an episode stays ``pending`` before it is processed."""

    def __init__(
        self,
        keys: Mapping[str, str] | None = None,
        llm_base_url: str | None = None,
        processing_seconds: float = 0.1,
        host: str = "127.0.0.1",
        port: int = 0,
        style: str = DEFAULT_STYLE,
        seed: int = DEFAULT_SEED,
    ) -> None:
        super().__init__(llm_base_url, host, port, style, seed, "healthd-zep-")
        self.keys = dict(keys or {DEFAULT_KEY: DEFAULT_PROJECT})  # API key: project
        self.processing_seconds = processing_seconds
        self.users: dict[str, User] = {}
        self.episodes: dict[str, Episode] = {}
        self._graphiti_episodes: dict[str, str] = {}  # Graphiti's episode uuid: Zep's
        self.engine: Engine | None = None

    @property
    def base_url(self) -> str:
        """What ``Zep(base_url=...)`` is given: the API's root, version included."""
        return f"{self.root_url}{PREFIX}"

    def _started(self) -> None:
        assert self._llm_url is not None
        self.engine = Engine(self._scratch.name, self._llm_url)

    def _stopped(self) -> None:
        if self.engine is not None:
            self.engine.close()

    def facts(self, graph_uuid: str) -> list[tuple[str, bool]]:
        """Every edge's fact in a graph and whether Graphiti ended it (for tests)."""
        from graphiti_core.edges import EntityEdge
        from graphiti_core.errors import GroupsEdgesNotFoundError

        async def edges() -> list[Any]:
            try:
                return list(await EntityEdge.get_by_group_ids(self._engine().driver, [graph_uuid]))
            except GroupsEdgesNotFoundError:
                return []

        found = self._engine().run(edges())
        return sorted((str(e.fact), e.invalid_at is not None) for e in found)

    def wait_idle(self, timeout: float = 120.0) -> None:
        """Until every episode is processed (for tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if all(e.status in ("succeeded", "failed") for e in self.episodes.values()):
                    return
            time.sleep(0.02)
        raise TimeoutError("episodes still pending")

    def _engine(self) -> Engine:
        assert self.engine is not None, "start() the imitation first"
        return self.engine

    # --- the background processing --------------------------------------------------------

    def _work(self) -> None:
        from graphiti_core.nodes import EpisodeType

        while True:
            episode = self._queue.get()
            if episode is None:
                return
            wait = self.processing_seconds - (time.time() - _epoch(episode.created_at))
            if wait > 0:
                time.sleep(wait)
            with self._lock:
                if episode.graph_uuid not in self.users:  # deleted while queued
                    episode.status, episode.error = "failed", "the graph was deleted"
                    continue
                episode.status, episode.started_at = "processing", _now()
            try:
                result = self._engine().run(
                    self._engine().graphiti.add_episode(
                        name=episode.uuid,
                        episode_body=episode.content,
                        source_description=episode.source_description or "",
                        reference_time=datetime.fromisoformat(episode.reference_time),
                        source=EpisodeType.from_str(episode.source),
                        group_id=episode.graph_uuid,
                    )
                )
            except Exception as exc:
                with self._lock:
                    episode.status, episode.completed_at = "failed", _now()
                    episode.error = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                continue
            with self._lock:
                self._graphiti_episodes[result.episode.uuid] = episode.uuid
                episode.status, episode.completed_at = "succeeded", _now()

    # --- requests -------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        url = urlsplit(handler.path)
        params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            body = self._body(handler, method)
            with self._lock:
                self.requests.append((method, handler.path, body))
            project = self._authorise(handler.headers.get("Authorization"))
            if not url.path.startswith(f"{PREFIX}/"):
                raise not_found("route")
            status, answer = self._route(method, url.path[len(PREFIX) :], params, body, project)
        except ApiError as exc:
            status, answer = exc.status, exc.body()
        except Exception as exc:  # a bug here is a 500, as a server's would be
            status, answer = 500, ApiError(500, "internal", str(exc)).body()
        self._reply(handler, status, answer)

    def _body(self, handler: BaseHTTPRequestHandler, method: str) -> Any:
        length = int(handler.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ApiError(413, "content_too_large", "request body too large")
        raw = handler.rfile.read(length) if length else b""
        if method not in ("POST", "PATCH"):
            return None
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            raise bad_request("the request body is not JSON") from None
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        return body

    def _authorise(self, header: str | None) -> str:
        scheme, _, token = (header or "").partition(" ")
        if scheme != "Api-Key" or not token.strip():
            raise ApiError(401, "unauthorized", "missing API key")
        project = self.keys.get(token.strip())
        if project is None:
            raise ApiError(401, "unauthorized", "invalid API key")
        return project

    def _route(
        self, method: str, path: str, params: dict[str, str], body: Any, project: str
    ) -> tuple[int, Any]:
        parts = path.strip("/").split("/")
        if parts == ["users"] and method == "POST":
            return 201, self._create_user(project, body)
        if parts == ["users", "lookup"] and method == "POST":
            return 200, self._lookup(project, body)
        if len(parts) == 2 and parts[0] == "users":
            user = self._user(project, parts[1])
            if method == "GET":
                return 200, user.as_json()
            if method == "DELETE":
                return 202, self._delete_user(user)
        if len(parts) == 2 and parts[0] == "tasks" and method == "GET":
            with self._lock:
                found = [e for e in self.episodes.values() if e.task_uuid == parts[1]]
                if (
                    not found
                    or found[0].graph_uuid not in self.users
                    or (self.users[found[0].graph_uuid].project != project)
                ):
                    raise not_found("task")
                return 200, found[0].task()
        if len(parts) >= 3 and parts[0] == "graphs":
            graph = self._user(project, parts[1]).uuid
            if parts[2:] == ["episodes"] and method == "POST":
                return 202, self._add_episode(graph, body)
            if len(parts) == 4 and parts[2] == "episodes" and method == "GET":
                with self._lock:
                    episode = self.episodes.get(parts[3])
                    if episode is None or episode.graph_uuid != graph:
                        raise not_found("episode")
                    return 200, episode.as_json()
            if parts[2:] in (["search", "edges"], ["search", "nodes"]) and method == "POST":
                return 200, self._search(graph, parts[3], params, body)
        raise not_found("route")

    def _user(self, project: str, address: str) -> User:
        with self._lock:
            user = self.users.get(address)
        if user is None or user.project != project:
            raise not_found("user")
        return user

    def _create_user(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        _fields(body, USER_FIELDS, "create user")
        user_id = body.get("user_id")
        if user_id is not None:
            if not isinstance(user_id, str) or not user_id.strip():
                raise bad_request("user_id: a non-empty string is required")
            if len(user_id) > 500:
                raise bad_request("user_id: at most 500 characters")
        metadata = body.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise bad_request("metadata: an object is required")
        fields = {k: v for k, v in body.items() if k != "user_id"}
        with self._lock:
            if user_id is not None and any(
                u.project == project and u.user_id == user_id for u in self.users.values()
            ):
                raise ApiError(409, "conflict", f"a user with user_id {user_id!r} exists")
            user = User(str(uuid.uuid4()), project, user_id, fields, _now())
            self.users[user.uuid] = user
        return user.as_json()

    def _lookup(self, project: str, body: dict[str, Any]) -> dict[str, Any]:
        _fields(body, LOOKUP_FIELDS, "lookup")
        given = [k for k in sorted(LOOKUP_FIELDS) if body.get(k) is not None]
        if len(given) != 1:
            raise bad_request("give exactly one of user_id, graph_id, thread_id")
        if given[0] != "user_id":
            raise bad_request(f"{given[0]}: not modelled by this imitation of Zep")
        with self._lock:
            for user in self.users.values():
                if user.project == project and user.user_id == body["user_id"]:
                    return user.as_json()
        raise not_found("user")

    def _delete_user(self, user: User) -> dict[str, Any]:
        from graphiti_core.utils.maintenance.graph_data_operations import clear_data

        with self._lock:
            del self.users[user.uuid]
        self._engine().run(clear_data(self._engine().driver, group_ids=[user.uuid]))
        return {"uuid": user.uuid, "status": "deleted"}

    def _add_episode(self, graph: str, body: dict[str, Any]) -> dict[str, Any]:
        _fields(body, EPISODE_FIELDS, "add episode")
        for name in ("document_id", "strict_ontology"):
            if name in body:
                raise bad_request(f"{name}: not modelled by this imitation of Zep")
        data = body.get("data")
        if not isinstance(data, str) or not data.strip():
            raise bad_request("data: a non-empty string is required")
        kind = body.get("type", "text")
        if kind not in EPISODE_TYPES:
            raise bad_request(f"type: one of {', '.join(EPISODE_TYPES)}")
        metadata = body.get("metadata")
        if metadata is not None:
            _metadata(metadata)
        when = body.get("reference_time")
        if when is None:
            when = _now()
        elif not isinstance(when, str):
            raise bad_request("reference_time: an RFC 3339 time is required")
        try:
            at = datetime.fromisoformat(when.replace("Z", "+00:00"))
        except ValueError:
            raise bad_request(f"reference_time: {when!r} is not an RFC 3339 time") from None
        if at.tzinfo is None:
            raise bad_request(f"reference_time: {when!r} has no time zone")
        description = body.get("source_description")
        if description is not None and not isinstance(description, str):
            raise bad_request("source_description: a string is required")
        episode = Episode(
            str(uuid.uuid4()), graph, data, kind, at.astimezone(UTC).isoformat(),
            description, metadata, _now(), str(uuid.uuid4()),
        )  # fmt: skip
        with self._lock:
            self.episodes[episode.uuid] = episode
        self._queue.put(episode)
        return {"episode": episode.as_json(), "task": episode.task()}

    def _search(
        self, graph: str, scope: str, params: Mapping[str, str], body: dict[str, Any]
    ) -> dict[str, Any]:
        from graphiti_core.search import search_config_recipes as recipes

        _fields(body, SEARCH_FIELDS, f"search {scope}")
        for name in ("filters", "bfs_origin_node_uuids"):
            if body.get(name) is not None:
                raise bad_request(f"{name}: not modelled by this imitation of Zep")
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            raise bad_request("query: a non-empty string is required")
        reranker = body.get("reranker", "rrf")
        if reranker not in RERANKERS:
            raise bad_request(f"reranker: one of {', '.join(RERANKERS)}")
        if reranker == "mmr" and not isinstance(body.get("mmr_lambda"), (int, float)):
            raise bad_request("mmr_lambda: required when reranker is mmr")
        if reranker == "node_distance" and not body.get("center_node_uuid"):
            raise bad_request("center_node_uuid: required when reranker is node_distance")
        if body.get("filter_low_quality_results") and reranker != "cross_encoder":
            raise bad_request("filter_low_quality_results: only with reranker cross_encoder")
        if reranker == "cross_encoder":
            raise bad_request("reranker cross_encoder: not modelled by this imitation of Zep")
        try:
            size = int(params.get("page_size", str(MAX_SEARCH_PAGE)))  # "Defaults to 50"
        except ValueError:
            raise bad_request("page_size: an integer is required") from None
        if not 1 <= size <= MAX_SEARCH_PAGE:
            raise bad_request(f"page_size: between 1 and {MAX_SEARCH_PAGE}")
        name = f"{'EDGE' if scope == 'edges' else 'NODE'}_HYBRID_SEARCH_{reranker.upper()}"
        config = getattr(recipes, name).model_copy(update={"limit": size})
        if reranker == "mmr":
            part = "edge_config" if scope == "edges" else "node_config"
            sub = getattr(config, part).model_copy(update={"mmr_lambda": body["mmr_lambda"]})
            config = config.model_copy(update={part: sub})
        engine = self._engine()
        results = engine.run(
            engine.graphiti.search_(
                query.strip(), config=config, group_ids=[graph],
                center_node_uuid=body.get("center_node_uuid"),
            )
        )  # fmt: skip
        if scope == "edges":
            edges = zip(results.edges, results.edge_reranker_scores, strict=True)
            items = [self._edge(edge, score) for edge, score in edges]
        else:
            nodes = zip(results.nodes, results.node_reranker_scores, strict=True)
            items = [self._node(node, score) for node, score in nodes]
        return {"items": items, "next_cursor": None, "total_size": len(items)}

    def _episode_uuids(self, uuids: Sequence[str]) -> list[str]:
        with self._lock:
            return [self._graphiti_episodes.get(u, u) for u in uuids]

    def _edge(self, edge: Any, score: float) -> dict[str, Any]:
        return {
            "uuid": edge.uuid, "graph_uuid": edge.group_id, "user_uuid": edge.group_id,
            "name": edge.name, "fact": edge.fact, "score": score,
            "source_node_uuid": edge.source_node_uuid, "target_node_uuid": edge.target_node_uuid,
            "episode_uuids": self._episode_uuids(edge.episodes),
            "created_at": _iso(edge.created_at), "valid_at": _iso(edge.valid_at),
            "invalid_at": _iso(edge.invalid_at), "expired_at": _iso(edge.expired_at),
            "attributes": {k: v for k, v in (edge.attributes or {}).items()
                           if isinstance(v, (str, int, float, bool))},
        }  # fmt: skip

    def _node(self, node: Any, score: float) -> dict[str, Any]:
        return {
            "uuid": node.uuid, "graph_uuid": node.group_id, "user_uuid": node.group_id,
            "name": node.name, "summary": node.summary, "labels": list(node.labels or []),
            "score": score, "created_at": _iso(node.created_at), "episode_uuids": [],
            "episode_uuids_truncated": False,
        }  # fmt: skip


def _fields(body: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    for name in sorted(body):
        if name not in allowed:
            raise bad_request(f"{name}: not a field of {where} (unknown field)")


def _metadata(metadata: Any) -> None:
    """The reference's rule: "Max 10 keys. Values must be strings, numbers, booleans, or
    arrays of scalars"."""
    if not isinstance(metadata, dict):
        raise bad_request("metadata: an object is required")
    if len(metadata) > 10:
        raise bad_request(f"metadata: at most 10 keys ({len(metadata)} given)")
    scalar = (str, int, float, bool)
    for key, value in metadata.items():
        if isinstance(value, list):
            if not all(isinstance(v, scalar) for v in value):
                raise bad_request(f"metadata.{key}: an array of scalars only")
        elif not isinstance(value, scalar):
            raise bad_request(f"metadata.{key}: a string, number, boolean or array of scalars")


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _epoch(at: str) -> float:
    return datetime.fromisoformat(at).timestamp()


def _iso(at: datetime | None) -> str | None:
    return at.astimezone(UTC).isoformat() if at is not None else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m healthd.testing.zep",
        description="A local imitation of the Zep v4 API on 127.0.0.1 (its graph engine "
        "Graphiti on Kuzu with the stand-in LLM, not a model). With a command after --, runs "
        "it with ZEP_API_KEY and ZEP_BASE_URL set and stops when it ends.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free)")
    parser.add_argument("--key", default=DEFAULT_KEY, help="the API key it accepts")
    parser.add_argument("--llm-url", help="an OpenAI-compatible endpoint (default: the stand-in)")
    parser.add_argument("--processing-seconds", type=float, default=0.1,
                        help="how long an episode stays pending")  # fmt: skip
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    zep = Zep(
        keys={args.key: DEFAULT_PROJECT},
        llm_base_url=args.llm_url,
        processing_seconds=args.processing_seconds,
        port=args.port,
        style=args.style,
        seed=args.seed,
    ).start()
    return serve(
        zep,
        args.command,
        {"ZEP_API_KEY": args.key, "ZEP_BASE_URL": zep.base_url},
        f"{zep.base_url} key={args.key}",
    )


if __name__ == "__main__":
    sys.exit(main())
