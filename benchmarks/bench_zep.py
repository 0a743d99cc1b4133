"""Zep benchmark: healthd's own share of a run of the ``zep`` target against the local
imitation of Zep's v4 API, measured in one run on one timeline.

Every HTTP request the target makes through ``zep-cloud`` (user lookup and creation, episode
adds, task reads, searches) and every wait for an episode's task (its reads and the pauses
between them) is timed: that is Zep (here the imitation in threads of this process: HTTP,
Graphiti's pipeline on Kuzu, the stand-in LLM, all-MiniLM-L6-v2) and the SDK. Healthd's share
is the rest of the run: replay, truth, probes, reading the served text and scoring, and the
adapter's own code. Not a test: figures depend on the machine; compare the shares. The
imitation processes each episode at once (``processing_seconds=0``); a real Zep's queue only
adds to the product's time.

    .venv/bin/python benchmarks/bench_zep.py                 # 60 events, 12 keys
    .venv/bin/python benchmarks/bench_zep.py --events 200 --keys 40
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_evaluator import generate

from healthd.evaluator import evaluate
from healthd.memory import TargetSpec, build_memory
from healthd.probes import build_probe_set
from healthd.testing.zep import DEFAULT_KEY, Zep


class Timed:
    """Time spent in the product: HTTP requests, and the waits for tasks (whose own
    requests are then not counted twice)."""

    def __init__(self, memory: Any) -> None:
        self.inside, self.requests, self._waiting = 0.0, 0, False
        transport = memory._http._transport
        handle, wait = transport.handle_request, memory._wait

        def timed_request(request: Any) -> Any:
            started = time.perf_counter()
            try:
                return handle(request)
            finally:
                self.requests += 1
                if not self._waiting:
                    self.inside += time.perf_counter() - started

        def timed_wait(*args: Any) -> None:
            started, self._waiting = time.perf_counter(), True
            try:
                wait(*args)
            finally:
                self._waiting = False
                self.inside += time.perf_counter() - started

        transport.handle_request = timed_request
        memory._wait = timed_wait


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=60)
    parser.add_argument("--keys", type=int, default=12)
    args = parser.parse_args()
    events = generate(args.events, args.keys)
    probes = build_probe_set(events)
    os.environ["ZEP_API_KEY"] = DEFAULT_KEY
    name = "zep (imitation: Graphiti, stand-in LLM)"
    with Zep(processing_seconds=0, style="verbatim") as api:
        options = {"shadow": "on", "base_url": api.base_url}
        memory: Any = build_memory(TargetSpec("zep", options, name))
        timed = Timed(memory)
        started = time.perf_counter()
        try:
            result = evaluate(events, memory, probes, name=name, kind="zep", mode="incremental")
        finally:
            total = time.perf_counter() - started
            memory.close()
    print(f"{len(events)} events, {args.keys} keys, incremental mode\n")
    header = (
        f"{'target':<42}{'total s':>9}{'in Zep s':>10}{'requests':>10}"
        f"{'task reads':>12}{'probe queries':>15}{'healthd share':>15}"
    )
    print(header)
    print("-" * len(header))
    print(
        f"{name:<42}{total:>9.2f}{timed.inside:>10.2f}{timed.requests:>10}"
        f"{memory.tasks_read:>12}{result.probe_queries:>15}"
        f"{(total - timed.inside) / total:>14.1%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
