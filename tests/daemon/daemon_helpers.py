"""Helpers for the daemon tests: configs in temporary directories, the real daemon as a
subprocess on a free 127.0.0.1 port, scrapes parsed with prometheus_client.parser."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXAMPLE = ROOT / "healthd" / "data" / "example_timeline.jsonl"
#: The bundled example's lines, good input to put bad lines among.
GOOD = EXAMPLE.read_text().splitlines(keepends=True)
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(("HEALTHD_", "OTEL_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def toml_config(
    tmp: Path,
    *,
    port: int = 0,
    cron: str = "*/1 * * * * *",
    sources: dict[str, dict[str, Any]] | None = None,
    targets: dict[str, dict[str, Any]] | None = None,
    extra: str = "",
) -> Path:
    """Write a config; values are dumped as JSON, which TOML reads for strings, numbers and
    booleans."""
    if sources is None:
        sources = {"example": {"kind": "file", "path": str(EXAMPLE)}}
    if targets is None:
        targets = {
            "reference": {"kind": "reference", "shadow": True},
            "naive": {"kind": "naive", "shadow": True},
        }
    lines = [
        f"state_path = {json.dumps(str(tmp / 'state' / 'state.sqlite'))}",
        'plugins = ["healthd_test_plugin"]',
        extra,
        "",
        "[schedule]",
        f"cron = {json.dumps(cron)}",
        "run_on_start = true",
        "",
        "[server]",
        'host = "127.0.0.1"',
        f"port = {port}",
        "",
        "[logging]",
        'format = "json"',
        "",
    ]
    for section, table in (("sources", sources), ("targets", targets)):
        for name, options in table.items():
            lines.append(f"[{section}.{name}]")
            lines.extend(f"{k} = {json.dumps(v)}" for k, v in options.items())
            lines.append("")
    path = tmp / "healthd.toml"
    path.write_text("\n".join(lines))
    return path


class Daemon:
    """`python -m healthd run --config FILE` as a real process."""

    def __init__(self, config: Path, port: int, log: Path, **env: str) -> None:
        self.port = port
        self.log = log
        self._log_handle = open(log, "ab")
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "healthd", "run", "--config", str(config)],
            cwd=str(ROOT),
            env=clean_env(**env),
            stdout=self._log_handle,
            stderr=subprocess.STDOUT,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> requests.Response:
        return requests.get(self.url + path, timeout=5)

    def wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"daemon exited {self.proc.returncode}:\n{self.read_log()}")
            try:
                if self.get("/readyz").status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"daemon not ready in {timeout}s:\n{self.read_log()}")

    def wait_until(self, predicate, timeout: float = 15.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = predicate()
            except requests.ConnectionError:
                value = None
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}:\n{self.read_log()}")

    def scrape(self) -> dict[tuple[str, frozenset], float]:
        return parse_metrics(self.get("/metrics").text)

    def wait_runs(
        self, target: str, at_least: int = 1, result: str = "success", timeout: float = 15.0
    ) -> dict[tuple[str, frozenset], float]:
        """The first scrape showing ``at_least`` runs of ``target`` ending in ``result``."""
        return self.wait_until(
            lambda: (m := self.scrape()) and runs(m, target, result) >= at_least and m,
            timeout=timeout,
            what=f"{at_least} {result} runs of {target}",
        )

    def families(self) -> dict[str, Any]:
        return {f.name: f for f in text_string_to_metric_families(self.get("/metrics").text)}

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> tuple[int, float]:
        start = time.monotonic()
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._log_handle.close()
        return code, time.monotonic() - start

    def read_log(self) -> str:
        return self.log.read_text(errors="replace")

    def log_lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.read_log().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out


def parse_metrics(text: str) -> dict[tuple[str, frozenset], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def sample(metrics: dict, name: str, **labels: str) -> float | None:
    """The value of the one series of ``name`` with these labels; a target's ``role`` need
    not be named (it follows from the target)."""
    wanted = set(labels.items())
    found = [
        value
        for (n, have), value in metrics.items()
        if n == name and wanted <= have and not {k for k, _ in have - wanted} - {"role"}
    ]
    assert len(found) <= 1, f"{name}{labels}: {len(found)} series"
    return found[0] if found else None


@pytest.fixture
def start_daemon(tmp_path):
    started: list[Daemon] = []

    def start(
        config: Path | None = None,
        *,
        port: int | None = None,
        log_name: str = "daemon.log",
        **kwargs: Any,
    ) -> Daemon:
        port = port or free_port()
        if config is None:
            config = toml_config(tmp_path, port=port, **kwargs)
        daemon = Daemon(config, port, tmp_path / log_name)
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        if daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait()


def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, "-m", "healthd", *args],
        cwd=str(ROOT),
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def synthetic_timeline(path: Path, events: int, *, seed: int = 11) -> Path:
    """A timeline of ``events`` changes over ``events // 8`` keys (adds, revisions,
    invalidations, re-validations), one hour apart from 2024-01-01, written as JSONL."""
    import random
    from datetime import UTC, datetime, timedelta

    rng = random.Random(seed)
    domains = ("tech", "ownership", "decision", "requirement")
    keys = [(f"svc-{i:04d}", f"p{i % 7}", domains[i % 4]) for i in range(max(1, events // 8))]
    live: dict[int, str] = {}
    start = datetime(2024, 1, 1, tzinfo=UTC)
    lines = []
    for n in range(events):
        at = (start + timedelta(hours=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
        k = rng.randrange(len(keys))
        subject, predicate, domain = keys[k]
        value = f"v{rng.randrange(5)}"
        fact = {"subject": subject, "predicate": predicate, "value": value, "domain": domain}
        event: dict[str, Any] = {"id": f"syn-{n}", "timestamp": at, "source": "syn", "fact": fact}
        roll = rng.random()
        if k not in live:
            event["type"] = "added"
            live[k] = value
        elif roll < 0.1:
            event["type"] = "invalidated"
            event["fact"] = {**fact, "value": live.pop(k)}
        elif roll < 0.4:
            event["type"] = "revalidated"
            event["fact"] = {**fact, "value": live[k]}
        elif live[k] != value:
            event["type"] = "revised"
            event["previous"] = {**fact, "value": live[k]}
            live[k] = value
        else:
            event["type"] = "revalidated"
        event.update(depends_on=[], metadata={})
        lines.append(json.dumps(event) + "\n")
    path.write_text("".join(lines))
    return path


METRIC_BUCKETS = ("all", "tech", "ownership", "decision", "requirement")
METRIC_RATIOS = ("freshness", "consistency", "coverage", "forgetting", "contamination")


def evaluated_metrics(timeline: Path, target: str = "reference") -> dict[str, Any]:
    """The final metrics `healthd evaluate --format json` gives ``timeline`` for ``target``."""
    done = run_cli("evaluate", "--timeline", str(timeline), "--target", target, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["targets"][0]["final"]["metrics"]


def assert_metrics_equal_evaluate(
    metrics: dict, timeline: Path, target: str = "reference", *, named: str | None = None
) -> None:
    """The daemon's ratio and conflict gauges for ``target`` (called ``named`` in the
    daemon, if that differs) are what `healthd evaluate` says of ``timeline`` (a ratio that
    is null there is absent here)."""
    final = evaluated_metrics(timeline, target)
    label = named or target
    for bucket in METRIC_BUCKETS:
        for ratio in METRIC_RATIOS:
            got = sample(metrics, f"healthd_{ratio}_ratio", target=label, domain=bucket)
            assert got == final[bucket][ratio], (label, bucket, ratio)
    got = sample(metrics, "healthd_conflicts", target=label, domain="all")
    assert got == final["all"]["conflicts"]


def runs(metrics: dict, target: str, result: str = "success") -> float:
    """``healthd_runs_total`` of the target with that result (0 before the first)."""
    return sample(metrics, "healthd_runs_total", target=target, result=result) or 0


def one_line_error(result: subprocess.CompletedProcess) -> str:
    """The one line a CLI run that refused its input wrote, having exited 2, no traceback."""
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[:2000]
    return lines[0]


def poison_event(timestamp: str, event_id: str = "poison") -> str:
    """A timeline line, good but for what ``timestamp`` may make it."""
    return json.dumps(
        {
            "id": event_id,
            "type": "added",
            "timestamp": timestamp,
            "source": "file",
            "fact": {"subject": "x", "predicate": "owner", "value": "y", "domain": "ownership"},
        }
    )


def self_signed_certificate(
    tmp: Path, names: str = "IP:127.0.0.1,DNS:localhost", stem: str = "tls"
) -> tuple[Path, Path]:
    """A certificate (valid a day, for ``names``) and its key, made by openssl."""
    cert, key = tmp / f"{stem}.crt", tmp / f"{stem}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=" + names.rsplit(",", maxsplit=1)[-1].split(":", 1)[1],
            "-addext",
            f"subjectAltName={names}",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class SilentListener:
    """A TCP listener on 127.0.0.1 that accepts connections and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def start_with_hung_remote(
    start_daemon: Any, tmp: Path, silent: SilentListener, **git: Any
) -> Daemon:
    """A daemon over the example and a git source (options ``git``) whose remote never
    answers, into the naive target."""
    return start_daemon(
        sources={
            "example": {"kind": "file", "path": str(EXAMPLE)},
            "repo": {
                "kind": "git",
                "url": f"http://127.0.0.1:{silent.port}/repo.git",
                "cache_dir": str(tmp / "cache"),
                **git,
            },
        },
        targets={"naive": {"kind": "naive", "shadow": True}},
    )


def start_with_http_memory(
    start_daemon: Any,
    timeline: Path,
    service: Any,
    *,
    beside: dict[str, dict[str, Any]] | None = None,
    **options: Any,
) -> Daemon:
    """A daemon reading ``timeline`` into the http target ``team``: the shadow namespace of
    ``service`` (a MemoryService), with ``options``, and the targets ``beside``."""
    team = {"kind": "http", "base_url": service.url, "namespace": "shadow", "shadow": True}
    return start_daemon(
        sources={"tl": {"kind": "file", "path": str(timeline)}},
        targets={"team": {**team, **options}, **(beside or {})},
    )


@pytest.fixture
def silent():
    listener = SilentListener()
    yield listener
    listener.close()
