"""Liveness under scrape load: the daemon's /healthz while many clients loop on /metrics.

    .venv/bin/python benchmarks/bench_listener.py [--clients 200] [--seconds 60]

Starts ``python -m healthd run`` with the built-in default configuration (the bundled example
against reference and naive, every minute) on a free 127.0.0.1 port with a fresh state
directory, waits until it is ready, then runs ``--clients`` looping /metrics clients (spread
over four load processes, each client a thread opening one connection per request, as
Prometheus does) for ``--seconds``, while this process asks /healthz every 50 ms. Prints
/healthz latency percentiles against the 100 ms p99 target, and the /metrics answers and
their latency. Everything is on 127.0.0.1, bounded in clients and time, and stops by itself
(the daemon gets SIGTERM at the end).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOAD_PROCESSES = 4

LOAD = r"""
import http.client, json, sys, threading, time
port, clients, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
end = time.monotonic() + seconds
times, errors, lock = [], [0], threading.Lock()
def loop():
    while time.monotonic() < end:
        t0 = time.perf_counter()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/metrics")
            answer = conn.getresponse()
            answer.read()
            conn.close()
            ok = answer.status == 200
        except OSError:
            ok = False
        with lock:
            if ok:
                times.append(time.perf_counter() - t0)
            else:
                errors[0] += 1
threads = [threading.Thread(target=loop, daemon=True) for _ in range(clients)]
for t in threads:
    t.start()
for t in threads:
    t.join(seconds + 35)
print(json.dumps({"times": times, "errors": errors[0]}))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(port: int, path: str, timeout: float = 10.0) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    clients = max(1, min(args.clients, 1000))
    seconds = max(1.0, min(args.seconds, 600.0))
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="healthd-bench-listener-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHD_")}
        env.update(
            HEALTHD_SERVER__HOST="127.0.0.1",
            HEALTHD_SERVER__PORT=str(port),
            HEALTHD_STATE_PATH=str(Path(tmp) / "state.sqlite"),
            HEALTHD_LOGGING__FORMAT="json",
            PYTHONPATH=str(ROOT),
        )
        daemon = subprocess.Popen(
            [sys.executable, "-m", "healthd", "run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if get(port, "/readyz", 2) == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.1)
            else:
                raise SystemExit("the daemon did not get ready in 60 s")
            share = [clients // LOAD_PROCESSES + (i < clients % LOAD_PROCESSES) for i in range(4)]
            loads = [
                subprocess.Popen(
                    [sys.executable, "-c", LOAD, str(port), str(n), str(seconds)],
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for n in share
                if n
            ]
            health: list[float] = []
            failures = 0
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                t0 = time.perf_counter()
                try:
                    status = get(port, "/healthz", 10)
                except OSError:
                    status = 0
                if status == 200:
                    health.append(time.perf_counter() - t0)
                else:
                    failures += 1
                time.sleep(0.05)
            scrapes: list[float] = []
            scrape_errors = 0
            for load in loads:
                out, _ = load.communicate(timeout=seconds + 60)
                result = json.loads(out)
                scrapes.extend(result["times"])
                scrape_errors += result["errors"]
        finally:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(15)
            except subprocess.TimeoutExpired:
                daemon.kill()
    ms = 1000.0
    print(
        f"{clients} looping /metrics clients for {seconds:g} s on 127.0.0.1 "
        f"({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end)"
    )
    if health:
        p99 = percentile(health, 0.99)
        print(
            f"/healthz: {len(health)} answers, {failures} failed; "
            f"p50 {statistics.median(health) * ms:.1f} ms, p95 {percentile(health, 0.95) * ms:.1f}"
            f" ms, p99 {p99 * ms:.1f} ms, max {max(health) * ms:.1f} ms "
            f"(target p99 < 100 ms: {'met' if p99 < 0.1 else 'MISSED'})"
        )
    if scrapes:
        print(
            f"/metrics: {len(scrapes)} answers ({len(scrapes) / seconds:.1f}/s), "
            f"{scrape_errors} failed; p50 {statistics.median(scrapes) * ms:.0f} ms, "
            f"p99 {percentile(scrapes, 0.99) * ms:.0f} ms (paced to 40 requests/s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
