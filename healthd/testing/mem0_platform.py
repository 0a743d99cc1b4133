"""A local imitation of the Mem0 Platform API (api.mem0.ai), for tests and demos.

A small HTTP server on 127.0.0.1 speaking the endpoints ``mem0ai``'s ``MemoryClient`` (2.2)
calls and healthd's ``mem0`` target with ``deployment = "platform"`` uses, with the paths,
bodies, answers and errors of the platform's API reference (``docs/openapi.json`` and
``docs/api-reference/`` of github.com/mem0ai/mem0, read 2026-12):

* ``GET /v1/ping/``: the key's organisation, project and e-mail (the client calls it when
  built; organisation and project are resolved from the API key, never sent by the client);
  401 ``{"detail": "Invalid API key. ..."}`` for a key it does not know;
* ``POST /v3/memories/add/``: ``messages`` (``role`` user/assistant/system, ``content``) and
  at least one entity id at the top level; answered at once ``{"event_id", "status":
  "PENDING"}``: the memories are extracted later, in the background ("Processing is
  asynchronous. The response returns an ``event_id`` you can poll"). ``infer=false`` stores
  each message as it is, synchronously (``message`` and ``results`` in the answer);
* ``GET /v1/event/{event_id}/``: ``PENDING``, ``RUNNING``, ``SUCCEEDED`` or ``FAILED`` with
  ``results``, ``error``, the times and ``latency``; 404 "Event not found or you don't have
  permission to access it." for another project's event;
* ``POST /v3/memories/search/``: ``query`` and ``filters`` required, entity ids only inside
  ``filters`` ("top-level entity IDs are rejected with 400"), ``top_k`` 1-1000 (10),
  ``threshold`` 0-1 (0.1), ``rerank`` (off);
* ``POST /v3/memories/``: get-all, ``filters`` required, ``page`` (from 1) and ``page_size``
  (1-200, 100) as query parameters, a ``count``/``next``/``previous``/``results`` envelope
  whose rows say ``session_id`` where search says ``run_id`` (as the reference notes);
* ``DELETE /v1/memories/``: delete-all by ``user_id``/``agent_id``/``run_id`` query
  parameters, at least one required ("omitting all filters ... now returns a validation
  error"), queued: ``{"message": "Delete in progress. ...", "event_id"}``.

Strict where the reference is: a body field its schema does not list is refused (400), as is
a wrong type, a missing ``messages``/``query``/``filters``, no entity id, a top-level entity
id on search or get-all, an ``org_id``/``project_id`` (query or body) other than the key's
own (403), a missing or unknown key (401). Every project is its own store: one key never
reads another project's memories or events.

Inference is the open-source Mem0 pipeline: each project is a ``mem0.Memory`` (Qdrant in
local path mode) whose LLM and embedder are an OpenAI-compatible endpoint: the stand-in LLM
(``healthd/testing/standin_llm``, not a model) unless another is given. What the platform's
own models would decide is therefore Mem0's open-source extraction with the stand-in's
answers, not the hosted service's. Not modelled (refused with a 400 that says so, never
silently ignored): ``app_id``, the ``*`` wildcard, graph memory, categories, custom
instructions and prompt profiles, field selection, reference dates.

    python -m healthd.testing.mem0_platform --port 8765       # prints its base URL and key
    python -m healthd.testing.mem0_platform -- healthd evaluate --target mem0:deployment=platform,shadow=on,host_env=MEM0_HOST
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from healthd.testing._imitation import Imitation, add_common_arguments, serve
from healthd.testing.standin_llm import MINILM_MODELS
from healthd.testing.standin_style import DEFAULT_SEED, DEFAULT_STYLE

MAX_BODY = 8 * 1024 * 1024
ENTITY_IDS = ("user_id", "agent_id", "run_id")
ROLES = ("user", "assistant", "system")
DEFAULT_KEY = "m0-healthd-imitation-key"
DEFAULT_ORG = "org_healthd"
DEFAULT_PROJECT = "proj_shadow"
INVALID_KEY = (
    "Invalid API key. You can find your API key on https://app.mem0.ai/dashboard/api-keys."
)
EVENT_NOT_FOUND = "Event not found or you don't have permission to access it."
DELETE_QUEUED = "Delete in progress. This may take some time."
INVALID_INPUT = (
    "Invalid input data. Please refer to the memory creation documentation at "
    "https://docs.mem0.ai/platform/quickstart#4-1-create-memories for correct formatting "
    "and required fields."
)

# The request bodies' properties, as the reference's schemas list them.
ADD_FIELDS = frozenset(
    {
        "messages", "user_id", "agent_id", "run_id", "app_id", "metadata", "expiration_date",
        "custom_instructions", "agent_custom_instructions", "custom_categories", "infer",
        "immutable", "includes", "excludes", "enable_graph", "structured_data_schema",
        "output_format", "prompt_profile_id", "temporal_reasoning", "timezone",
        "observation_datetime", "observation_date", "timestamp",
    }
)  # fmt: skip
SEARCH_FIELDS = frozenset(
    {
        "query", "filters", "show_expired", "top_k", "threshold", "rerank", "reference_date",
        "fields", "categories", "metadata",
    }
)  # fmt: skip
LIST_FIELDS = frozenset(
    {
        "filters", "show_expired", "start_date", "end_date", "categories", "fields",
        "keywords", "page", "page_size",
    }
)  # fmt: skip
# What this imitation does with: every other listed field is refused as not modelled here.
ADD_MODELLED = frozenset({"messages", "user_id", "agent_id", "run_id", "app_id", "metadata",
                          "infer", "output_format", "expiration_date"})  # fmt: skip
SEARCH_MODELLED = frozenset({"query", "filters", "show_expired", "top_k", "threshold",
                             "rerank"})  # fmt: skip
LIST_MODELLED = frozenset({"filters", "show_expired", "page", "page_size"})


class ApiError(Exception):
    def __init__(self, status: int, body: Mapping[str, Any]) -> None:
        super().__init__(json.dumps(body))
        self.status = status
        self.body = dict(body)


def bad_request(message: str) -> ApiError:
    """The platform's 400: ``{"error": "400 Bad Request", "details": {"message": ...}}``;
    ``detail`` too, which is what ``MemoryClient`` reports."""
    return ApiError(400, {"error": "400 Bad Request", "details": {"message": message},
                          "detail": message})  # fmt: skip


@dataclasses.dataclass(frozen=True)
class ApiKey:
    key: str
    org_id: str
    project_id: str
    user_email: str = "healthd@example.invalid"


@dataclasses.dataclass
class Event:
    id: str
    project_id: str
    event_type: str
    payload: dict[str, Any]
    created_at: float
    status: str = "PENDING"
    results: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    error: str | None = None
    started_at: float | None = None
    completed_at: float | None = None

    def as_json(self) -> dict[str, Any]:
        done = self.completed_at
        return {
            "id": self.id,
            "event_type": self.event_type,
            "status": self.status,
            "payload": self.payload,
            "metadata": None,
            "results": self.results,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(done or self.started_at or self.created_at),
            "started_at": _iso(self.started_at) if self.started_at else None,
            "completed_at": _iso(done) if done else None,
            "latency": round((done - self.created_at) * 1000, 1) if done else None,
            "graph_status": None,
            "error": self.error,
        }


class Project:
    """One project's memories: an open-source ``mem0.Memory`` of its own."""

    def __init__(self, directory: str, llm_base_url: str, model: str, dims: int) -> None:
        from healthd.memory._mem0_library import import_mem0

        mem0 = import_mem0()
        endpoint = {"openai_base_url": llm_base_url, "api_key": "imitation-not-a-secret"}
        self.memory = mem0.Memory.from_config(
            {
                "llm": {"provider": "openai",
                        "config": {"model": "healthd-standin", "temperature": 0, **endpoint}},
                "embedder": {"provider": "openai",
                             "config": {"model": model, "embedding_dims": dims, **endpoint}},
                "vector_store": {
                    "provider": "qdrant",
                    "config": {"path": os.path.join(directory, "qdrant"), "on_disk": True,
                               "collection_name": "memories", "embedding_model_dims": dims},
                },
                "history_db_path": os.path.join(directory, "history.db"),
            }
        )  # fmt: skip
        self.lock = threading.Lock()  # local Qdrant is not for concurrent use

    def close(self) -> None:
        client = getattr(self.memory.vector_store, "client", None)
        if client is not None:
            client.close()
        self.memory.db.close()


class Mem0Platform(Imitation):
    """The server. ``requests`` keeps (method, path, body) of each request, for tests;
    ``processing_seconds`` is how long an add stays ``PENDING`` before it is processed."""

    def __init__(
        self,
        keys: Sequence[ApiKey] = (ApiKey(DEFAULT_KEY, DEFAULT_ORG, DEFAULT_PROJECT),),
        llm_base_url: str | None = None,
        embedding_model: str = MINILM_MODELS[0],
        embedding_dims: int = 384,
        processing_seconds: float = 0.2,
        host: str = "127.0.0.1",
        port: int = 0,
        style: str = DEFAULT_STYLE,
        seed: int = DEFAULT_SEED,
    ) -> None:
        super().__init__(llm_base_url, host, port, style, seed, "healthd-mem0-platform-")
        self.keys = {k.key: k for k in keys}
        self.processing_seconds = processing_seconds
        self._model, self._dims = embedding_model, embedding_dims
        self._projects: dict[str, Project] = {}
        self._events: dict[str, Event] = {}

    @property
    def base_url(self) -> str:
        return self.root_url

    def _started(self) -> None:
        for key in self.keys.values():  # the projects exist before the first request
            self._project(key.project_id)

    def _stopped(self) -> None:
        for project in self._projects.values():
            project.close()

    def memories(self, project_id: str, user_id: str) -> list[str]:
        """The texts stored for a user of a project, expired or not, read directly (for
        tests)."""
        project = self._project(project_id)
        with project.lock:
            found = project.memory.get_all(
                filters={"user_id": user_id}, top_k=100_000, show_expired=True
            )
        return sorted(str(row["memory"]) for row in found["results"])

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Until every queued event is processed (for tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if all(e.status in ("SUCCEEDED", "FAILED") for e in self._events.values()):
                    return
            time.sleep(0.02)
        raise TimeoutError("events still queued")

    # --- the background processing --------------------------------------------------------

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            event, run = item
            wait = event.created_at + self.processing_seconds - time.time()
            if wait > 0:
                time.sleep(wait)
            from healthd.memory._mem0_library import MEM0_ERRORS

            with self._lock:
                event.status, event.started_at = "RUNNING", time.time()
            MEM0_ERRORS.drain()
            try:
                results = run()
                swallowed = MEM0_ERRORS.drain()  # Mem0 logs and drops what it cannot parse
                if swallowed is not None:
                    raise RuntimeError(swallowed)
            except Exception as exc:
                with self._lock:
                    event.status, event.error = "FAILED", str(exc).splitlines()[0][:500]
                    event.completed_at = time.time()
                continue
            with self._lock:
                event.status, event.results = "SUCCEEDED", results
                event.completed_at = time.time()

    def _queue_event(
        self, key: ApiKey, kind: str, payload: dict[str, Any], run: Callable[[], Any]
    ) -> Event:
        event = Event(str(uuid.uuid4()), key.project_id, kind, payload, time.time())
        with self._lock:
            self._events[event.id] = event
        self._queue.put((event, run))
        return event

    # --- requests -------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        url = urlsplit(handler.path)
        params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            body = self._body(handler, method)
            with self._lock:
                self.requests.append((method, handler.path, body))
            key = self._authorise(handler.headers.get("Authorization"))
            self._check_scope(key, params, body)
            status, answer = self._route(method, url.path, params, body, key)
        except ApiError as exc:
            status, answer = exc.status, exc.body
        except ValueError as exc:  # what Mem0's own validation refuses (a filter, a query)
            refused = bad_request(str(exc).splitlines()[0] if str(exc) else "invalid request")
            status, answer = refused.status, refused.body
        except Exception as exc:  # the imitation's own failure: a 500, as a service says it
            status, answer = 500, {"detail": f"internal error: {str(exc).splitlines()[0]}"}
        self._reply(handler, status, answer)

    def _body(self, handler: BaseHTTPRequestHandler, method: str) -> Any:
        length = int(handler.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ApiError(413, {"detail": f"request body over {MAX_BODY} bytes"})
        raw = handler.rfile.read(length) if length else b""
        if method in ("GET", "DELETE"):
            return None
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            raise bad_request("JSON parse error: the request body is not JSON") from None
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        return body

    def _authorise(self, header: str | None) -> ApiKey:
        scheme, _, token = (header or "").partition(" ")
        if scheme != "Token" or not token:
            raise ApiError(401, {"detail": "Authentication credentials were not provided."})
        key = self.keys.get(token.strip())
        if key is None:
            raise ApiError(401, {"detail": INVALID_KEY})
        return key

    def _check_scope(self, key: ApiKey, params: Mapping[str, str], body: Any) -> None:
        """An organisation or project named in a request must be the key's own."""
        given = dict(params)
        if isinstance(body, dict):
            given.update({k: v for k, v in body.items() if k in ("org_id", "project_id")})
        for name, own in (("org_id", key.org_id), ("project_id", key.project_id)):
            if name in given and given[name] != own:
                raise ApiError(
                    403,
                    {"detail": f"You do not have access to {name} {given[name]!r}: this API "
                               "key belongs to another organization or project."},
                )  # fmt: skip

    def _route(
        self, method: str, path: str, params: dict[str, str], body: Any, key: ApiKey
    ) -> tuple[int, Any]:
        if method == "GET" and path == "/v1/ping/":
            return 200, {"status": "ok", "org_id": key.org_id, "project_id": key.project_id,
                         "user_email": key.user_email}  # fmt: skip
        if method == "POST" and path == "/v3/memories/add/":
            return 200, self._add(key, body)
        if method == "POST" and path == "/v3/memories/search/":
            return 200, self._search(key, body)
        if method == "POST" and path == "/v3/memories/":
            return 200, self._list(key, params, body)
        if method == "DELETE" and path == "/v1/memories/":
            return 200, self._delete_all(key, params)
        if method == "GET" and path.startswith("/v1/event/") and path.endswith("/"):
            return 200, self._event(key, path[len("/v1/event/") : -1])
        raise ApiError(404, {"detail": "Not found."})

    def _project(self, project_id: str) -> Project:
        with self._lock:
            project = self._projects.get(project_id)
            if project is None:
                directory = os.path.join(self._scratch.name, project_id)
                os.makedirs(directory, exist_ok=True)
                assert self._llm_url is not None, "start() the imitation first"
                project = Project(directory, self._llm_url, self._model, self._dims)
                self._projects[project_id] = project
            return project

    def _add(self, key: ApiKey, body: dict[str, Any]) -> dict[str, Any]:
        _fields(body, ADD_FIELDS, ADD_MODELLED, "add")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise bad_request(f"messages: a non-empty list is required. {INVALID_INPUT}")
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or set(message) - {"role", "content"}:
                raise bad_request(f"messages[{i}]: an object of role and content only")
            if message.get("role") not in ROLES:
                raise bad_request(f"messages[{i}].role: one of {', '.join(ROLES)}")
            if not isinstance(message.get("content"), str):
                raise bad_request(f"messages[{i}].content: a string is required")
        scope = _entity_ids(body, "add")
        if not scope:
            raise bad_request(
                "At least one entity ID (user_id, agent_id, app_id or run_id) is required."
            )
        metadata = body.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise bad_request("metadata: a JSON object is required")
        infer = body.get("infer", True)
        if not isinstance(infer, bool):
            raise bad_request("infer: a boolean is required")
        expires = body.get("expiration_date")  # YYYY-MM-DD; hidden from reads once past
        if expires is not None:
            try:
                date.fromisoformat(str(expires))
            except ValueError:
                raise bad_request("expiration_date: a date YYYY-MM-DD is required") from None
        project = self._project(key.project_id)

        def run() -> list[dict[str, Any]]:
            with project.lock:
                done = project.memory.add(
                    messages, metadata=metadata, infer=infer, expiration_date=expires, **scope
                )
            return [
                {"id": row.get("id"), "event": row.get("event", "ADD"),
                 "data": {"memory": row.get("memory")}}
                for row in done.get("results", [])
            ]  # fmt: skip

        if not infer:  # "processing is synchronous and memories are stored verbatim"
            results = run()
            return {"message": "Memories added successfully.", "results": results}
        event = self._queue_event(key, "ADD", body, run)
        return {"event_id": event.id, "status": "PENDING"}

    def _search(self, key: ApiKey, body: dict[str, Any]) -> dict[str, Any]:
        _no_top_level_ids(body, "search")
        _fields(body, SEARCH_FIELDS, SEARCH_MODELLED, "search")
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            raise bad_request("query: a non-empty string is required")
        filters = _filters(body)
        top_k = _number(body, "top_k", 10, 1, 1000, integer=True)
        threshold = _number(body, "threshold", 0.1, 0.0, 1.0)
        for name in ("rerank", "show_expired"):
            if not isinstance(body.get(name, False), bool):
                raise bad_request(f"{name}: a boolean is required")
        project = self._project(key.project_id)
        with project.lock:
            found = project.memory.search(
                query.strip(), filters=filters, top_k=int(top_k), threshold=threshold,
                show_expired=bool(body.get("show_expired", False)),
            )  # fmt: skip
        return {"results": [_row(r, search=True) for r in found.get("results", [])]}

    def _list(self, key: ApiKey, params: Mapping[str, str], body: dict[str, Any]) -> Any:
        _no_top_level_ids(body, "get_all")
        _fields(body, LIST_FIELDS, LIST_MODELLED, "get_all")
        filters = _filters(body)
        given: dict[str, Any] = {
            **{k: body[k] for k in ("page", "page_size") if k in body},
            **params,
        }
        page = int(_number(given, "page", 1, 1, 1_000_000, integer=True))
        size = int(_number(given, "page_size", 100, 1, 200, integer=True))
        project = self._project(key.project_id)
        with project.lock:
            found = project.memory.get_all(
                filters=filters, top_k=1_000_000,
                show_expired=bool(body.get("show_expired", False)),
            )  # fmt: skip
        rows = sorted(found.get("results", []), key=lambda r: (str(r.get("created_at")), r["id"]))
        start = (page - 1) * size
        if rows and start >= len(rows):
            raise ApiError(404, {"detail": "Invalid page."})
        link = f"{self.base_url}/v3/memories/?page={{}}&page_size={size}"
        return {
            "count": len(rows),
            "next": link.format(page + 1) if start + size < len(rows) else None,
            "previous": link.format(page - 1) if page > 1 else None,
            "results": [_row(r, search=False) for r in rows[start : start + size]],
        }

    def _delete_all(self, key: ApiKey, params: Mapping[str, str]) -> dict[str, Any]:
        known = {*ENTITY_IDS, "app_id", "metadata", "org_id", "project_id"}
        unknown = sorted(set(params) - known)
        if unknown:
            raise bad_request(f"{unknown[0]}: not a delete-all filter")
        scope = _entity_ids(params, "delete_all")
        if not scope:
            raise bad_request(
                "At least one filter is required to delete memories (user_id, agent_id, "
                "app_id or run_id)."
            )
        project = self._project(key.project_id)

        def run() -> list[dict[str, Any]]:
            with project.lock:
                project.memory.delete_all(**scope)
            return []

        event = self._queue_event(key, "DELETE", dict(params), run)
        return {"message": DELETE_QUEUED, "event_id": event.id}

    def _event(self, key: ApiKey, event_id: str) -> dict[str, Any]:
        with self._lock:
            event = self._events.get(event_id)
            if event is None or event.project_id != key.project_id:
                raise ApiError(404, {"error": EVENT_NOT_FOUND, "detail": EVENT_NOT_FOUND})
            return event.as_json()


def _fields(
    body: Mapping[str, Any], allowed: frozenset[str], modelled: frozenset[str], where: str
) -> None:
    for name in sorted(body):
        if name not in allowed:
            raise bad_request(f"{name}: not a field of {where} (unknown field)")
        if name not in modelled:
            raise bad_request(f"{name}: not modelled by this imitation of the platform")


def _entity_ids(given: Mapping[str, Any], where: str) -> dict[str, str]:
    scope: dict[str, str] = {}
    if "app_id" in given:
        raise bad_request("app_id: not modelled by this imitation of the platform")
    for name in ENTITY_IDS:
        if name not in given:
            continue
        value = given[name]
        if not isinstance(value, str) or not value.strip():
            raise bad_request(f"{name}: a non-empty string is required")
        if value.strip() == "*":
            raise bad_request(f"{name}='*': the wildcard is not modelled by this imitation")
        scope[name] = value.strip()
    return scope


def _no_top_level_ids(body: Mapping[str, Any], where: str) -> None:
    given = sorted(set(body) & {*ENTITY_IDS, "app_id"})
    if given:
        raise bad_request(
            f"Top-level entity parameters {given} are not supported in {where}; pass them "
            "inside filters."
        )


def _filters(body: Mapping[str, Any]) -> dict[str, Any]:
    """The v2 filters as the open-source ``Memory`` takes them: entity ids at the top, from
    the filters' top level or an ``AND`` of conditions; every other condition kept."""
    filters = body.get("filters")
    if not isinstance(filters, dict) or not filters:
        raise bad_request("filters: an object with at least one entity ID is required")
    flat: dict[str, Any] = {}
    rest: list[Any] = []
    conditions: list[Any] = [filters]
    while conditions:
        condition = conditions.pop(0)
        if not isinstance(condition, dict):
            raise bad_request("filters: each condition must be an object")
        for name, value in condition.items():
            if name == "AND":
                if not isinstance(value, list):
                    raise bad_request("filters.AND: a list of conditions is required")
                conditions.extend(value)
            elif name in ENTITY_IDS and isinstance(value, str):
                flat.update(_entity_ids({name: value}, "filters"))
            elif name == "app_id":
                _entity_ids({name: value}, "filters")
            else:
                rest.append({name: value})
    if not any(name in flat for name in ENTITY_IDS):
        raise bad_request(
            "filters must contain at least one entity ID (user_id, agent_id, app_id or "
            "run_id) outside OR/NOT"
        )
    if len(rest) == 1:
        flat.update(rest[0])
    elif rest:
        flat["AND"] = rest
    return flat


def _number(
    body: Mapping[str, Any],
    name: str,
    default: float,
    low: float,
    high: float,
    integer: bool = False,
) -> float:
    value: Any = body.get(name, default)
    if isinstance(value, str) and integer:  # a query parameter
        try:
            value = int(value)
        except ValueError:
            raise bad_request(f"{name}: an integer is required") from None
    if isinstance(value, bool) or not (
        isinstance(value, int) or (not integer and isinstance(value, float))
    ):
        raise bad_request(f"{name}: {'an integer' if integer else 'a number'} is required")
    if not low <= value <= high:
        raise bad_request(f"{name}: must be between {low:g} and {high:g}")
    return float(value)


def _row(row: Mapping[str, Any], search: bool) -> dict[str, Any]:
    """An open-source Mem0 memory in the platform's shape (search says ``run_id`` and a
    score in [0, 1]; get-all says ``session_id``)."""
    out: dict[str, Any] = {
        "id": row.get("id"),
        "memory": row.get("memory"),
        "user_id": row.get("user_id"),
        "agent_id": row.get("agent_id"),
        "app_id": None,
        ("run_id" if search else "session_id"): row.get("run_id"),
        "metadata": row.get("metadata") or None,
        "categories": [],
        "expiration_date": row.get("expiration_date"),
        "created_at": row.get("created_at"),
        "updated_at": row.get("updated_at") or row.get("created_at"),
    }
    if search:
        out["score"] = min(1.0, max(0.0, float(row.get("score") or 0.0)))
    return out


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m healthd.testing.mem0_platform",
        description="A local imitation of the Mem0 Platform API on 127.0.0.1 (inference by "
        "open-source Mem0 with the stand-in LLM, not a model). With a command after --, runs "
        "it with MEM0_API_KEY and MEM0_HOST set and stops when it ends.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free)")
    parser.add_argument("--key", default=DEFAULT_KEY, help="the API key it accepts")
    parser.add_argument("--org-id", default=DEFAULT_ORG)
    parser.add_argument("--project-id", default=DEFAULT_PROJECT)
    parser.add_argument("--llm-url", help="an OpenAI-compatible endpoint (default: the stand-in)")
    parser.add_argument("--processing-seconds", type=float, default=0.2,
                        help="how long an add stays PENDING")  # fmt: skip
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    platform = Mem0Platform(
        keys=(ApiKey(args.key, args.org_id, args.project_id),),
        llm_base_url=args.llm_url,
        processing_seconds=args.processing_seconds,
        port=args.port,
        style=args.style,
        seed=args.seed,
    ).start()
    return serve(
        platform,
        args.command,
        {"MEM0_API_KEY": args.key, "MEM0_HOST": platform.base_url},
        f"{platform.base_url} key={args.key} org_id={args.org_id} project_id={args.project_id}",
    )


if __name__ == "__main__":
    sys.exit(main())
