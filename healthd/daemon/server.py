"""The HTTP endpoints: /metrics, /healthz, /readyz and a one-screen summary at /."""

from __future__ import annotations

import html
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from healthd import __version__
from healthd.logging import redact_text

RATIOS = ("freshness", "consistency", "coverage", "forgetting", "contamination")


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _ts(value: float | None) -> str:
    if value is None:
        return "never"
    return datetime.fromtimestamp(value, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _cell(value: Any) -> str:
    return "—" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))


def summary_html(view: dict[str, Any], ready: bool) -> str:
    rows = []
    for name, t in view["targets"].items():
        res = t.results or {}
        metrics = (res.get("metrics") or {}).get("all", {})
        error = html.escape(redact_text(t.last_error)) if t.last_error else ""
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{c}</td>"
                for c in (
                    html.escape(name),
                    html.escape(t.last_result or "not run"),
                    _ts(t.last_run),
                    _ts(t.last_success),
                    *(_cell(metrics.get(r)) for r in RATIOS),
                    _cell(metrics.get("conflicts")),
                    _cell(res.get("probes")),
                    _cell(t.events_replayed),
                    html.escape(res.get("info_version", "—")),
                    error,
                )
            )
            + "</tr>"
        )
    sources = "".join(
        f"<tr><td>{html.escape(n)}</td><td>{'up' if s.up else ('down' if s.up == 0 else '—')}"
        f"</td><td>{s.events_total}</td><td>{html.escape(redact_text(s.last_error or ''))}</td></tr>"
        for n, s in view["sources"].items()
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "target",
            "last run",
            "at",
            "last success",
            *RATIOS,
            "conflicts",
            "probes",
            "events",
            "probe set",
            "error",
        )
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>healthd</title><style>"
        "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.25em .5em;text-align:right}"
        "td:first-child,th:first-child{text-align:left}</style></head><body>"
        f"<h1>healthd {html.escape(__version__)}</h1>"
        f"<p>{'ready' if ready else 'not ready'}; runs completed in this process: "
        f"{view['runs_completed']}; missed runs: {view['missed_runs']}. "
        "Values are the <em>all</em> domain at the newest stage; — means nothing to measure. "
        "<a href='/metrics'>/metrics</a></p>"
        f"<table><tr>{head}</tr>{''.join(rows)}</table><h2>Sources</h2>"
        f"<table><tr><th>source</th><th>status</th><th>events</th><th>error</th></tr>{sources}"
        "</table></body></html>"
    )


def build_app(
    registry: CollectorRegistry, view: Callable[[], dict[str, Any]], ready: Callable[[], bool]
) -> Callable:
    metrics_app = make_wsgi_app(registry)

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
            return [b"not ready: no results to serve yet (no target has measured any event)\n"]
        if path == "/":
            body = summary_html(view(), ready()).encode()
            start_response(
                "200 OK",
                [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))],
            )
            return [body]
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
