"""Mem0 ingestion benchmark: healthd's own share of a run, for each way healthd writes to Mem0,
measured in one run on one timeline.

``ingest=facts`` (``mode=native``, ``mode=managed``) and ``ingest=messages`` (Mem0's
``add(infer=True)`` extraction, its LLM the stand-in on 127.0.0.1 and its embeddings served
by the stand-in over HTTP, as a team's OpenAI-compatible endpoint would be). Every call
healthd makes into Mem0's ``Memory`` is timed: that is Mem0 with its LLM, embedder and
Qdrant (the stand-in answers in a thread of this process while Mem0 waits on it). Healthd's
share is the rest of the run: replay, truth, probes, reading and scoring, and the adapter's
own code. Not a test: figures depend on the machine; compare the shares.

    .venv/bin/python benchmarks/bench_mem0_ingest.py                  # 300 events, 60 keys
    .venv/bin/python benchmarks/bench_mem0_ingest.py --events 100 --embedder minilm
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

from healthd.embedding import HASHING_MODEL
from healthd.evaluator import evaluate
from healthd.memory import TargetSpec, build_memory
from healthd.model import ChangeEvent
from healthd.probes import build_probe_set
from healthd.testing.standin_llm import MINILM_MODELS, StandInLLM

KEY_VAR = "BENCH_STANDIN_KEY"


class TimedCalls:
    """Mem0's ``Memory`` with the time spent inside each of its methods added up."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.inside = 0.0
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name.startswith("_") or not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return value(*args, **kwargs)
            finally:
                self.inside += time.perf_counter() - started
                self.calls += 1

        return call


def targets(base_url: str, embedder: str) -> dict[str, dict[str, Any]]:
    dims = 384 if embedder == "minilm" else 256
    model = MINILM_MODELS[0] if embedder == "minilm" else HASHING_MODEL
    endpoint = {"openai_base_url": base_url, "api_key_env": KEY_VAR}
    team = {
        "llm": {"provider": "openai", "config": {"model": "standin", **endpoint}},
        "embedder": {
            "provider": "openai",
            "config": {"model": model, "embedding_dims": dims, **endpoint},
        },
    }
    local = {"embedder": embedder}
    return {
        "mem0:ingest=facts,mode=native": {"mode": "native", **local},
        "mem0:ingest=facts,mode=managed": {"mode": "managed", **local},
        "mem0:ingest=messages (stand-in LLM)": {"ingest": "messages", "mem0": team},
    }


def run(name: str, options: dict[str, Any], events: list[ChangeEvent]) -> dict[str, Any]:
    probes = build_probe_set(events)
    memory = build_memory(TargetSpec("mem0", options, name))
    mem0 = TimedCalls(memory._memory)  # type: ignore[attr-defined]
    memory._memory = mem0  # type: ignore[attr-defined]
    started = time.perf_counter()
    try:
        result = evaluate(events, memory, probes, name=name, kind="mem0", mode="incremental")
    finally:
        total = time.perf_counter() - started
        memory._memory = mem0._inner  # type: ignore[attr-defined]
        memory.close()
    return {
        "target": name,
        "total_s": total,
        "inside_s": mem0.inside,
        "calls": mem0.calls,
        "queries": result.probe_queries,
        "healthd_share": (total - mem0.inside) / total,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--keys", type=int, default=60)
    parser.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    args = parser.parse_args()
    os.environ[KEY_VAR] = "standin-not-a-secret"
    events = generate(args.events, args.keys)
    print(f"{len(events)} events, {args.keys} keys, incremental mode, embedder {args.embedder}\n")
    header = (
        f"{'target':<38}{'total s':>9}{'in Mem0 s':>11}{'Mem0 calls':>12}"
        f"{'probe queries':>15}{'healthd share':>15}"
    )
    print(header)
    print("-" * len(header))
    with StandInLLM(style="verbatim") as llm:  # the workload docs/ figures were measured on
        for name, options in targets(llm.base_url, args.embedder).items():
            row = run(name, options, events)
            print(
                f"{row['target']:<38}{row['total_s']:>9.2f}{row['inside_s']:>11.2f}"
                f"{row['calls']:>12}{row['queries']:>15}{row['healthd_share']:>14.1%}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
