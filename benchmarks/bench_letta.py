"""Letta benchmark: healthd's own share of a run of the ``letta`` target against the local
imitation of a Letta server's REST API, measured in one run on one timeline.

Every call the target makes through ``letta-client`` (the shadow agent's lookup and creation,
each event's message and the agent's steps behind it, the reads of what it stored, archival
searches and block reads) is timed, from the SDK building the request to its parsed answer:
that is Letta (here the imitation in threads of this process: HTTP, the agent's loop, the
stand-in LLM, all-MiniLM-L6-v2) and the SDK.
Healthd's share is the rest of the run: replay, truth, probes, reading the served text and
scoring, and the adapter's own code. Not a test: figures depend on the machine; compare the
shares.

    .venv/bin/python benchmarks/bench_letta.py                 # 60 events, 12 keys
    .venv/bin/python benchmarks/bench_letta.py --events 200 --keys 40
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
from healthd.testing.letta import DEFAULT_PASSWORD, Letta


class Timed:
    """Time spent in the product: every call the adapter makes through the SDK (building the
    request, the HTTP round trip, the SDK parsing the answer), and the requests they sent."""

    def __init__(self, memory: Any) -> None:
        self.inside, self.requests = 0.0, 0
        transport = memory._http._transport
        handle, call = transport.handle_request, memory._call

        def counted_request(request: Any) -> Any:
            self.requests += 1
            return handle(request)

        def timed_call(*args: Any) -> Any:
            started = time.perf_counter()
            try:
                return call(*args)
            finally:
                self.inside += time.perf_counter() - started

        transport.handle_request = counted_request
        memory._call = timed_call


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=60)
    parser.add_argument("--keys", type=int, default=12)
    args = parser.parse_args()
    events = generate(args.events, args.keys)
    probes = build_probe_set(events)
    os.environ["LETTA_API_KEY"] = DEFAULT_PASSWORD
    print(f"{len(events)} events, {args.keys} keys, incremental mode\n")
    header = (
        f"{'target':<46}{'total s':>9}{'in Letta s':>12}{'requests':>10}"
        f"{'LLM calls':>11}{'probe queries':>15}{'healthd share':>15}"
    )
    print(header)
    print("-" * len(header))
    with Letta(style="verbatim") as api:
        for ingest in ("messages", "passages"):
            name = f"letta:ingest={ingest} (imitation, stand-in LLM)"
            options = {"shadow": "on", "base_url": api.base_url, "ingest": ingest,
                       "embedding": "openai/all-MiniLM-L6-v2"}  # fmt: skip
            memory: Any = build_memory(TargetSpec("letta", options, name))
            timed = Timed(memory)
            started = time.perf_counter()
            try:
                result = evaluate(
                    events, memory, probes, name=name, kind="letta", mode="incremental"
                )
            finally:
                total = time.perf_counter() - started
                memory.close()
            calls = memory.llm_usage().block()["calls"]
            print(
                f"{name:<46}{total:>9.2f}{timed.inside:>12.2f}{timed.requests:>10}"
                f"{calls:>11}{result.probe_queries:>15}{(total - timed.inside) / total:>14.1%}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
