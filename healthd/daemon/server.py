"""The HTTP endpoints: /metrics, /healthz, /readyz, POST /-/reload and the report page at /
(report.live).

/healthz and /readyz are answered first, before authentication, pacing or anything else, so
that no load on the other endpoints can get a healthy daemon restarted. Every other request
is paced to ``MAX_REQUESTS_PER_SECOND`` (a burst of ``PACER_BURST`` at once) without holding
a thread: the listener's waiting thread reads the start of each request line (``MSG_PEEK``;
under TLS a worker completes the handshake and reads it) and holds a request over the rate
until its turn, while health checks go at once to a pool of their own (to the workers when
it is busy). A request is read within ``REQUEST_SECONDS`` and answered within
``ANSWER_SECONDS``, or its connection is cut.

/metrics is rendered at most once per ``METRICS_MAX_AGE_SECONDS`` and whenever the runner's
view changes (end of a target's run, a source's pull), per exposition format (the
Prometheus text format, or OpenMetrics when the ``Accept`` header asks for it), gzipped when
``Accept-Encoding`` allows it, and served from that cache, so many scrapers cost a run next
to nothing. The listener keeps a backlog of ``BACKLOG`` pending connections; an accepted
connection waits without a thread until it sends something (and is closed when idle for
``IDLE_TIMEOUT_SECONDS``), then a bounded pool of ``WORKERS`` threads serves it, with the
same timeout on a client that stalls mid-request. TLS and basic auth come from the web
configuration file (:mod:`healthd.daemon.webconfig`).
"""

from __future__ import annotations

import gzip
import heapq
import io
import itertools
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from healthd._listen import ipv6_address
from healthd.daemon.webconfig import WebConfig
from healthd.report.live import LiveSite

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


BACKLOG = 128
WORKERS = 32
#: Threads for health checks first: clients holding every worker cannot keep them waiting
#: (when these are busy, a health check takes a worker)
HEALTH_WORKERS = 4
IDLE_TIMEOUT_SECONDS = 5.0
#: A request read (a TLS handshake included): a client that drips its bytes, each within the
#: idle timeout, is cut off after this and frees its thread
REQUEST_SECONDS = 15.0
#: A request read, the time its answer has (a reload, the page rebuilt on a loaded host)
ANSWER_SECONDS = 120.0
METRICS_MAX_AGE_SECONDS = 1.0
#: Requests answered per second at most (health checks aside); more wait their turn without
#: a thread, so scrapers in a tight loop cannot take the run's CPU (Prometheus scrapes every
#: 15 s or so).
MAX_REQUESTS_PER_SECOND = 40.0
PACER_BURST = 10
HEALTH_PATHS = ("/healthz", "/readyz")
_PEEK = 64
_HEALTH_LINES = tuple(
    f"{method} {path}".encode() for method in ("GET", "HEAD") for path in HEALTH_PATHS
)


def is_health_request(head: bytes) -> bool:
    """Whether the start of a request line asks for /healthz or /readyz."""
    for line in _HEALTH_LINES:
        if head.startswith(line) and head[len(line) : len(line) + 1] in (b" ", b"?"):
            return True
    return False


class Pacer:
    """A token bucket: ``burst`` requests at once, then ``rate`` a second."""

    def __init__(self, rate: float = MAX_REQUESTS_PER_SECOND, burst: int = PACER_BURST) -> None:
        self._interval = 1.0 / rate
        self._tolerance = (burst - 1) * self._interval
        self._lock = threading.Lock()
        self._due = 0.0  # the theoretical arrival time of the next request (GCRA)

    def reserve(self) -> float:
        """Take the next turn; how many seconds from now it is (0: at once)."""
        with self._lock:
            now = time.monotonic()
            due = max(self._due, now)
            delay = due - now - self._tolerance
            self._due = due + self._interval
        return max(delay, 0.0)

    def wait(self) -> None:
        delay = self.reserve()
        if delay > 0:
            time.sleep(delay)


class _PooledServer(WSGIServer):
    """Connections wait without a thread until they have something to read (a connection
    idle longer than ``IDLE_TIMEOUT_SECONDS`` is closed); health checks then go to a bounded
    pool at once, other requests when the pacer gives them their turn."""

    request_queue_size = BACKLOG
    allow_reuse_address = True
    tls: ssl.SSLContext | None = None

    def server_activate(self) -> None:
        super().server_activate()
        self.pacer = Pacer()
        self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="healthd-http")
        self._health_pool = ThreadPoolExecutor(HEALTH_WORKERS, thread_name_prefix="healthd-health")
        self._serving: dict[int, tuple[float, Any]] = {}  # id(socket) → deadline, socket
        self._serving_lock = threading.Lock()
        self._health_slots = threading.BoundedSemaphore(HEALTH_WORKERS)
        self._selector = selectors.DefaultSelector()
        self._waiting_lock = threading.Lock()
        self._held: list[tuple[float, int, Any, Any]] = []  # (due, n, request, address)
        self._order = itertools.count()
        self._closed = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._waiter = threading.Thread(
            target=self._wait_for_requests, name="healthd-http-wait", daemon=True
        )
        self._waiter.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._waiting_lock:
            self._selector.register(
                request, selectors.EVENT_READ, (client_address, time.monotonic())
            )
        self._wake()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass

    def _wait_for_requests(self) -> None:
        while not self._closed.is_set():
            with self._waiting_lock:
                timeout = 0.5 if not self._held else min(0.5, self._held[0][0] - time.monotonic())
            ready = self._selector.select(timeout=max(timeout, 0.0))
            now = time.monotonic()
            with self._waiting_lock:
                for key, _ in ready:
                    if key.fileobj is self._wake_r:
                        try:
                            self._wake_r.recv(4096)
                        except OSError:
                            pass
                        continue
                    self._selector.unregister(key.fileobj)
                    self._route(key.fileobj, key.data[0])
                while self._held and self._held[0][0] <= now:
                    _, _, request, address = heapq.heappop(self._held)
                    self._pool.submit(self._serve_one, request, address)
                for key in list(self._selector.get_map().values()):
                    if key.data is not None and now - key.data[1] > IDLE_TIMEOUT_SECONDS:
                        self._selector.unregister(key.fileobj)
                        self.shutdown_request(key.fileobj)  # type: ignore[arg-type]
            self._cut_overdue(now)

    def _cut_overdue(self, now: float) -> None:
        """End the requests past their bound (:meth:`bound`): their thread's read or write
        returns, and the thread closes the connection."""
        with self._serving_lock:
            overdue = [key for key, (due, _) in self._serving.items() if due <= now]
            requests = [self._serving.pop(key)[1] for key in overdue]
        for request in requests:
            try:
                request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _route(self, request: Any, address: Any) -> None:
        """A readable connection: a health check is served at once, anything else in its
        turn. Under TLS the request line is read after the handshake, by a worker."""
        if self.tls is not None:
            self._pool.submit(self._handshake, request, address)
            return
        try:
            head = request.recv(_PEEK, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:
            head = b""
        self._dispatch(request, address, head)

    def _dispatch(self, request: Any, address: Any, head: bytes) -> None:
        if is_health_request(head):
            self._serve_health(request, address)
            return
        delay = self.pacer.reserve()
        if delay <= 0:
            self._pool.submit(self._serve_one, request, address)
            return
        heapq.heappush(self._held, (time.monotonic() + delay, next(self._order), request, address))

    def _handshake(self, request: Any, address: Any) -> None:
        assert self.tls is not None
        conn: Any = request
        try:
            request.settimeout(IDLE_TIMEOUT_SECONDS)
            conn = self.tls.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
            self.bound(conn, REQUEST_SECONDS)  # (the handshake is the request's too)
            conn.do_handshake()
            head = conn.recv(8192)
        except (OSError, ssl.SSLError):
            self.shutdown_request(conn)
            return
        finally:
            self._unbound(conn)
        setattr(conn, "healthd_head", head)  # noqa: B010  (read already; the handler reads it first)
        if is_health_request(head):
            self._serve_health(conn, address)
            return
        with self._waiting_lock:
            self._dispatch(conn, address, head)
        self._wake()

    def _serve_health(self, request: Any, address: Any) -> None:
        """A health check in the health pool, or, when its threads are all busy (clients
        posing as health checks), in the workers' like any other request."""
        if not self._health_slots.acquire(blocking=False):
            self._pool.submit(self._serve_one, request, address)
            return

        def serve() -> None:
            try:
                self._serve_one(request, address)
            finally:
                self._health_slots.release()

        self._health_pool.submit(serve)

    def _serve_one(self, request: Any, client_address: Any) -> None:
        self.bound(request, REQUEST_SECONDS)
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self._unbound(request)
            self.shutdown_request(request)

    def bound(self, request: Any, seconds: float) -> None:
        """Cut ``request``'s connection ``seconds`` from now (the handler lengthens the bound
        once it has read the request: :data:`ANSWER_SECONDS`)."""
        with self._serving_lock:
            self._serving[id(request)] = (time.monotonic() + seconds, request)

    def _unbound(self, request: Any) -> None:
        with self._serving_lock:
            self._serving.pop(id(request), None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away or idled out is not healthd's problem

    def server_close(self) -> None:
        super().server_close()
        if not hasattr(self, "_closed"):
            return  # the bind failed: nothing was started (socketserver closes and re-raises)
        self._closed.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._health_pool.shutdown(wait=False, cancel_futures=True)
        with self._waiting_lock:
            for _, _, request, _ in self._held:
                self.shutdown_request(request)
            self._held.clear()


class _QuietHandler(WSGIRequestHandler):
    timeout = IDLE_TIMEOUT_SECONDS  # an idle or slow client frees its thread after this

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def parse_request(self) -> bool:
        read = super().parse_request()
        if read and isinstance(self.server, _PooledServer):
            self.server.bound(self.connection, ANSWER_SECONDS)  # the request is in
        return read

    def setup(self) -> None:
        super().setup()
        head = getattr(self.connection, "healthd_head", b"")
        if head:  # under TLS the start of the request was read to route it
            self.rfile = io.BufferedReader(_Prefixed(head, self.rfile))

    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        if isinstance(self.connection, ssl.SSLSocket):
            environ["HTTPS"] = "on"
            environ["wsgi.url_scheme"] = "https"
        return environ

    def handle(self) -> None:
        try:
            super().handle()
        except (TimeoutError, ConnectionError, ssl.SSLError):
            pass


class _Prefixed(io.RawIOBase):
    """Bytes already read from a connection, then the connection."""

    def __init__(self, head: bytes, rest: Any) -> None:
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read1(len(buffer)) if hasattr(self._rest, "read1") else b""
        buffer[: len(data)] = data
        return len(data)


class CachedMetrics:
    """The exposition, rendered again only when the view changed or it is older than
    ``max_age`` seconds (the lag gauge moves with the clock); one per format, and its
    gzipped bytes once asked for."""

    def __init__(
        self,
        registry: CollectorRegistry,
        version: Callable[[], int],
        max_age: float = METRICS_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._registry = registry
        self._version = version
        self._max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        self._bodies: dict[tuple[str, bool], bytes] = {}
        self._key: tuple[int, float] | None = None

    def body(self, accept: str = "", gzipped: bool = False) -> tuple[bytes, str]:
        """The body and its content type for an ``Accept`` header."""
        try:
            encoder, content_type = choose_encoder(accept)
        except (TypeError, ValueError):  # a version it cannot compare ('version=abc'): the default
            encoder, content_type = choose_encoder("")
        with self._lock:
            version, now = self._version(), self._clock()
            if self._key is None or self._key[0] != version or now - self._key[1] > self._max_age:
                self._bodies.clear()
                self._key = (version, now)
            plain = self._bodies.get((content_type, False))
            if plain is None:
                plain = self._bodies[(content_type, False)] = encoder(self._registry)
            if not gzipped:
                return plain, content_type
            packed = self._bodies.get((content_type, True))
            if packed is None:
                packed = self._bodies[(content_type, True)] = gzip.compress(plain, 6)
            return packed, content_type


def accepts_gzip(header: str) -> bool:
    """Whether an ``Accept-Encoding`` header allows gzip (``gzip;q=0`` refuses it)."""
    for part in (header or "").split(","):
        name, _, params = part.partition(";")
        if name.strip().lower() not in ("gzip", "*"):
            continue
        q = params.strip().lower()
        if q.startswith("q="):
            try:
                return float(q[2:]) > 0
            except ValueError:
                return False
        return True
    return False


_TEXT = [("Content-Type", "text/plain; charset=utf-8")]


def build_app(
    registry: CollectorRegistry,
    view: Callable[[], dict[str, Any]],
    ready: Callable[[], bool],
    version: Callable[[], int] | None = None,
    readiness: Callable[[], str | None] | None = None,
    *,
    web: Callable[[], WebConfig] | None = None,
    reload: Callable[[], str | None] | None = None,
) -> WSGIApplication:
    """``web`` gives the current web configuration (basic auth); ``reload`` reloads the
    configuration for ``POST /-/reload`` and returns None, or why it was refused."""
    counter = iter(range(1, 1 << 62))
    metrics = CachedMetrics(registry, version or (lambda: next(counter)))
    site = LiveSite()

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/healthz":  # first, before anything else: liveness must never wait
            start_response("200 OK", list(_TEXT))
            return [b"ok\n"]
        if path == "/readyz":
            if ready():
                start_response("200 OK", list(_TEXT))
                return [b"ready\n"]
            reason = (readiness() if readiness else None) or (
                "no results to serve yet (no target has measured any event)"
            )
            start_response("503 Service Unavailable", list(_TEXT))
            return [f"not ready: {reason}\n".encode()]
        if web is not None and not web().authorized(environ.get("HTTP_AUTHORIZATION")):
            start_response(
                "401 Unauthorized",
                [*_TEXT, ("WWW-Authenticate", 'Basic realm="healthd", charset="UTF-8"')],
            )
            return [b"unauthorized\n"]
        if path == "/metrics":
            gzipped = accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING", ""))
            body, content_type = metrics.body(environ.get("HTTP_ACCEPT", ""), gzipped)
            headers = [
                ("Content-Type", content_type),
                ("Content-Length", str(len(body))),
                ("Vary", "Accept, Accept-Encoding"),
            ]
            if gzipped:
                headers.append(("Content-Encoding", "gzip"))
            start_response("200 OK", headers)
            return [body]
        if path == "/-/reload":
            if environ.get("REQUEST_METHOD") not in ("POST", "PUT") or reload is None:
                start_response("405 Method Not Allowed", [*_TEXT, ("Allow", "POST, PUT")])
                return [b"reload with POST\n"]
            refused = reload()
            if refused:
                start_response("500 Internal Server Error", list(_TEXT))
                return [f"configuration not reloaded: {refused}\n".encode()]
            start_response("200 OK", list(_TEXT))
            return [b"configuration reloaded\n"]
        if site.serves(path):
            return site.respond(path, view, ready, start_response)
        start_response("404 Not Found", list(_TEXT))
        return [b"not found; try /, /metrics, /healthz or /readyz\n"]

    def answer(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        body = app(environ, start_response)
        if environ.get("REQUEST_METHOD") != "HEAD":
            return body
        # HEAD: GET's status and headers (its Content-Length too, as RFC 9110 allows), no
        # body; wsgiref would send the whole body
        close = getattr(body, "close", None)
        if close is not None:
            close()
        return []

    return answer


class _PooledServer6(_PooledServer):
    address_family = socket.AF_INET6


def bind_address(host: str) -> tuple[str, type[_PooledServer]]:
    """The address to bind for ``server.host`` and the server class of its family: an IPv6
    address, bare (``::``) or in brackets as in a URL (``[::1]``), needs an IPv6 socket,
    which socketserver never picks by itself; anything else binds as IPv4 did."""
    bare = ipv6_address(host)
    return (host, _PooledServer) if bare is None else (bare, _PooledServer6)


class HttpServer:
    def __init__(
        self, host: str, port: int, app: WSGIApplication, tls: ssl.SSLContext | None = None
    ) -> None:
        address, server_class = bind_address(host)
        self._server = make_server(
            address, port, app, server_class=server_class, handler_class=_QuietHandler
        )
        self._server.tls = tls
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="healthd-http",
            daemon=True,
        )

    def set_tls(self, tls: ssl.SSLContext | None) -> None:
        """TLS for the connections accepted from now on (a reloaded web configuration)."""
        self._server.tls = tls

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout)
