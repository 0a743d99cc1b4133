"""`healthd serve-memory`: the reference memory served over the HTTP memory contract.

A working example of ``docs/memory-http-api.yaml`` for teams writing their own service, and
the server the ``http`` target is exercised against end to end. Every namespace is a
reference memory of its own, created as a shadow by its first reset; namespaces given with
``--protect`` exist and are not shadows, so writes to them are refused (409). Applying an
event is idempotent by its id. Bad requests get 400 with a message naming the field. A
connection whose client sends nothing for ``idle_seconds`` (60) is closed, and so is one
whose request, from its first byte to the end of its body, takes longer than
``request_seconds`` (60) to arrive, however it trickles in (a body cut off so gets 408).
At most ``max_connections`` (64) are served at once; one more gets 503 and is closed.
"""

from __future__ import annotations

import io
import json
import signal
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from healthd import _json
from healthd._listen import ipv6_address, url_host
from healthd.errors import HealthdError
from healthd.memory.reference import ReferenceMemory
from healthd.model import DOMAINS, Probe
from healthd.timeline import event_from_dict, format_timestamp, parse_timestamp

_PREFIX = "/v1/namespaces/"
_MAX_BODY = 1 << 20
_HELD = """
CREATE TABLE IF NOT EXISTS serve_memory_namespaces (namespace TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS serve_memory_events (
    namespace TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (namespace, id)
);
"""


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _RequestClock(io.RawIOBase):
    """A connection's reading side that holds each request to a total time: from the first
    bytes received after :meth:`start`, every read must end within ``request_seconds``
    (TimeoutError past it), as well as within ``idle_seconds`` of the one before."""

    def __init__(self, connection: socket.socket, idle_seconds: float, request_seconds: float):
        self._connection = connection
        self._idle = idle_seconds
        self._request = request_seconds
        self._deadline: float | None = None

    def start(self) -> None:
        """A new request: its clock starts with the next bytes received."""
        self._deadline = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._deadline is None:
            self._connection.settimeout(self._idle)
        else:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the request took over {self._request:g} s to arrive")
            self._connection.settimeout(min(self._idle, left))
        try:
            got = self._connection.recv_into(buffer)
        except TimeoutError:
            if self._deadline is not None and time.monotonic() >= self._deadline:
                raise TimeoutError(f"the request took over {self._request:g} s to arrive") from None
            raise TimeoutError(f"nothing received for {self._idle:g} s") from None
        if got and self._deadline is None:
            self._deadline = time.monotonic() + self._request
        return got


class _BoundedHTTPServer(ThreadingHTTPServer):
    """A thread per connection, at most ``max_connections`` at once: one more is answered
    503 and closed at once, so clients that open connections and hold them idle cannot make
    the server start threads without end."""

    def __init__(self, address: tuple[str, int], handler: Any, max_connections: int) -> None:
        self.max_connections = max_connections
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            message = json.dumps({"message": f"over {self.max_connections} connections at once"})
            try:
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    b"Connection: close\r\nRetry-After: 1\r\n"
                    + f"Content-Length: {len(message)}\r\n\r\n{message}".encode()
                )
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _BoundedHTTPServer6(_BoundedHTTPServer):
    address_family = socket.AF_INET6


class MemoryServer:
    """The contract's operations over reference memories, one per namespace."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = ":memory:",
        protected: Iterable[str] = (),
        idle_seconds: float = 60.0,
        request_seconds: float = 60.0,
        max_connections: int = 64,
    ) -> None:
        self.path = path
        self.protected = set(protected)
        self.memories: dict[str, ReferenceMemory] = {}
        self._applied: dict[str, set[str]] = {}
        self._lock = threading.Lock()
        self._closed = False
        # which namespaces the file holds and the events each has applied, so that a
        # restarted server goes on where it stopped
        self._held = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._held.executescript(_HELD)
        # synced as the memories are (ReferenceMemory.disk_pragmas), not at every commit: a
        # crash of the process loses nothing committed, and the list is written after the event
        self._held.execute("PRAGMA synchronous=NORMAL")
        for (namespace,) in self._held.execute("SELECT namespace FROM serve_memory_namespaces"):
            self.memories[namespace] = ReferenceMemory(path=path, namespace=namespace)
            self._applied[namespace] = set()
        for namespace, event_id in self._held.execute(
            "SELECT namespace, id FROM serve_memory_events"
        ):
            self._applied[namespace].add(event_id)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16  # one send per response: no Nagle/delayed-ACK stall
            timeout = idle_seconds  # a client silent this long (mid-request too) is let go

            def setup(self) -> None:
                super().setup()
                self.clock = _RequestClock(self.connection, idle_seconds, request_seconds)
                self.rfile = io.BufferedReader(self.clock)

            def handle_one_request(self) -> None:
                self.clock.start()
                super().handle_one_request()

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server._handle(self)

            def do_POST(self) -> None:
                server._handle(self)

        bare = ipv6_address(host)
        server_class = _BoundedHTTPServer if bare is None else _BoundedHTTPServer6
        self.httpd = server_class((bare or host, port), Handler, max_connections)
        self.httpd.daemon_threads = True
        self.url = f"http://{url_host(host)}:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.server_close()
        with self._lock:  # (a request under way finishes first; one after it gets 503)
            self._closed = True
            for memory in self.memories.values():
                memory.close()
            self._held.close()

    # -- HTTP -------------------------------------------------------------------------------

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        try:
            try:
                raw = _body(request)
            except BadRequest:  # (what is left of the body is no next request)
                request.close_connection = True
                raise
            except TimeoutError as exc:  # (RFC 9110, 15.5.9)
                request.close_connection = True
                raise BadRequest(408, f"request body not received: {exc}") from None
            try:
                body = _json.loads(raw) if raw else None
            except _json.BadJSON as exc:
                raise BadRequest(400, f"request body is not JSON: {exc}") from None
            with self._lock:
                if self._closed:
                    raise BadRequest(503, "the server is stopping")
                status, payload = self.route(request.command, _origin_form(request.path), body)
        except BadRequest as exc:
            status, payload = exc.status, {"message": str(exc)}
        except HealthdError as exc:
            status, payload = 400, {"message": str(exc)}
        send(request, status, payload)

    def route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if not path.startswith(_PREFIX):
            raise BadRequest(404, f"no such path {path}")
        name, _, operation = path[len(_PREFIX) :].split("?", maxsplit=1)[0].partition("/")
        namespace = unquote(name)
        if not namespace:
            raise BadRequest(404, "no namespace in the path")
        if method == "GET" and operation == "":
            if namespace in self.protected:
                return 200, {"namespace": namespace, "shadow": False}
            if namespace in self.memories:
                return 200, {"namespace": namespace, "shadow": True}
            raise BadRequest(404, f"no namespace {namespace!r} yet; the first reset creates it")
        if method != "POST" or operation not in ("reset", "events", "query", "changes"):
            raise BadRequest(404, f"no operation {method} {path}")
        if namespace in self.protected:
            raise BadRequest(409, f"namespace {namespace!r} is not a shadow; nothing was touched")
        if operation == "reset":
            self._reset(namespace)
            return 204, None
        memory = self.memories.get(namespace)
        if memory is None:
            raise BadRequest(404, f"no namespace {namespace!r} yet; reset it first")
        if operation == "events":
            return self._apply(namespace, memory, body)
        if operation == "query":
            return self._query(memory, body)
        return self._changes(memory, body)

    # -- operations -------------------------------------------------------------------------

    def _reset(self, namespace: str) -> None:
        memory = self.memories.get(namespace)
        if memory is None:
            self.memories[namespace] = ReferenceMemory(path=self.path, namespace=namespace)
            self.memories[namespace].reset()
        else:
            memory.reset()
        self._applied[namespace] = set()
        with self._held:
            self._held.execute("DELETE FROM serve_memory_events WHERE namespace = ?", (namespace,))
            self._held.execute(
                "INSERT OR IGNORE INTO serve_memory_namespaces VALUES (?)", (namespace,)
            )

    def _apply(self, namespace: str, memory: ReferenceMemory, body: Any) -> tuple[int, None]:
        if not isinstance(body, dict):
            raise BadRequest(400, "body: expected a change event object")
        text = body.pop("text", None)  # the event as a statement, for services that keep text
        if text is not None and not isinstance(text, str):
            raise BadRequest(400, "body, field 'text': expected a string")
        event = event_from_dict(body)
        applied = self._applied[namespace]
        if event.id not in applied:
            memory.apply(event)
            applied.add(event.id)
            self._held.execute(
                "INSERT OR IGNORE INTO serve_memory_events VALUES (?, ?)", (namespace, event.id)
            )
        return 204, None

    def _query(self, memory: ReferenceMemory, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict) or not isinstance(body.get("probe"), dict):
            raise BadRequest(400, "body: expected an object with 'probe', 'at' and 'k'")
        raw = body["probe"]
        for name in ("id", "question", "subject", "predicate", "domain"):
            if not isinstance(raw.get(name), str):
                raise BadRequest(400, f"body, field 'probe.{name}': expected a string")
        if raw["domain"] not in DOMAINS:
            raise BadRequest(400, f"body, field 'probe.domain': unknown domain {raw['domain']!r}")
        k = body.get("k")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise BadRequest(400, "body, field 'k': expected a whole number of at least 1")
        at = parse_timestamp(body.get("at"), field="at")
        probe = Probe(raw["id"], raw["question"], raw["subject"], raw["predicate"], raw["domain"])
        memory.top_k = k  # (the one asking says how many; the lock is held)
        answer = memory.answer(probe, at)
        return 200, {
            "facts": [
                {
                    "subject": f.subject,
                    "predicate": f.predicate,
                    "value": f.value,
                    "domain": f.domain,
                    "record_id": f.record_id,
                    "written_at": format_timestamp(f.written_at),
                    "validated_at": format_timestamp(f.validated_at) if f.validated_at else None,
                    "flags": sorted(f.flags),
                }
                for f in answer.facts[:k]
            ]
        }

    def _changes(self, memory: ReferenceMemory, body: Any) -> tuple[int, dict[str, Any]]:
        if not isinstance(body, dict):
            raise BadRequest(400, "body: expected an object with 'until'")
        keys = memory.changed_keys(parse_timestamp(body.get("until"), field="until"))
        return 200, {
            "keys": [{"subject": k.subject, "predicate": k.predicate} for k in sorted(keys)]
        }


def _origin_form(target: str) -> str:
    """The path (and query) of a request target, which may be in absolute form
    (``http://host/v1/...``; RFC 9112, 3.2.2)."""
    if not target.lower().startswith(("http://", "https://")):
        return target
    parts = urlsplit(target)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _body(request: BaseHTTPRequestHandler) -> bytes:
    """The request's body, by its ``Content-Length`` or its chunks (RFC 9112, 6.3: a
    ``Transfer-Encoding`` overrides the length); at most ``_MAX_BODY`` bytes."""
    lines = request.headers.get_all("Transfer-Encoding")
    if lines is not None:  # (its lines are one list; RFC 9110, 5.3)
        coding = ", ".join(lines)
        codings = [c.strip().lower() for c in coding.split(",") if c.strip()]
        if codings[-1:] != ["chunked"]:
            raise BadRequest(
                400,
                f"Transfer-Encoding {coding[:40]!r}: chunked is not the last coding, so "
                "the body has no known end",
            )
        if codings != ["chunked"]:
            raise BadRequest(501, f"Transfer-Encoding {coding[:40]!r}: only chunked is read")
        if "Content-Length" in request.headers or request.request_version == "HTTP/1.0":
            request.close_connection = True  # (a proxy may have framed it otherwise)
        return _chunked(request.rfile)
    given = {v.strip() for v in ",".join(request.headers.get_all("Content-Length", [])).split(",")}
    if len(given) > 1:  # ("42, 42" is one length; RFC 9110, 8.6)
        shown = " and ".join(repr(v[:20]) for v in sorted(given)[:2])
        raise BadRequest(400, f"Content-Length given as {shown}: one body has one length")
    declared = given.pop() or "0"
    if not declared.isascii() or not declared.isdigit():
        raise BadRequest(400, f"Content-Length {declared[:40]!r} is not a byte count")
    length = int(declared[:20])
    if length > _MAX_BODY:
        raise BadRequest(413, f"request body over {_MAX_BODY} bytes")
    return request.rfile.read(length) if length else b""


_HEX = frozenset(b"0123456789abcdefABCDEF")


def _chunked(stream: io.BufferedIOBase) -> bytes:
    """A chunked body (RFC 9112, 7.1): chunks up to the last, of size 0, then the trailer
    section, which is read and dropped. What frames the chunks (sizes, extensions, line ends,
    trailers) is bounded as the body is, or 1-byte chunks with long extensions are read on
    to a thousand times the body's limit."""
    body = bytearray()
    framing = 0
    while True:
        line = stream.readline(1024)
        framing += len(line) + 2  # (and the line end after the chunk)
        size = line.split(b";", 1)[0].strip()  # (a chunk extension is ignored)
        if not line.endswith(b"\n") or not size or len(size) > 8 or not set(size) <= _HEX:
            raise BadRequest(400, f"chunked body: chunk size {line[:40]!r} is not hexadecimal")
        length = int(size, 16)
        if len(body) + length > _MAX_BODY or framing > _MAX_BODY:
            raise BadRequest(413, f"request body over {_MAX_BODY} bytes")
        if length == 0:
            break
        chunk = stream.read(length)
        if len(chunk) < length or stream.readline(3) not in (b"\r\n", b"\n"):
            raise BadRequest(400, "chunked body cut short (a chunk shorter than its size)")
        body += chunk
    for _ in range(100):  # the trailer section, up to its empty line
        line = stream.readline(1 << 16)
        framing += len(line)
        if line in (b"\r\n", b"\n", b""):
            return bytes(body)
        if framing > _MAX_BODY:
            raise BadRequest(413, f"request body over {_MAX_BODY} bytes (in its trailers)")
    raise BadRequest(400, "chunked body: a trailer section of over 100 lines")


def send(request: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
    """Answer with ``payload`` as JSON (no body when None)."""
    data = b"" if payload is None else json.dumps(payload).encode()
    request.send_response(status)
    if payload is not None:
        request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", str(len(data)))
    if request.close_connection:
        request.send_header("Connection", "close")
    request.end_headers()
    request.wfile.write(data)


def serve(*, host: str, port: int, path: str | None, protected: Iterable[str]) -> int:
    """Run until SIGTERM or SIGINT; exit 0."""
    try:
        server = MemoryServer(host=host, port=port, path=path or ":memory:", protected=protected)
    except sqlite3.Error as exc:
        raise HealthdError(f"serve-memory: cannot open --path {path!r}: {exc}") from None
    except OSError as exc:
        raise HealthdError(
            f"serve-memory: cannot listen on {host}:{port}: {exc.strerror}"
        ) from None

    def stop(signum: int, frame: object) -> None:
        threading.Thread(target=server.httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        f"healthd serve-memory: the reference memory on {server.url} "
        f"({path or 'in memory'}); contract: docs/memory-http-api.yaml",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.httpd.serve_forever()
    finally:
        server.close()
    return 0
