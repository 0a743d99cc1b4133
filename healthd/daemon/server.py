"""The HTTP endpoints: /metrics, /healthz, /readyz and the report page at / (report.live).

/metrics is rendered at most once per ``METRICS_MAX_AGE_SECONDS`` and whenever the runner's
view changes (end of a target's run, a source's pull), and served from that cache, so many
scrapers cost a run next to nothing; requests are also paced to ``MAX_REQUESTS_PER_SECOND``. The listener keeps a backlog of ``BACKLOG`` pending
connections; an accepted connection waits without a thread until it sends something (and is
closed when idle for ``IDLE_TIMEOUT_SECONDS``), then a bounded pool of ``WORKERS`` threads
serves it, with the same timeout on a client that stalls mid-request.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from healthd.report.live import LiveSite

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


BACKLOG = 128
WORKERS = 32
IDLE_TIMEOUT_SECONDS = 5.0
METRICS_MAX_AGE_SECONDS = 1.0
#: Requests answered per second at most; more wait their turn (asleep, costing no CPU), so
#: scrapers in a tight loop cannot take the run's CPU (Prometheus scrapes every 15 s or so).
MAX_REQUESTS_PER_SECOND = 40.0


class Pacer:
    """A token bucket: ``burst`` requests at once, then ``rate`` a second; a request over
    the rate sleeps until its turn."""

    def __init__(self, rate: float = MAX_REQUESTS_PER_SECOND, burst: int = 10) -> None:
        self._interval = 1.0 / rate
        self._tolerance = (burst - 1) * self._interval
        self._lock = threading.Lock()
        self._due = 0.0  # the theoretical arrival time of the next request (GCRA)

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            due = max(self._due, now)
            delay = due - now - self._tolerance
            self._due = due + self._interval
        if delay > 0:
            time.sleep(delay)


class _PooledServer(WSGIServer):
    """Connections wait without a thread until they have something to read (a connection
    idle longer than ``IDLE_TIMEOUT_SECONDS`` is closed); then a bounded pool serves them."""

    request_queue_size = BACKLOG
    allow_reuse_address = True

    def server_activate(self) -> None:
        super().server_activate()
        self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="healthd-http")
        self._selector = selectors.DefaultSelector()
        self._waiting_lock = threading.Lock()
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
        self._wake_w.send(b"\0")

    def _wait_for_requests(self) -> None:
        while not self._closed.is_set():
            ready = self._selector.select(timeout=0.5)
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
                    self._pool.submit(self._serve_one, key.fileobj, key.data[0])
                for key in list(self._selector.get_map().values()):
                    if key.data is not None and now - key.data[1] > IDLE_TIMEOUT_SECONDS:
                        self._selector.unregister(key.fileobj)
                        self.shutdown_request(key.fileobj)  # type: ignore[arg-type]

    def _serve_one(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away or idled out is not healthd's problem

    def server_close(self) -> None:
        super().server_close()
        if not hasattr(self, "_closed"):
            return  # the bind failed: nothing was started (socketserver closes and re-raises)
        self._closed.set()
        self._pool.shutdown(wait=False, cancel_futures=True)


class _QuietHandler(WSGIRequestHandler):
    timeout = IDLE_TIMEOUT_SECONDS  # an idle or slow client frees its thread after this

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (TimeoutError, ConnectionError):
            pass


class CachedMetrics:
    """The exposition text, rendered again only when the view changed or it is older than
    ``max_age`` seconds (the lag gauge moves with the clock)."""

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
        self._body = b""
        self._key: tuple[int, float] | None = None

    def body(self) -> bytes:
        with self._lock:
            version, now = self._version(), self._clock()
            if self._key is None or self._key[0] != version or now - self._key[1] > self._max_age:
                self._body = generate_latest(self._registry)
                self._key = (version, now)
            return self._body


def build_app(
    registry: CollectorRegistry,
    view: Callable[[], dict[str, Any]],
    ready: Callable[[], bool],
    version: Callable[[], int] | None = None,
) -> WSGIApplication:
    counter = iter(range(1, 1 << 62))
    metrics = CachedMetrics(registry, version or (lambda: next(counter)))
    site = LiveSite()

    pacer = Pacer()

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        pacer.wait()
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            body = metrics.body()
            start_response(
                "200 OK",
                [("Content-Type", CONTENT_TYPE_LATEST), ("Content-Length", str(len(body)))],
            )
            return [body]
        if path == "/healthz":
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"ok\n"]
        if path == "/readyz":
            if ready():
                start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
                return [b"ready\n"]
            start_response(
                "503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8")]
            )
            return [b"not ready: no results to serve yet (no target has measured any event)\n"]
        if site.serves(path):
            return site.respond(path, view, ready, start_response)
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found; try /, /metrics, /healthz or /readyz\n"]

    return app


class HttpServer:
    def __init__(self, host: str, port: int, app: WSGIApplication) -> None:
        self._server = make_server(
            host, port, app, server_class=_PooledServer, handler_class=_QuietHandler
        )
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="healthd-http",
            daemon=True,
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout)
