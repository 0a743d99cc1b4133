"""`healthd serve-memory`'s server in a thread on 127.0.0.1, with hooks for tests.

Namespaces named in ``protected`` exist and are not shadows. ``fail_next`` queues (path
suffix, status) answers to give before the real one; ``requests`` records (method, path,
Authorization) of every request; ``token`` makes every request need ``Bearer <token>``;
``changes=False`` answers the optional ``changes`` operation with 501; ``bad_query_body``
and ``bad_changes_body`` replace every query's and every changes' answer; ``lose_next`` lists
path suffixes whose next request is carried out and then answered by closing the
connection (the answer lost on the way, as a reset or a proxy's timeout loses it);
``namespace_text`` is the raw JSON text of every namespace answer (200);
``redirect_writes`` answers every POST with a 307 to that URL plus the operation's name.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from healthd.memory_server import MemoryServer, send


class MemoryService(MemoryServer):
    def __init__(
        self,
        protected: tuple[str, ...] = (),
        changes: bool = True,
        token: str | None = None,
        **server: Any,
    ) -> None:
        super().__init__(protected=protected, **server)
        self.changes = changes
        self.token = token
        self.fail_next: list[tuple[str, int]] = []
        self.requests: list[tuple[str, str, str | None]] = []
        self.bad_query_body: dict[str, Any] | None = None
        self.bad_changes_body: dict[str, Any] | None = None
        self.lose_next: list[str] = []
        self.namespace_text: bytes | None = None
        self.redirect_writes: str | None = None
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def applied(self) -> dict[str, set[str]]:
        return self._applied

    def __enter__(self) -> MemoryService:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.close()

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        auth = request.headers.get("Authorization")
        path = request.path
        self.requests.append((request.command, path, auth))
        answer = self._hook(path, auth)
        lost = next((s for s in self.lose_next if path.endswith(s)), None)
        if answer is None and request.command == "GET" and self.namespace_text is not None:
            request.send_response(200)
            request.send_header("Content-Type", "application/json")
            request.send_header("Content-Length", str(len(self.namespace_text)))
            request.end_headers()
            request.wfile.write(self.namespace_text)
            return
        if answer is None and request.command == "POST" and self.redirect_writes is not None:
            request.rfile.read(int(request.headers.get("Content-Length") or 0))
            request.send_response(307)
            request.send_header("Location", f"{self.redirect_writes}/{path.rsplit('/', 1)[1]}")
            request.send_header("Content-Length", "0")
            request.end_headers()
            return
        if answer is None and lost is not None:
            self.lose_next.remove(lost)
            raw = request.rfile.read(int(request.headers.get("Content-Length") or 0))
            with self._lock:  # done, and its answer never arrives
                self.route(request.command, path, json.loads(raw) if raw else None)
            request.close_connection = True
            request.connection.shutdown(socket.SHUT_RDWR)
            return
        if answer is None:
            super()._handle(request)
            return
        length = int(request.headers.get("Content-Length") or 0)
        request.rfile.read(length)  # keep the connection usable
        send(request, *answer)

    def _hook(self, path: str, auth: str | None) -> tuple[int, Any] | None:
        for i, (suffix, status) in enumerate(self.fail_next):
            if path.endswith(suffix):
                del self.fail_next[i]
                return status, {"message": "injected failure"}
        if self.token and auth != f"Bearer {self.token}":
            return 401, {"message": "no"}
        if path.endswith("/changes") and not self.changes:
            return 501, {"message": "not offered"}
        if path.endswith("/query") and self.bad_query_body is not None:
            return 200, self.bad_query_body
        if path.endswith("/changes") and self.bad_changes_body is not None:
            return 200, self.bad_changes_body
        return None
