"""Harness overhead: of a whole `evaluate` run, how much is healthd's own work (replay,
ground truth, probes, scoring) and how much is spent inside the memory adapter's calls?

    .venv/bin/python benchmarks/bench_harness_overhead.py [--events 2000] [--keys 300] [--repeat 3]
        [--only LABEL]

The servers run in their own processes, as they would in production: `healthd serve-memory`
for the `http` target and the AgentCore emulator with a semantic strategy (`python -m
healthd.testing.agentcore_events`) for `agentcore` (native, managed and events: healthd's
CreateEvent, the emulator's consolidation, its records retrieved), both on free 127.0.0.1
ports; `langmem` runs LangMem's own manager in this process against the stand-in LLM
(`python -m healthd.testing.standin_llm`, its own process), on the example only (a LangMem
write is a model call: the generated timeline would take an hour). Each target replays the
bundled example and a generated timeline (benchmarks/bench_evaluator.py's generator) in
this process, its memory wrapped in a timer around reset, apply, answer and changed_keys.
"time in adapter" is the sum of those calls (the adapter's own code, boto3's or requests'
serialization, the network round trip and the server's work); healthd's share is the rest
of the run. Prints one line per run and the median share per target; the target is under
10 %.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import timed  # noqa: E402
from bench_evaluator import generate  # noqa: E402

from healthd.cli import example_timeline_path  # noqa: E402
from healthd.evaluator import evaluate  # noqa: E402
from healthd.memory import build_memory, parse_target  # noqa: E402
from healthd.memory._agentcore_records import FILTER_KEYS  # noqa: E402
from healthd.model import ChangeEvent  # noqa: E402
from healthd.probes import build_probe_set  # noqa: E402
from healthd.timeline import read_timeline  # noqa: E402

MEMORY_ID = "healthd_bench-a1b2c3d4e5"
STRATEGY_ID = "facts-a1b2c3d4e5"
_URL = re.compile(rb"on (http://127\.0\.0\.1:\d+)")


@contextmanager
def server(*command: str) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, *command], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert proc.stderr is not None
        match = _URL.search(proc.stderr.readline())
        if match is None:
            raise SystemExit(f"{command} did not start")
        yield match.group(1).decode()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def standin_llm() -> Iterator[str]:
    """The stand-in LLM in its own process; its base URL (it prints it on stdout)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "healthd.testing.standin_llm", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().decode().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def measure(target: str, events: list[ChangeEvent]) -> tuple[float, float, int, int]:
    probes = build_probe_set(events)
    memory = timed(build_memory(parse_target(target)))
    start = time.perf_counter()
    result = evaluate(events, memory, probes, name=target, kind="bench")  # type: ignore[arg-type]
    total = time.perf_counter() - start
    memory.close()
    return total, memory.inside, memory.calls, result.probe_queries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--keys", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="run only targets whose label contains this")
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
    )
    timelines = {
        "example": read_timeline(example_timeline_path()),
        f"generated {args.events} events": generate(args.events, args.keys),
    }
    with (
        standin_llm() as llm_url,
        server("-m", "healthd", "serve-memory", "--port", "0") as memory_url,
        server(
            "-m",
            "healthd.testing.agentcore_events",
            "--port",
            "0",
            "--memory-id",
            MEMORY_ID,
            *(f"--indexed-key={k}:{t}" for k, t in FILTER_KEYS.items()),
            "--strategy-id",
            STRATEGY_ID,
            "--style",  # the workload the figures in docs/ were measured on
            "verbatim",
        ) as ac_url,
    ):
        agentcore = (
            f"memory_id={MEMORY_ID},shadow=on,region=us-east-1,endpoint_url={ac_url},"
            "namespace_prefix=healthd/bench"
        )
        targets = {
            "http (serve-memory)": f"http:base_url={memory_url},namespace=healthd/bench,shadow=on",
            "agentcore native (emulator)": f"agentcore:mode=native,{agentcore}",
            "agentcore managed (emulator)": f"agentcore:mode=managed,{agentcore}",
            "agentcore events (emulator)": (
                f"agentcore:mode=events,memory_id={MEMORY_ID},shadow=on,region=us-east-1,"
                f"endpoint_url={ac_url},actor_id=healthd-bench,strategy_id={STRATEGY_ID}"
            ),
            "langmem (stand-in LLM)": (
                f"langmem:model=openai:healthd-standin,base_url={llm_url},"
                "api_key_env=BENCH_STANDIN_KEY,enable_deletes=on"
            ),
        }
        os.environ["BENCH_STANDIN_KEY"] = "standin-not-a-secret"
        print(f"{'target':30} {'timeline':22} {'total s':>8} {'adapter s':>9} {'calls':>7} "
              f"{'probe q':>7} {'healthd share':>13}")  # fmt: skip
        shares: dict[str, list[float]] = {}
        for label, target in targets.items():
            if args.only not in label:
                continue
            for timeline, events in timelines.items():
                if label.startswith("langmem") and timeline != "example":
                    continue
                for _ in range(args.repeat):
                    total, adapter, calls, queries = measure(target, events)
                    share = (total - adapter) / total
                    shares.setdefault(f"{label}, {timeline}", []).append(share)
                    print(f"{label:30} {timeline:22} {total:8.2f} {adapter:9.2f} {calls:7d} "
                          f"{queries:7d} {share:12.1%}", flush=True)  # fmt: skip
    print("median healthd share (target < 10%):")
    worst = 0.0
    for name, values in shares.items():
        median = statistics.median(values)
        worst = max(worst, median)
        print(f"  {name:55} {median:6.1%}")
    print(f"worst median: {worst:.1%}  ({'under' if worst < 0.10 else 'OVER'} 10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
