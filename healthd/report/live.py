"""The daemon's `/`: the report view of each target's last run, the run history and the
sources' state, with the page's scripts served from `/static/` by the daemon itself.

The page asks `/last-run` every few seconds and reloads when a run has finished. Every
error shown passes through the log redaction, and no source option, cursor or target option
is shown, so no token, header or URL with credentials reaches the page.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from html import escape
from typing import Any

from healthd import __version__
from healthd.logging import redact_text
from healthd.memory import SUBJECT
from healthd.report.assets import STATIC, static_text
from healthd.report.html import render_body
from healthd.report.runbook import runbook_html
from healthd.report.view import page_model
from healthd.verdict import (
    AlertBook,
    Verdict,
    alert_book,
    judge,
    run_crossings,
    source_crossings,
)

#: Where the verdict links when the configuration names no runbook_url: the runbook the
#: daemon serves, relative to the page (so a path prefix of a proxy in front is kept).
RUNBOOK_PATH = "runbook"

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
_TEXT = "text/plain; charset=utf-8"
_HTML = "text/html; charset=utf-8"


def _when(value: float | None) -> str:
    if value is None:
        return "never"
    return datetime.fromtimestamp(value, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _table(head: Iterable[str], rows: Iterable[Iterable[str]], table_id: str) -> str:
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table id='{table_id}'><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def _error(text: str | None) -> str:
    return f"<span class='error'>{escape(redact_text(text))}</span>" if text else ""


def marker(view: Mapping[str, Any]) -> str:
    """Changes whenever a run has finished."""
    last = view.get("last_run")
    return f"{view['runs_completed']}:{last.run_id if last is not None else '-'}"


def _status(view: Mapping[str, Any], ready: bool) -> str:
    targets = [
        (
            escape(name),
            escape(row.last_result or "not run"),
            _when(row.last_run),
            _when(row.last_success),
            str(row.events_replayed),
            escape((row.results or {}).get("info_version", "—")),
            _error(row.last_error),
        )
        for name, row in view["targets"].items()
    ]
    return (
        f"<p>{'ready' if ready else 'not ready'}; runs completed in this process: "
        f"{view['runs_completed']}; missed runs: {view['missed_runs']}. "
        "<a href='/metrics'>/metrics</a></p><h2>Targets</h2>"
        + _table(
            (
                "target",
                "last run",
                "at",
                "last success",
                "events replayed",
                "probe set",
                "error",
            ),
            targets,
            "targets",
        )
    )


def _last_change(model: Mapping[str, Any]) -> str:
    """Targets whose history ends with revalidation sweeps: the ``all`` metrics at the newest
    real change beside those after the sweeps (a dormant repository re-stamped today)."""
    rows = model.get("last_change") or []
    if not rows:
        return ""
    names = ("freshness", "consistency", "coverage", "forgetting", "contamination", "conflicts")

    def cell(value: Any) -> str:
        return "—" if value is None else str(value) if isinstance(value, int) else f"{value:.3f}"

    body = [
        (
            escape(row["target"]),
            escape(f"{row['timestamp']} (stage {row['index']}, {row['event_id']})"),
            *(f"{cell(row['last_change'][n])} → {cell(row['after_sweep'][n])}" for n in names),
        )
        for row in rows
    ]
    return (
        "<h2>Last real change, then the revalidation sweeps</h2>"
        "<p>all domains: at the newest real change → after the sweeps that re-observed it</p>"
        + _table(("target", "last change", *names), body, "last-change")
    )


def _history(view: Mapping[str, Any]) -> str:
    rows = []
    for run in reversed(view.get("history", ())):
        outcomes = run.targets.values()
        failed = [n for n, o in run.targets.items() if o.get("result") == "failure"]
        result = (
            "aborted" if run.aborted else f"failure ({', '.join(failed)})" if failed else "success"
        )
        errors = "; ".join(
            f"{name}: {o['error']}" for name, o in run.targets.items() if o.get("error")
        )
        rows.append(
            (
                _when(run.started),
                escape(run.run_id),
                escape(result),
                f"{run.duration:.3f} s",
                str(run.new_events),
                str(sum(o.get("replayed", 0) for o in outcomes)),
                _error(errors),
            )
        )
    sources = [
        (
            escape(name),
            "up" if s.up else ("down" if s.up == 0 else "—"),
            str(s.events_total),
            _error(s.last_error),
        )
        for name, s in view["sources"].items()
    ]
    return (
        "<h2>Run history</h2>"
        + _table(
            ("started", "run", "result", "duration", "new events", "events replayed", "error"),
            rows,
            "runs",
        )
        + "<h2>Sources</h2>"
        + _table(("source", "status", "events", "error"), sources, "sources")
    )


def _book(view: Mapping[str, Any]) -> AlertBook:
    """The shipped alerts, linking to the configured runbook or the one the daemon serves."""
    return alert_book(view.get("runbook_url") or RUNBOOK_PATH)


def verdicts(view: Mapping[str, Any], now: float) -> list[Verdict]:
    """Every configured target's verdict from its last results and its runs."""
    book = _book(view)
    roles = view.get("roles", {})
    out = []
    for name, row in view["targets"].items():
        runs = run_crossings(
            book, row.last_run, row.last_success, now, view.get("schedule_seconds")
        )
        metrics = row.results["metrics"]["all"] if row.results else None
        bounds = (row.results or {}).get("spread", {}).get("all")
        out.append(judge(name, roles.get(name, SUBJECT), metrics, runs, book, bounds))
    return out


def live_html(view: Mapping[str, Any], ready: bool, now: float | None = None) -> str:
    pages = [p for p in view.get("pages", {}).values() if p is not None]
    version, count = "—", 0
    for row in view["targets"].values():
        if row.results:
            version = row.results.get("probe_set_version", version)
            count = max(count, row.results.get("probes", 0))
    report = {
        "probe_set": {"version": version, "count": count},
        "targets": [p["target"] for p in pages],
    }
    multi = set().union(*(p["multi_valued"] for p in pages)) if pages else set()
    events = [e for p in pages for e in p["events"]]
    model = page_model(
        report,
        events=events,
        multi_valued=multi,
        target_options={p["target"]["name"]: p["options"] for p in pages},
        windows=view["windows"],
        title=f"healthd {__version__}: the last run of each target",
        verdicts=verdicts(view, time.time() if now is None else now),
    )
    model["verdict_sources"] = [
        asdict(c)
        for c in source_crossings(_book(view), {n: s.up for n, s in view["sources"].items()})
    ]
    model["live"] = {"marker": marker(view)}
    model["llm_scope"] = "over every run of the target's state"
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<link rel='icon' href='data:,'><title>healthd {escape(__version__)}</title>"
        "<link rel='stylesheet' href='/static/uPlot.min.css'>"
        "<link rel='stylesheet' href='/static/page.css'></head><body>"
        + render_body(
            model,
            before=_status(view, ready) + _last_change(model) + _history(view) + _unshown(view),
        )
        + "<script src='/static/uPlot.iife.min.js'></script>"
        "<script src='/static/page.js'></script></body></html>\n"
    )


def _unshown(view: Mapping[str, Any]) -> str:
    """The targets with results but nothing to chart yet: after a restart, a shadow in process
    memory (or one not read back yet) has its numbers from the state file, not its stages."""
    pages = view.get("pages", {})
    names = [n for n, row in view["targets"].items() if row.results and pages.get(n) is None]
    if not names:
        return ""
    return (
        "<p class='meta' id='unshown'>Not charted yet: "
        + ", ".join(escape(n) for n in names)
        + ". Their last results, restored from the state file, are in the verdict and the"
        " table above; their stages and failing probes are shown once their next run has"
        " replayed them.</p>"
    )


class LiveSite:
    """`/`, `/last-run`, `/runbook` and `/static/*` as a WSGI fragment; the page is rebuilt
    after a run has finished, or when the minute changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: tuple[tuple[str, bool], bytes] | None = None

    @staticmethod
    def serves(path: str) -> bool:
        return path in ("/", "/last-run", "/runbook") or path.startswith("/static/")

    def respond(
        self,
        path: str,
        view: Callable[[], Mapping[str, Any]],
        ready: Callable[[], bool],
        start_response: StartResponse,
    ) -> list[bytes]:
        if path.startswith("/static/"):
            name = path.removeprefix("/static/")
            if name not in STATIC:
                return _send(start_response, "404 Not Found", _TEXT, b"no such static file\n")
            content_type = STATIC[name][1]
            return _send(start_response, "200 OK", content_type, static_text(name).encode())
        if path == "/runbook":
            return _send(start_response, "200 OK", _HTML, runbook_html())
        current = view()
        if path == "/last-run":
            return _send(start_response, "200 OK", _TEXT, marker(current).encode())
        # rebuilt after a run, and at most once a minute in between: the verdict ages
        # (HealthdNoRecentSuccess) while no run finishes
        minute = int(time.time() // 60)
        key = (f"{marker(current)}:{current['missed_runs']}:{minute}", ready())
        with self._lock:
            if self._cached is not None and self._cached[0] == key:
                return _send(start_response, "200 OK", _HTML, self._cached[1])
            pages = dict(current.get("pages", {}))
            # (a memory may serve a lone surrogate, a UTF-16 pair a service cut in two)
            body = live_html({**current, "pages": pages}, key[1]).encode(errors="backslashreplace")
            # a target with results whose page a run kept from being built is asked again
            if not any(
                row.results and pages.get(n) is None for n, row in current["targets"].items()
            ):
                self._cached = (key, body)
        return _send(start_response, "200 OK", _HTML, body)


def _send(
    start_response: StartResponse, status: str, content_type: str, body: bytes
) -> list[bytes]:
    start_response(
        status,
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-cache"),
        ],
    )
    return [body]
