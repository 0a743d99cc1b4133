"""Graphiti runs: peak memory (RSS) and healthd's share of the time, per ingestion mode.

    .venv/bin/python benchmarks/bench_graphiti.py memory [--events 5000] [--ingest edges]
        [--buffer-pool 256MiB]
    .venv/bin/python benchmarks/bench_graphiti.py overhead [--events 1000]
        [--episode-events 200] [--repeat 1]

Each run is a child process (a fresh interpreter, so its peak RSS is the run's own):
`healthd.evaluator.evaluate` over a generated timeline (benchmarks/bench_evaluator.py's
generator, 300 keys) or the bundled example, into a `graphiti` target on embedded Kuzu with
the hashing embedder (the figures are Graphiti's and Kuzu's, not an embedding model's).
`ingest=episodes` talks to the stand-in LLM (healthd.testing.standin_llm, not a model) in its
own process on 127.0.0.1, as a team's LLM would be elsewhere.

`memory` prints the child's peak RSS (ru_maxrss). Kuzu's default buffer pool is 80 % of the
machine's memory; `--buffer-pool 18GiB` approximates it on a 23 GiB machine.
`overhead` prints, per mode and timeline, the run's wall time, the time inside the memory's
calls (Graphiti, Kuzu, the LLM round trips) and healthd's share: the rest (target < 10 %).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


@contextmanager
def standin() -> Iterator[str]:
    """The stand-in LLM in its own process; its base URL (style verbatim: the workload the
    figures in docs/ were measured on)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "healthd.testing.standin_llm", "--port", "0", "--style", "verbatim"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def child(args: argparse.Namespace) -> int:
    from _timing import timed
    from bench_evaluator import generate

    from healthd.cli import example_timeline_path
    from healthd.evaluator import evaluate
    from healthd.memory import TargetSpec, build_memory
    from healthd.probes import build_probe_set
    from healthd.timeline import read_timeline

    events = (
        read_timeline(example_timeline_path())
        if args.events == 0
        else generate(args.events, args.keys)
    )
    table: dict[str, Any] = {"driver": {"buffer_pool_size": args.buffer_pool}}
    if args.ingest == "episodes":
        table["llm"] = {"model": "standin", "base_url": args.llm}
        table["embedder"] = {"provider": "hashing"}
    options: dict[str, Any] = {"ingest": args.ingest, "graphiti": table}
    if args.ingest == "edges":
        options["embedder"] = "hashing"
    memory = timed(build_memory(TargetSpec("graphiti", options, "bench")))
    started = time.perf_counter()
    result = evaluate(events, memory, build_probe_set(events), name="bench", kind="bench")  # type: ignore[arg-type]
    total = time.perf_counter() - started
    memory.close()
    print(
        json.dumps(
            {
                "events": len(events),
                "total": total,
                "inside": memory.inside,
                "calls": memory.calls,
                "probe_queries": result.probe_queries,
            }
        )
    )
    return 0


def run_child(
    ingest: str, events: int, keys: int, buffer_pool: str, llm: str
) -> tuple[dict[str, Any], int]:
    """The child's figures and its peak RSS in bytes."""
    command = [
        sys.executable,
        __file__,
        "_child",
        "--ingest",
        ingest,
        "--events",
        str(events),
        "--keys",
        str(keys),
        "--buffer-pool",
        buffer_pool,
        "--llm",
        llm,
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"the {ingest} run failed (status {status})")
    return json.loads(out.strip().splitlines()[-1]), usage.ru_maxrss * 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["memory", "overhead", "_child"])
    parser.add_argument("--ingest", choices=["edges", "episodes"], default="edges")
    parser.add_argument("--events", type=int, default=None, help="0: the bundled example")
    parser.add_argument("--keys", type=int, default=300)
    parser.add_argument(
        "--episode-events",
        type=int,
        default=200,
        help="overhead: generated events for ingest=episodes (every probe is asked again at "
        "every stage, and every event is several LLM round trips)",
    )
    parser.add_argument("--buffer-pool", default="256MiB")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--llm", default="")
    args = parser.parse_args()
    if args.what == "_child":
        return child(args)
    if args.what == "memory":
        events = 5000 if args.events is None else args.events
        with standin() as llm:
            figures, peak = run_child(args.ingest, events, args.keys, args.buffer_pool, llm)
        print(
            f"graphiti ingest={args.ingest}, {figures['events']} events, buffer pool "
            f"{args.buffer_pool}: peak RSS {peak / 1024**2:.0f} MiB "
            f"({figures['total']:.0f} s)"
        )
        return 0
    events = 1000 if args.events is None else args.events
    print(f"{'mode':9} {'timeline':16} {'total s':>8} {'inside s':>8} {'calls':>6} {'share':>6}")
    worst = 0.0
    with standin() as llm:
        for ingest, generated in (("edges", events), ("episodes", args.episode_events)):
            for count in (0, generated):
                for _ in range(args.repeat):
                    figures, _ = run_child(ingest, count, args.keys, args.buffer_pool, llm)
                    share = (figures["total"] - figures["inside"]) / figures["total"]
                    worst = max(worst, share)
                    timeline = "example" if count == 0 else f"generated {count}"
                    print(
                        f"{ingest:9} {timeline:16} {figures['total']:8.1f} "
                        f"{figures['inside']:8.1f} {figures['calls']:6d} {share:6.1%}",
                        flush=True,
                    )
    print(f"worst healthd share: {worst:.1%} ({'under' if worst < 0.10 else 'OVER'} 10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
