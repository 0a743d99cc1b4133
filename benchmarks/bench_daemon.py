"""Benchmark of the sidecar.

    .venv/bin/python benchmarks/bench_daemon.py [--requests 200] [--idle 5]
    .venv/bin/python benchmarks/bench_daemon.py --replay 20000
    .venv/bin/python benchmarks/bench_daemon.py --evaluate 100000

Default: starts `python -m healthd run` with the built-in default configuration (the bundled
example against the reference and naive memories, every minute), a fresh state directory and
a free 127.0.0.1 port, and measures resident memory when idle and /metrics latency under
requests sent from a second process.

``--replay N``: the daemon's first run over N generated events (the evaluator benchmark's
mix), side by side in one process: the reference memory's persistent shadow (the daemon's
default, SQLite on disk) against the same memory in process memory (``path = ":memory:"``),
their ratio, and the cost of a restart of the persistent one (restoring the shadow, then a
run with nothing new). Prints one JSON object.

``--evaluate N``: peak resident memory and wall time of ``healthd evaluate`` over N
generated events (N/10 keys) against the reference memory, with table and with JSON output.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent

CLIENT = r"""
import json, sys, time, requests
url, n = sys.argv[1], int(sys.argv[2])
session = requests.Session()
times = []
for _ in range(n):
    t0 = time.perf_counter()
    r = session.get(url, timeout=10)
    r.raise_for_status()
    times.append(time.perf_counter() - t0)
times.sort()
print(json.dumps({"n": n, "bytes": len(r.content),
                  "p50_ms": times[n // 2] * 1000, "p95_ms": times[int(n * 0.95) - 1] * 1000,
                  "p99_ms": times[int(n * 0.99) - 1] * 1000, "max_ms": times[-1] * 1000,
                  "mean_ms": sum(times) / n * 1000}))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _replay_run(
    tmp: str, timeline: str, name: str, options: str
) -> tuple[tuple[float, float], Any, Any]:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from healthd.daemon.runner import Runner
    from healthd.daemon.state import StateStore
    from healthd.exporters.tracing import build_tracer_provider, get_tracer
    from healthd.settings import load_settings

    config = Path(tmp) / f"{name}.toml"
    config.write_text(
        f'state_path = "{Path(tmp) / name / "state.sqlite"}"\n'
        f'[sources.bench]\nkind = "file"\npath = "{timeline}"\n'
        f'[targets.reference]\nkind = "reference"\nshadow = true\n{options}\n'
    )
    settings = load_settings(str(config))
    tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))

    def start() -> tuple[Runner, StateStore]:
        state = StateStore(settings.state_path)
        return Runner(settings, state, tracer), state

    runner, state = start()
    t0, c0 = time.perf_counter(), time.process_time()
    summary = runner.run_once()
    seconds = (time.perf_counter() - t0, time.process_time() - c0)
    metrics = summary.targets["reference"]["metrics"] if summary else None
    runner.close()
    state.close()
    t0 = time.perf_counter()
    runner, state = start()
    again = runner.run_once()
    restart = time.perf_counter() - t0
    runner.close()
    state.close()
    return seconds, metrics, {"seconds": restart, "replayed": again and again.targets}


def replay_benchmark(events: int) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_evaluator import generate

    from healthd.logging import configure_logging
    from healthd.timeline import write_timeline

    configure_logging("warning", "json", stream=open(os.devnull, "w"))  # noqa: SIM115
    with tempfile.TemporaryDirectory() as tmp:
        timeline = os.path.join(tmp, "timeline.jsonl")
        with open(timeline, "w") as out:
            write_timeline(generate(events, max(1, events // 10)), out)
        memory_s, memory_metrics, _ = _replay_run(tmp, timeline, "memory", 'path = ":memory:"')
        disk_s, disk_metrics, restart = _replay_run(tmp, timeline, "disk", "")
    replayed = restart["replayed"]["reference"]["replayed"] if restart["replayed"] else None
    return {
        "events": events,
        "first_run_seconds": {
            "in_memory": round(memory_s[0], 2),
            "persistent": round(disk_s[0], 2),
        },
        "first_run_cpu_seconds": {
            "in_memory": round(memory_s[1], 2),
            "persistent": round(disk_s[1], 2),
        },
        "events_per_second": {
            "in_memory": round(events / memory_s[0]),
            "persistent": round(events / disk_s[0]),
        },
        "ratio_persistent_to_in_memory": round(disk_s[0] / memory_s[0], 2),
        "identical_metrics": memory_metrics == disk_metrics,
        "restart_persistent": {
            "seconds": round(restart["seconds"], 2),
            "events_replayed_after_restart": replayed,
        },
    }


def evaluate_memory(events: int, keys: int) -> dict[str, Any]:
    """Peak resident memory of ``healthd evaluate`` over N generated events (the evaluator
    benchmark's mix), table and JSON output, each in its own process."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_evaluator import generate

    from healthd.timeline import write_timeline

    out: dict[str, Any] = {"events": events, "keys": keys}
    with tempfile.TemporaryDirectory() as tmp:
        timeline = Path(tmp) / "timeline.jsonl"
        with timeline.open("w", encoding="utf-8") as handle:
            write_timeline(generate(events, keys), handle)
        for fmt in ("table", "json"):
            probe = (
                "import resource, subprocess, sys, time; t = time.perf_counter();"
                "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, timeout=3600);"
                "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
                "time.perf_counter() - t)"
            )
            done = subprocess.run(
                [sys.executable, "-c", probe, sys.executable, "-m", "healthd", "evaluate",
                 "--timeline", str(timeline), "--target", "reference", "--format", fmt],
                capture_output=True, text=True, check=True, timeout=3700,
            )  # fmt: skip
            peak_kib, seconds = done.stdout.split()
            out[f"{fmt}_peak_rss_mb"] = round(int(peak_kib) / 1024, 1)
            out[f"{fmt}_seconds"] = round(float(seconds), 1)
    out["targets"] = {"table_peak_rss_mb": 150}
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--idle", type=float, default=5.0, help="seconds idle before measuring")
    parser.add_argument("--replay", type=int, metavar="N", help="first-run replay of N events")
    parser.add_argument(
        "--evaluate", type=int, metavar="N", help="peak RSS of healthd evaluate over N events"
    )
    args = parser.parse_args()
    if args.evaluate:
        print(json.dumps(evaluate_memory(args.evaluate, max(1, args.evaluate // 10)), indent=1))
        return 0
    if args.replay:
        print(json.dumps(replay_benchmark(args.replay), indent=1))
        return 0
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HEALTHD_", "OTEL_"))}
        env.update(
            HEALTHD_SERVER__HOST="127.0.0.1",
            HEALTHD_SERVER__PORT=str(port),
            HEALTHD_STATE_PATH=os.path.join(tmp, "state.sqlite"),
            HEALTHD_LOGGING__FORMAT="json",
        )
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "healthd", "run"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            while True:
                try:
                    if requests.get(url + "/readyz", timeout=1).status_code == 200:
                        break
                except requests.ConnectionError:
                    pass
                if proc.poll() is not None or time.perf_counter() - started > 30:
                    raise SystemExit("daemon did not become ready")
                time.sleep(0.05)
            ready_s = time.perf_counter() - started
            time.sleep(args.idle)
            idle = rss_kib(proc.pid)
            client = subprocess.run(
                [sys.executable, "-c", CLIENT, url + "/metrics", str(args.requests)],
                capture_output=True,
                text=True,
                check=True,
            )
            latency = json.loads(client.stdout)
            after = rss_kib(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=15)
    print(
        json.dumps(
            {
                "ready_seconds": round(ready_s, 2),
                "idle_rss_mib": round(idle / 1024, 1),
                "rss_after_scrapes_mib": round(after / 1024, 1),
                "metrics_latency": {
                    k: round(v, 2) if isinstance(v, float) else v for k, v in latency.items()
                },
                "exit_code": code,
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
