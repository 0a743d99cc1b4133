"""A memory service that implements docs/memory-http-api.yaml, on 127.0.0.1, for tests.

Each namespace is a reference memory. Namespaces named in ``protected`` exist and are not
shadows. ``fail_next`` queues (path suffix, status) answers to give before the real one;
``requests`` records (method, path, Authorization) of every request.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from healthd.memory.reference import ReferenceMemory
from healthd.model import Probe
from healthd.timeline import event_from_dict, format_timestamp, parse_timestamp


class MemoryService:
    def __init__(
        self, protected: tuple[str, ...] = (), changes: bool = True, token: str | None = None
    ) -> None:
        self.memories: dict[str, ReferenceMemory] = {}
        self.applied: dict[str, set[str]] = {}
        self.protected = set(protected)
        self.changes = changes
        self.token = token
        self.fail_next: list[tuple[str, int]] = []
        self.requests: list[tuple[str, str, str | None]] = []
        self.bad_query_body: dict | None = None
        self._lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                service.handle(self, "GET")

            def do_POST(self):
                service.handle(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> MemoryService:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def handle(self, request: BaseHTTPRequestHandler, method: str) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = json.loads(request.rfile.read(length)) if length else None
        with self._lock:
            self.requests.append((method, request.path, request.headers.get("Authorization")))
            status, payload = self._route(
                method, request.path, body, request.headers.get("Authorization")
            )
        data = b"" if payload is None else json.dumps(payload).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def _route(self, method: str, path: str, body, auth):
        for i, (suffix, status) in enumerate(self.fail_next):
            if path.endswith(suffix):
                del self.fail_next[i]
                return status, {"message": "injected failure"}
        if self.token and auth != f"Bearer {self.token}":
            return 401, {"message": "no"}
        parts = path.split("/")
        if len(parts) < 4 or parts[1:3] != ["v1", "namespaces"]:
            return 404, {"message": "not found"}
        ns, op = unquote(parts[3]), (parts[4] if len(parts) > 4 else "")
        if method == "GET" and op == "":
            if ns in self.protected:
                return 200, {"namespace": ns, "shadow": False}
            if ns in self.memories:
                return 200, {"namespace": ns, "shadow": True}
            return 404, {"message": "no such namespace"}
        if ns in self.protected:
            return 409, {"message": "not a shadow"}
        if op == "reset":
            if ns in self.memories:
                self.memories[ns].reset()
            else:
                self.memories[ns] = ReferenceMemory(namespace=ns)
            self.applied[ns] = set()
            return 204, None
        memory = self.memories.get(ns)
        if memory is None:
            return 404, {"message": "reset first"}
        if op == "events":
            event = event_from_dict(body)
            if event.id not in self.applied[ns]:
                self.applied[ns].add(event.id)
                memory.apply(event)
            return 204, None
        if op == "query":
            if self.bad_query_body is not None:
                return 200, self.bad_query_body
            p = body["probe"]
            probe = Probe(p["id"], p["question"], p["subject"], p["predicate"], p["domain"])
            answer = memory.answer(probe, parse_timestamp(body["at"]))
            return 200, {
                "facts": [
                    {
                        "subject": f.subject,
                        "predicate": f.predicate,
                        "value": f.value,
                        "domain": f.domain,
                        "record_id": f.record_id,
                        "written_at": format_timestamp(f.written_at),
                        "validated_at": format_timestamp(f.validated_at)
                        if f.validated_at
                        else None,
                        "flags": sorted(f.flags),
                    }
                    for f in answer.facts[: body["k"]]
                ]
            }
        if op == "changes":
            if not self.changes:
                return 501, {"message": "not offered"}
            keys = memory.changed_keys(parse_timestamp(body["until"]))
            return 200, {
                "keys": [{"subject": k.subject, "predicate": k.predicate} for k in sorted(keys)]
            }
        return 404, {"message": "not found"}
