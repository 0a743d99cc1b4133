"""Mem0 Platform benchmark: healthd's own share of a run of ``mem0:deployment=platform``
against the local imitation of the platform API, measured in one run on one timeline.

Every call the target makes through ``MemoryClient`` (add, search, delete_all) and every
wait for an event's status is timed: that is the platform (here the imitation in a thread of
this process: HTTP, open-source Mem0's pipeline, the stand-in LLM and embeddings, Qdrant) and
the client library. Healthd's share is the rest of the run: replay, truth, probes, reading
the served text and scoring, and the adapter's own code. Not a test: figures depend on the
machine; compare the shares. The imitation processes each add at once
(``processing_seconds=0``); a real platform's queue only adds to the product's time.

    .venv/bin/python benchmarks/bench_mem0_platform.py                 # 100 events, 20 keys
    .venv/bin/python benchmarks/bench_mem0_platform.py --events 300 --keys 60
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ["MEM0_TELEMETRY"] = "False"
sys.path.insert(0, str(Path(__file__).parent))

from bench_evaluator import generate
from bench_mem0_ingest import TimedCalls

from healthd.embedding import HASHING_MODEL
from healthd.evaluator import evaluate
from healthd.memory import TargetSpec, build_memory
from healthd.probes import build_probe_set
from healthd.testing.mem0_platform import DEFAULT_KEY, Mem0Platform
from healthd.testing.standin_llm import MINILM_MODELS


class _Waiting:
    def __init__(self, wait: Any) -> None:
        self.wait = wait


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    args = parser.parse_args()
    model, dims = (MINILM_MODELS[0], 384) if args.embedder == "minilm" else (HASHING_MODEL, 256)
    events = generate(args.events, args.keys)
    probes = build_probe_set(events)
    os.environ["MEM0_API_KEY"] = DEFAULT_KEY
    name = "mem0:deployment=platform (imitation, stand-in LLM)"
    with Mem0Platform(
        embedding_model=model, embedding_dims=dims, processing_seconds=0, style="verbatim"
    ) as api:
        options = {"deployment": "platform", "shadow": "on", "host": api.base_url}
        memory: Any = build_memory(TargetSpec("mem0", options, name))
        client = TimedCalls(memory._client)
        memory._client = client
        waits = TimedCalls(_Waiting(memory._wait))
        memory._wait = waits.wait  # the event status reads and the pauses between them
        started = time.perf_counter()
        try:
            result = evaluate(events, memory, probes, name=name, kind="mem0", mode="incremental")
        finally:
            total = time.perf_counter() - started
            memory._client = client._inner
            memory.close()
    inside = client.inside + waits.inside
    print(f"{len(events)} events, {args.keys} keys, incremental mode, embedder {args.embedder}\n")
    header = (
        f"{'target':<52}{'total s':>9}{'in platform s':>15}{'client calls':>14}"
        f"{'event reads':>13}{'probe queries':>15}{'healthd share':>15}"
    )
    print(header)
    print("-" * len(header))
    print(
        f"{name:<52}{total:>9.2f}{inside:>15.2f}{client.calls:>14}{memory.events_read:>13}"
        f"{result.probe_queries:>15}{(total - inside) / total:>14.1%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
