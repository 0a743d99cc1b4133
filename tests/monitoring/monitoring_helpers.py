"""Shared helpers for the monitoring tests: repository paths, the dashboards' and rules'
PromQL, a small PromQL metric-name extractor, and real processes (healthd, Prometheus) on
free 127.0.0.1 ports, each stopped by its pid."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import requests
import yaml

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "alerts"
DASHBOARDS = ROOT / "dashboards"
DASHBOARD_JSON = DASHBOARDS / "json"
DEPLOY = ROOT / "deploy"
RUNBOOK = ROOT / "docs" / "runbook.md"
RULE_FILES = (ALERTS / "alerts.rules.yml", ALERTS / "recording.rules.yml")
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- dashboards and rules ------------------------------------------------------------------


def dashboards() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted(DASHBOARD_JSON.glob("*.json"))}


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def panel_queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expr) of every query of every panel."""
    return [(p["title"], t["expr"]) for p in panels(dashboard) for t in p.get("targets", [])]


def variable_queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(variable name, the series selector inside label_values(...)) of the query variables."""
    out = []
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            match = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", var["query"].strip())
            assert match, f"variable {var['name']}: unexpected query {var['query']!r}"
            out.append((var["name"], match.group(1)))
    return out


def rules() -> list[dict[str, Any]]:
    out = []
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            out.extend(group["rules"])
    return out


def alert_rules() -> list[dict[str, Any]]:
    return [r for r in rules() if "alert" in r]


def recording_rules() -> list[dict[str, Any]]:
    return [r for r in rules() if "record" in r]


def substitute(
    expr: str, *, target: str = ".*", domain: str = ".*", rate_interval: str = "30s"
) -> str:
    """A dashboard query as Grafana would send it: variables replaced."""
    return (
        expr.replace("$__rate_interval", rate_interval)
        .replace("$job", ".*")
        .replace("$instance", ".*")
        .replace("$target", target)
        .replace("$domain", domain)
    )


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "offset",
    "bool",
    "and",
    "or",
    "unless",
    "inf",
    "nan",
    "Inf",
    "NaN",
    # aggregation operators, which may be followed by by/without before "("
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (not functions, labels or keywords)."""
    s = _STRING.sub('""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)  # label matchers
    s = re.sub(r"\[[^\]]*\]", " ", s)  # ranges and subqueries
    s = _GROUPING.sub(r" \1 ", s)  # label lists of by/without/on/...
    names = set()
    for match in _IDENT.finditer(s):
        token = match.group(0)
        before = s[match.start() - 1] if match.start() else " "
        if token in _KEYWORDS or before.isdigit() or before == ".":
            continue
        if re.match(r"\s*\(", s[match.end() :]):  # a function call
            continue
        names.add(token)
    return names


# --- processes ----------------------------------------------------------------------------


class Process:
    """A real child process, logged to a file, stopped by its own pid."""

    def __init__(
        self, args: list[str], log: Path, *, cwd: Path = ROOT, env: dict[str, str] | None = None
    ) -> None:
        self.log = log
        self._handle = open(log, "ab")
        self.proc = subprocess.Popen(
            args, cwd=str(cwd), env=env, stdout=self._handle, stderr=subprocess.STDOUT
        )

    def read_log(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(
                f"{self.proc.args[0]} exited {self.proc.returncode}:\n{self.read_log()}"
            )

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._handle.close()


def wait_for(
    predicate: Callable[[], Any],
    *,
    timeout: float,
    what: str,
    proc: Process | None = None,
    interval: float = 0.25,
) -> Any:
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None:
            proc.alive()
        try:
            value = predicate()
            if value:
                return value
        except (requests.RequestException, KeyError, ValueError) as exc:
            last_error = exc
        time.sleep(interval)
    log = f"\n{proc.read_log()}" if proc is not None else ""
    raise AssertionError(
        f"timed out after {timeout}s waiting for {what} (last error: {last_error}){log}"
    )


def healthd_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(("HEALTHD_", "OTEL_"))}
    return env


#: the targets of the monitoring tests' daemon: the built-in ones (naive a baseline) and a
#: naive memory declared a real target, which degrades and must page
TARGETS = ("reference", "naive", "watched")


def write_healthd_config(directory: Path, port: int) -> Path:
    """The bundled example against reference, naive (a baseline) and watched (a naive
    memory declared `baseline = false`), every 2 seconds, served on 127.0.0.1:port."""
    config = directory / "healthd.toml"
    config.write_text(
        "\n".join(
            [
                f"state_path = {json.dumps(str(directory / 'state' / 'state.sqlite'))}",
                "example = true",
                "",
                "[schedule]",
                'cron = "*/2 * * * * *"',
                "run_on_start = true",
                "",
                "[server]",
                'host = "127.0.0.1"',
                f"port = {port}",
                "",
                "[logging]",
                'format = "json"',
                "",
                "[targets.reference]",
                'kind = "reference"',
                "shadow = true",
                "[targets.naive]",
                'kind = "naive"',
                "shadow = true",
                "[targets.watched]",
                'kind = "naive"',
                "shadow = true",
                "baseline = false",
                "",
            ]
        )
    )
    return config


def start_healthd(directory: Path) -> tuple[Process, str]:
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = write_healthd_config(directory, port)
    proc = Process(
        [PYTHON, "-m", "healthd", "run", "--config", str(config)],
        directory / "healthd.log",
        env=healthd_env(),
    )
    url = f"http://127.0.0.1:{port}"
    wait_for(
        lambda: requests.get(url + "/readyz", timeout=2).status_code == 200,
        timeout=60,
        what="healthd /readyz",
        proc=proc,
    )
    # every metric family is there once both targets have finished a successful run
    wait_for(
        lambda: _both_ran(requests.get(url + "/metrics", timeout=5).text),
        timeout=60,
        what="a successful run of every target",
        proc=proc,
    )
    return proc, url


def _both_ran(text: str) -> bool:
    return all(
        re.search(rf'^healthd_last_success_timestamp_seconds\{{[^}}]*target="{t}"', text, re.M)
        for t in TARGETS
    )


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


def tool(name: str) -> str | None:
    return shutil.which(name)
