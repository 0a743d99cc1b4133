"""Benchmark of the sidecar: resident memory when idle with the bundled example, and
/metrics latency under 200 requests sent from a second process.

    .venv/bin/python benchmarks/bench_daemon.py [--requests 200] [--idle 5]

Starts `python -m healthd run` with the built-in default configuration (the bundled example
against the reference and naive memories, every minute), a fresh state directory and a free
127.0.0.1 port; prints one JSON object.
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--idle", type=float, default=5.0, help="seconds idle before measuring")
    args = parser.parse_args()
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
