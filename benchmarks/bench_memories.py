"""Memory-kind benchmark: events per second of every target kind on one timeline, side by side
in one run, with the harness's own share of the time.

Each target replays the same generated timeline (incremental mode) through the evaluator,
with the memory wrapped so that the time spent inside its calls (apply, answer, reset,
changed_keys) is counted apart. ``healthd share`` is the rest: replay, truth, probes and
scoring. Not a test: figures depend on the machine; compare the columns.

    .venv/bin/python benchmarks/bench_memories.py                 # 2,000 events, 400 keys
    .venv/bin/python benchmarks/bench_memories.py --events 500    # a quicker look
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

from _timing import timed
from bench_evaluator import generate

from healthd.evaluator import evaluate
from healthd.memory import build_memory, parse_target
from healthd.model import ChangeEvent
from healthd.probes import build_probe_set

TARGETS = [
    "reference",
    "naive",
    "mem0:mode=native",
    "mem0:mode=managed",
    "graphiti:search=default",
    "graphiti:search=valid",
]


def run(target: str, events: list[ChangeEvent]) -> dict[str, Any]:
    probes = build_probe_set(events)
    inner = build_memory(parse_target(target))
    memory = timed(inner)
    started = time.perf_counter()
    try:
        evaluate(events, memory, probes, name=target, kind=target, mode="incremental")
    finally:
        total = time.perf_counter() - started
        memory.close()
    return {
        "target": target,
        "events_per_s": len(events) / total,
        "total_s": total,
        "inside_s": memory.inside,
        "calls": memory.calls,
        "healthd_share": (total - memory.inside) / total,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--keys", type=int, default=400)
    parser.add_argument("--target", action="append", help="only these targets")
    args = parser.parse_args()
    events = generate(args.events, args.keys)
    print(f"{len(events)} events, {args.keys} keys, incremental mode\n")
    header = f"{'target':<26}{'events/s':>10}{'total s':>10}{'in memory s':>13}{'calls':>8}{'healthd share':>15}"
    print(header)
    print("-" * len(header))
    for target in args.target or TARGETS:
        row = run(target, events)
        print(
            f"{row['target']:<26}{row['events_per_s']:>10.1f}{row['total_s']:>10.2f}"
            f"{row['inside_s']:>13.2f}{row['calls']:>8}{row['healthd_share']:>14.1%}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
