"""The HTTP endpoints: /metrics, /healthz, /readyz, and the report page at / (report.live)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from healthd.report.live import LiveSite


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def build_app(
    registry: CollectorRegistry, view: Callable[[], dict[str, Any]], ready: Callable[[], bool]
) -> Callable:
    metrics_app = make_wsgi_app(registry)
    site = LiveSite()

    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            return metrics_app(environ, start_response)
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
            return [b"not ready: no completed run yet, or every target's last run failed\n"]
        if site.serves(path):
            return site.respond(path, view, ready, start_response)
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found; try /, /metrics, /healthz or /readyz\n"]

    return app


class HttpServer:
    def __init__(self, host: str, port: int, app: Callable) -> None:
        self._server = make_server(
            host, port, app, server_class=_ThreadingServer, handler_class=_QuietHandler
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
