"""A local emulator of the Amazon Bedrock AgentCore Memory data plane, for tests and demos.

A small HTTP server speaking the service's REST-JSON protocol (paths, shapes and error
codes from botocore's ``bedrock-agentcore`` 2024-02-28 model) for exactly the operations
healthd's ``agentcore`` adapter uses: ``BatchCreateMemoryRecords``,
``BatchUpdateMemoryRecords``, ``BatchDeleteMemoryRecords``, ``RetrieveMemoryRecords`` and
``ListMemoryRecords``, and the control plane's ``GetMemory`` (``bedrock-agentcore-control``
2023-06-05) for a memory's indexed keys and strategies. Point real boto3 at it with
``endpoint_url`` and any dummy credentials; requests must carry a SigV4 ``Authorization``
header (not verified).

Semantics, as the AgentCore documents describe them:

* namespace isolation: ``namespace`` is an exact match, ``namespacePath`` a string-prefix
  match (so ``a/b`` also matches ``a/bc``: callers must check what they delete);
* metadata filters applied before ranking, with every operator the model lists
  (EQUALS_TO, EXISTS, NOT_EXISTS, BEFORE/AFTER, CONTAINS, GREATER_THAN(_OR_EQUALS),
  LESS_THAN(_OR_EQUALS)), the system keys ``x-amz-agentcore-memory-createdAt`` and
  ``-updatedAt`` taking BEFORE/AFTER;
* the service's limits the client does not check: 100 records a batch, 5 filters, topK 100,
  20 metadata keys, 16,000 characters of record text, 1,024 of namespace, 10,000 of search
  query, the string patterns, no reserved ``x-amz-agentcore-memory-*`` metadata key written,
  no request identifier twice in one batch, a client token reused only with the same body;
* indexed keys: only the memory's indexed keys (and the system keys) can be filtered;
* strategies: a record's ``memoryStrategyId`` must name one of the memory's strategies, and
  a record written with one keeps only the metadata keys of that strategy's schema;
* record expiry fixed per record when written (``recordExpirySpecification``); an update
  without one keeps the record's own;
* ``failedRecords`` for records that cannot be written, ``clientToken`` idempotency;
* on demand: throttling (429), server errors (500), failures of chosen records, and a
  read-after-write delay (creates, updates and deletes become visible to reads only after
  it; until then reads see the record as it was).

Ranking stands in for semantic similarity with word overlap between the query and the
content, newest first on ties. Time comes from ``clock`` (seconds), which tests advance.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from healthd.testing._agentcore_core import (
    DAY,
    STRATEGY_ID,
    MemoryStore,
    Record,
    ServiceError,
    Strategy,
    check_key,
    check_metadata_value,
    metadata_filters,
    request_digest,
    validation_error,
)
from healthd.testing.agentcore_events import EventPlane

MAX_BATCH = 100
MAX_TOP_K = 100
MAX_METADATA_KEYS = 20
MAX_TEXT = 16_000
MAX_NAMESPACE = 1024
MAX_QUERY = 10_000
MAX_INDEXED_KEYS = 10
RESERVED_PREFIX = "x-amz-agentcore-memory-"
VALUE_TYPES = ("STRING", "STRINGLIST", "NUMBER")
DEFAULT_PAGE = 20

_NAMESPACE = re.compile(r"[a-zA-Z0-9/*][a-zA-Z0-9\-_/*]*(?::[a-zA-Z0-9\-_/*]+)*[a-zA-Z0-9\-_/*]*")
_REQUEST_ID = re.compile(r"[a-zA-Z0-9_-]+")
_MEMORY_ID = re.compile(r"[a-zA-Z][a-zA-Z0-9\-_]{0,99}-[a-zA-Z0-9]{10}")
_RECORD_STRATEGY_ID = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9\-_]*")  # the data plane's, max 100
_WORD = re.compile(r"\w+")


class AgentCoreEmulator:
    """The emulator's state and its HTTP server. Use as a context manager, or ``start()``."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] | None = None,
        read_after_write_delay: float = 0.0,
    ) -> None:
        self._offset = 0.0
        self._base_clock = clock or time.time
        self.read_after_write_delay = read_after_write_delay
        self.memories: dict[str, MemoryStore] = {}
        self.requests: list[tuple[str, str]] = []
        self._throttle = 0
        self._server_errors = 0
        self._fail_records: dict[str, int] = {}
        self._counter = 0
        self._lock = threading.RLock()  # (a request can create a memory: see EventPlane.route)
        self.events = EventPlane(self)  # events, GetMemory and strategies
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16  # one send per response: no Nagle/delayed-ACK stall

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                emulator._handle(self)

            def do_GET(self) -> None:
                emulator._handle(self)

            def do_DELETE(self) -> None:
                emulator._handle(self)

            def do_PUT(self) -> None:
                emulator._handle(self)

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}"
        self._thread: threading.Thread | None = None

    # -- control ----------------------------------------------------------------------------

    def start(self) -> AgentCoreEmulator:
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> AgentCoreEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def now(self) -> float:
        return self._base_clock() + self._offset

    def advance(self, seconds: float) -> None:
        """Move the emulator's clock forward (expiry, createdAt)."""
        with self._lock:
            self._offset += seconds

    def create_memory(
        self,
        memory_id: str,
        *,
        indexed_keys: dict[str, str] | None = None,
        strategies: list[Strategy] | None = None,
    ) -> str:
        """A memory with ``indexed_keys`` (key: STRING, STRINGLIST or NUMBER; at most 10, as
        the control plane allows) and ``strategies``."""
        if not _MEMORY_ID.fullmatch(memory_id):
            raise ValueError(f"memory id {memory_id!r} does not match the service's pattern")
        keys = dict(indexed_keys or {})
        if len(keys) > MAX_INDEXED_KEYS or any(t not in VALUE_TYPES for t in keys.values()):
            raise ValueError(f"indexed keys: at most {MAX_INDEXED_KEYS}, typed {VALUE_TYPES}")
        for strategy in strategies or ():
            if not STRATEGY_ID.fullmatch(strategy.strategy_id):
                raise ValueError(f"strategy id {strategy.strategy_id!r} is not a strategy id")
        with self._lock:
            store = self.memories.setdefault(memory_id, MemoryStore(memory_id))
            store.created_at = store.created_at or self.now()
            store.indexed_keys.update(keys)  # indexed keys are never removed
            for strategy in strategies or ():
                store.strategies[strategy.strategy_id] = strategy
        return memory_id

    def throttle_next(self, count: int) -> None:
        """Answer the next ``count`` requests with 429 ThrottledException."""
        with self._lock:
            self._throttle += count

    def fail_next(self, count: int) -> None:
        """Answer the next ``count`` requests with 500 ServiceException."""
        with self._lock:
            self._server_errors += count

    def fail_records(self, request_identifier: str, times: int = 1) -> None:
        """Put the record created with ``request_identifier`` into ``failedRecords`` for its
        next ``times`` batch-create attempts."""
        with self._lock:
            self._fail_records[request_identifier] = times

    def put_record(
        self,
        memory_id: str,
        namespace: str,
        text: str,
        metadata: dict[str, dict[str, Any]] | None = None,
    ) -> str:
        """Write a record directly (as another writer would), visible at once."""
        with self._lock:
            store = self.memories[memory_id]
            now = self.now()
            record = Record(
                self._new_id(), [namespace], text, now, "direct", dict(metadata or {}),
                now, now, None, None, now,
            )  # fmt: skip
            store.records[record.id] = record
            return record.id

    def stored(self, memory_id: str) -> list[Record]:
        """Every record not deleted, visible or not, expired or not (for assertions)."""
        with self._lock:
            return [r for r in self.memories[memory_id].records.values() if r.deleted_at is None]

    # -- HTTP -------------------------------------------------------------------------------

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        raw = request.rfile.read(length) if length else b""
        try:
            with self._lock:
                self.requests.append((request.command, request.path))
                status, payload = self._dispatch(request, raw)
        except ServiceError as exc:
            status = exc.status
            payload = {"message": str(exc), **exc.extra}
            data = json.dumps(payload).encode()
            request.send_response(status)
            request.send_header("x-amzn-ErrorType", exc.code)
        else:
            data = json.dumps(payload).encode()
            request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        request.end_headers()
        request.wfile.write(data)

    def _dispatch(self, request: BaseHTTPRequestHandler, raw: bytes) -> tuple[int, dict[str, Any]]:
        auth = request.headers.get("Authorization") or ""
        if not auth.startswith("AWS4-HMAC-SHA256 Credential="):
            raise ServiceError("AccessDeniedException", 403, "missing or unsigned request")
        if self._throttle > 0:
            self._throttle -= 1
            raise ServiceError("ThrottledException", 429, "rate exceeded")
        if self._server_errors > 0:
            self._server_errors -= 1
            raise ServiceError("ServiceException", 500, "internal failure")
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            raise ServiceError(
                "ValidationException", 400, "cannot parse the request body", reason="CannotParse"
            ) from None
        if not isinstance(body, dict):
            raise validation_error("the request body must be an object")
        parts = [unquote(p) for p in request.path.split("?")[0].split("/")]
        if len(parts) > 2 and parts[1] == "memories" and parts[2].startswith("arn:"):
            if parts[3:] in (["details"], ["update"]):  # GetMemory, UpdateMemory
                raise validation_error(
                    f"memoryId {parts[2]!r} does not match the control plane's MemoryId "
                    "pattern [a-zA-Z][a-zA-Z0-9-_]{0,99}-[a-zA-Z0-9]{10} (no ARN)"
                )
            parts[2] = parts[2].rsplit("/", 1)[-1]  # the data plane's MemoryId takes an ARN
        routed = self.events.route(request.command, parts, body)
        if routed is not None:
            return routed
        if request.command != "POST" or len(parts) < 4 or parts[1] != "memories":
            raise ServiceError("UnknownOperationException", 404, f"no route for {request.path}")
        store, rest = self._store(parts[2]), "/".join(parts[3:])
        routes: dict[str, Callable[[MemoryStore, dict[str, Any]], tuple[int, dict[str, Any]]]]
        routes = {
            "memoryRecords/batchCreate": self._batch_create,
            "memoryRecords/batchUpdate": self._batch_update,
            "memoryRecords/batchDelete": self._batch_delete,
            "memoryRecords": self._list,
            "retrieve": self._retrieve,
        }
        operation = routes.get(rest)
        if operation is None:
            raise ServiceError("UnknownOperationException", 404, f"no route for {request.path}")
        return operation(store, body)

    def _store(self, memory_id: str) -> MemoryStore:
        store = self.memories.get(memory_id)
        if store is None:
            raise ServiceError("ResourceNotFoundException", 404, f"Memory {memory_id} not found")
        return store

    # -- operations -------------------------------------------------------------------------

    def _batch_create(self, store: MemoryStore, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        token = body.get("clientToken")
        if isinstance(token, str) and token in store.tokens:
            if store.token_bodies[token] != request_digest(body):
                raise ServiceError(
                    "ValidationException", 400,
                    f"clientToken {token!r} was used with another request body",
                    reason="IdempotentParameterMismatchException",
                )  # fmt: skip
            return 201, store.tokens[token]
        records = self._records_list(body)
        expiry_days = self._expiry(body, allow_remove=False)
        now = self.now()
        ok, failed = [], []
        seen: set[str] = set()
        for item in records:
            rid = item.get("requestIdentifier")
            if not isinstance(rid, str) or not _REQUEST_ID.fullmatch(rid) or len(rid) > 80:
                raise validation_error(f"requestIdentifier {rid!r} does not match [a-zA-Z0-9_-]+")
            if rid in seen:
                raise validation_error(f"requestIdentifier {rid!r} appears twice in one batch")
            seen.add(rid)
            namespaces = self._namespaces(item.get("namespaces"))
            content = _text(item.get("content"))
            strategy = self._strategy(store, item.get("memoryStrategyId"))
            metadata = _kept(self._metadata(item.get("metadata")), strategy)
            if self._fail_records.get(rid, 0) > 0:
                self._fail_records[rid] -= 1
                failed.append(
                    {
                        "memoryRecordId": "mem-" + "0" * 36,
                        "status": "FAILED",
                        "requestIdentifier": rid,
                        "errorCode": 500,
                        "errorMessage": "injected failure",
                    }
                )
                continue
            record = Record(
                self._new_id(), namespaces, content, float(item.get("timestamp", now)),
                strategy.strategy_id if strategy else "direct", metadata, now, now,
                None if expiry_days is None else now + expiry_days * DAY, expiry_days,
                now + self.read_after_write_delay,
            )  # fmt: skip
            store.records[record.id] = record
            ok.append(
                {"memoryRecordId": record.id, "status": "SUCCEEDED", "requestIdentifier": rid}
            )
        response = {"successfulRecords": ok, "failedRecords": failed}
        if isinstance(token, str):
            store.tokens[token] = response
            store.token_bodies[token] = request_digest(body)
        return 201, response

    def _batch_update(self, store: MemoryStore, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        records = self._records_list(body)
        spec = body.get("recordExpirySpecification")
        expiry_days = self._expiry(body, allow_remove=True)
        now = self.now()
        ok, failed = [], []
        for item in records:
            content = _text(item["content"]) if "content" in item else None
            namespaces = self._namespaces(item["namespaces"]) if "namespaces" in item else None
            if "sourceNamespaces" in item:
                self._namespaces(item["sourceNamespaces"])
            metadata = self._metadata(item["metadata"]) if "metadata" in item else None
            strategy = self._strategy(store, item.get("memoryStrategyId"))
            record = self._live(store, item.get("memoryRecordId"))
            if record is None or (
                "sourceNamespaces" in item and item["sourceNamespaces"] != record.namespaces
            ):
                failed.append(_failure(item.get("memoryRecordId"), 404, "record not found"))
                continue
            record.shown = self._snapshot(record, now)
            record.visible_from = now + self.read_after_write_delay
            if content is not None:
                record.content = content
            if namespaces is not None:
                record.namespaces = namespaces
            if strategy is not None:
                record.strategy_id = strategy.strategy_id
            if metadata is not None:
                record.metadata = metadata
            if record.strategy_id in store.strategies:
                record.metadata = _kept(record.metadata, store.strategies[record.strategy_id])
            record.timestamp = float(item.get("timestamp", now))
            record.updated_at = now
            if spec is not None:
                record.expiry_days = expiry_days
                record.expires_at = None if expiry_days is None else now + expiry_days * DAY
            elif record.expiry_days is not None:
                record.expires_at = now + record.expiry_days * DAY
            ok.append({"memoryRecordId": record.id, "status": "SUCCEEDED"})
        return 200, {"successfulRecords": ok, "failedRecords": failed}

    def _batch_delete(self, store: MemoryStore, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        records = self._records_list(body)
        now = self.now()
        ok, failed = [], []
        for item in records:
            record = self._live(store, item.get("memoryRecordId"))
            namespace = item.get("namespace")
            if record is None or (namespace is not None and namespace not in record.namespaces):
                failed.append(_failure(item.get("memoryRecordId"), 404, "record not found"))
                continue
            record.shown = self._snapshot(record, now)
            record.visible_from = now + self.read_after_write_delay
            record.deleted_at = now
            ok.append({"memoryRecordId": record.id, "status": "SUCCEEDED"})
        return 200, {"successfulRecords": ok, "failedRecords": failed}

    def _list(self, store: MemoryStore, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        matches = self._select(store, body, body.get("metadataFilters"))
        strategy = self._strategy(store, body.get("memoryStrategyId"))
        if strategy is not None:
            matches = [r for r in matches if r.strategy_id == strategy.strategy_id]
        matches.sort(key=lambda r: (r.created_at, r.id))
        return self._page(body, "list", [r.summary() for r in matches])

    def _retrieve(self, store: MemoryStore, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        criteria = body.get("searchCriteria")
        if not isinstance(criteria, dict) or not isinstance(criteria.get("searchQuery"), str):
            raise validation_error("searchCriteria.searchQuery is required")
        if not 1 <= len(criteria["searchQuery"]) <= MAX_QUERY:
            raise validation_error(
                f"searchCriteria.searchQuery has {len(criteria['searchQuery'])} characters; "
                f"it must have 1 to {MAX_QUERY}"
            )
        top_k = criteria.get("topK", 10)
        if not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise validation_error(f"searchCriteria.topK must be between 1 and {MAX_TOP_K}")
        matches = self._select(store, body, criteria.get("metadataFilters"))
        strategy = self._strategy(store, criteria.get("memoryStrategyId"))
        if strategy is not None:
            matches = [r for r in matches if r.strategy_id == strategy.strategy_id]
        words = set(_WORD.findall(criteria["searchQuery"].lower()))
        scored = []
        for record in matches:
            content = set(_WORD.findall(record.content.lower()))
            score = len(words & content) / len(words | content) if words | content else 0.0
            scored.append((score, record))
        scored.sort(key=lambda p: (-p[0], -p[1].updated_at, p[1].id))
        summaries = [r.summary(round(s, 6)) for s, r in scored[:top_k]]
        return self._page(body, "retrieve", summaries)

    # -- helpers ----------------------------------------------------------------------------

    def _new_id(self) -> str:
        self._counter += 1
        return f"mem-{uuid.UUID(int=self._counter)}"

    def _live(self, store: MemoryStore, record_id: Any) -> Record | None:
        record = store.records.get(record_id) if isinstance(record_id, str) else None
        if record is None or record.deleted_at is not None:
            return None
        return record

    def _records_list(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        records = body.get("records")
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise validation_error("records must be a list of objects")
        if len(records) > MAX_BATCH:
            raise validation_error(
                f"records has {len(records)} members; the maximum is {MAX_BATCH}"
            )
        return records

    def _expiry(self, body: dict[str, Any], *, allow_remove: bool) -> int | None:
        spec = body.get("recordExpirySpecification")
        if spec is None:
            return None
        if not isinstance(spec, dict) or len(spec) != 1:
            raise validation_error("recordExpirySpecification takes exactly one member")
        if "action" in spec:
            if not allow_remove or spec["action"] != "REMOVE":
                raise validation_error(
                    "recordExpirySpecification.action REMOVE is not allowed here"
                )
            return None
        days = spec.get("recordExpiryDurationDays")
        if not isinstance(days, int) or days < 31:
            raise validation_error("recordExpiryDurationDays must be at least 31")
        return days

    def _namespaces(self, value: Any) -> list[str]:
        if not isinstance(value, list) or len(value) != 1:
            raise validation_error("namespaces must hold exactly one namespace")
        return [_namespace(value[0])]

    def _metadata(self, value: Any) -> dict[str, dict[str, Any]]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise validation_error("metadata must be a map")
        if len(value) > MAX_METADATA_KEYS:
            raise validation_error(
                f"metadata has {len(value)} keys; the maximum is {MAX_METADATA_KEYS}"
            )
        for key, item in value.items():
            check_key(key, f"metadata key {key!r}")
            if key.startswith(RESERVED_PREFIX):
                raise validation_error(f"metadata key {key!r} is reserved for the service")
            check_metadata_value(item, f"metadata[{key}]")
        return dict(value)

    def _strategy(self, store: MemoryStore, strategy_id: Any) -> Strategy | None:
        if strategy_id is None:
            return None
        if (
            not isinstance(strategy_id, str)
            or not _RECORD_STRATEGY_ID.fullmatch(strategy_id)
            or len(strategy_id) > 100
        ):
            raise validation_error(f"memoryStrategyId {strategy_id!r} does not match the pattern")
        strategy = store.strategies.get(strategy_id)
        if strategy is None:
            raise validation_error(
                f"memoryStrategyId {strategy_id!r} is not a strategy of memory {store.memory_id}"
            )
        return strategy

    def _snapshot(self, record: Record, now: float) -> Record | None:
        view = self._view(record, now)
        if view is None:
            return None
        return dataclasses.replace(
            view, namespaces=list(view.namespaces), metadata=dict(view.metadata), shown=None
        )

    def _view(self, record: Record, now: float) -> Record | None:
        """The record as reads see it at ``now``: its last change shows only from
        ``visible_from``, until then what was shown before."""
        view = record.shown if record.visible_from > now else record
        if view is None or view.deleted_at is not None:
            return None
        return view if view.expires_at is None or view.expires_at > now else None

    def _select(self, store: MemoryStore, body: dict[str, Any], filters: Any) -> list[Record]:
        namespace, path = body.get("namespace"), body.get("namespacePath")
        if namespace is None and path is None:
            raise validation_error("either namespace or namespacePath is required")
        for name in (namespace, path):
            if name is not None:
                _namespace(name)
        checks = metadata_filters(filters, store.indexed_keys)
        now = self.now()
        out = []
        for stored in store.records.values():
            record = self._view(stored, now)
            if record is None:
                continue
            if namespace is not None and namespace not in record.namespaces:
                continue
            if path is not None and not any(n.startswith(path) for n in record.namespaces):
                continue
            if all(check(record) for check in checks):
                out.append(record)
        return out

    def _page(
        self, body: dict[str, Any], what: str, items: list[dict[str, Any]]
    ) -> tuple[int, dict[str, Any]]:
        size = body.get("maxResults", DEFAULT_PAGE)
        if not isinstance(size, int) or not 1 <= size <= 100:
            raise validation_error("maxResults must be between 1 and 100")
        start = 0
        token = body.get("nextToken")
        if token is not None:
            try:
                kind, offset = base64.urlsafe_b64decode(token.encode()).decode().split(":")
                start = int(offset)
            except (ValueError, AttributeError):
                raise validation_error("nextToken is not valid") from None
            if kind != what:
                raise validation_error("nextToken belongs to another operation")
        out: dict[str, Any] = {"memoryRecordSummaries": items[start : start + size]}
        if start + size < len(items):
            out["nextToken"] = base64.urlsafe_b64encode(f"{what}:{start + size}".encode()).decode()
        return 200, out


def _namespace(value: Any) -> str:
    if not isinstance(value, str) or not _NAMESPACE.fullmatch(value):
        raise validation_error(f"namespace {value!r} does not match the namespace pattern")
    if len(value) > MAX_NAMESPACE:
        raise validation_error(
            f"namespace has {len(value)} characters; the maximum is {MAX_NAMESPACE}"
        )
    return value


def _text(content: Any) -> str:
    text = content.get("text") if isinstance(content, dict) else None
    if not isinstance(text, str) or not text:
        raise validation_error("content.text is required")
    if len(text) > MAX_TEXT:
        raise validation_error(
            f"content.text has {len(text)} characters; the maximum is {MAX_TEXT}"
        )
    return text


def _kept(metadata: dict[str, dict[str, Any]], strategy: Strategy | None) -> dict[str, Any]:
    """The metadata a record keeps: with a strategy, only its schema's keys."""
    if strategy is None:
        return metadata
    return {k: v for k, v in metadata.items() if k in strategy.schema}


def _failure(record_id: Any, code: int, message: str) -> dict[str, Any]:
    return {
        "memoryRecordId": record_id if isinstance(record_id, str) else "mem-" + "0" * 36,
        "status": "FAILED",
        "errorCode": code,
        "errorMessage": message,
    }


def serve(emulator: AgentCoreEmulator) -> None:
    """Serve in the foreground, saying where, until interrupted (the emulator commands)."""
    print(f"agentcore emulator on {emulator.url}", file=sys.stderr, flush=True)
    try:
        emulator.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        emulator.server.server_close()


def indexed_keys(texts: list[str]) -> dict[str, str]:
    """``--indexed-key KEY:TYPE`` options as ``create_memory`` takes them."""
    indexed: dict[str, str] = {}
    for text in texts:
        key, _, kind = text.rpartition(":")
        if not key or kind not in VALUE_TYPES:
            raise ValueError(
                f"--indexed-key {text!r}: expected KEY:TYPE, TYPE one of {VALUE_TYPES}"
            )
        indexed[key] = kind
    return indexed


def indexed_key_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--indexed-key",
        action="append",
        default=[],
        metavar="KEY:TYPE",
        help="a metadata key the memories index for filtering, TYPE one of "
        f"{', '.join(VALUE_TYPES)} (repeatable; only indexed keys can be filtered)",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m healthd.testing.agentcore",
        description="Serve a local AgentCore Memory data-plane emulator on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--memory-id", action="append", default=[], help="memory to create (repeatable)"
    )
    indexed_key_option(parser)
    parser.add_argument("--read-after-write-delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    try:
        indexed = indexed_keys(args.indexed_key)
    except ValueError as exc:
        parser.error(str(exc))
    emulator = AgentCoreEmulator(port=args.port, read_after_write_delay=args.read_after_write_delay)
    for memory_id in args.memory_id:
        emulator.create_memory(memory_id, indexed_keys=indexed)
    serve(emulator)
    return 0


if __name__ == "__main__":
    sys.exit(main())
