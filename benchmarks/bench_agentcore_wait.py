"""AgentCore's consistency wait, paid once per change or once per batch of writes.

An AgentCore memory shows a write to reads only some time later; with
``consistency_wait_seconds`` the adapter polls until an answer holds what it wrote. Scored
after every change (``batch_events = 1``, the default) a replay pays that delay once per
change; with ``batch_events = N`` it writes N changes, waits once, and scores one stage.

The AgentCore emulator (``healthd.testing.agentcore``, real boto3 over HTTP on 127.0.0.1)
with a read-after-write delay (2 s by default) replays one generated timeline in
``mode = "managed"`` with each batch size, in one run: the whole timeline with the batches,
and, so that the run does not take an hour, the first ``--per-change-events`` of it scored
after every change, whose rate gives the whole timeline's time at that rate (labelled
"projected"). Not a test: figures depend on the machine and the delay.

    .venv/bin/python benchmarks/bench_agentcore_wait.py                # 1,000 events, 2 s
    .venv/bin/python benchmarks/bench_agentcore_wait.py --events 200 --delay 0.5
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
from healthd.memory import build_memory, parse_target
from healthd.memory._agentcore_records import FILTER_KEYS
from healthd.model import ChangeEvent
from healthd.probes import build_probe_set
from healthd.testing.agentcore import AgentCoreEmulator

MEMORY_ID = "healthd_shadow-a1b2c3d4e5"
DUMMY_AWS = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLEDUMMY0000",
    "AWS_SECRET_ACCESS_KEY": "dummy-secret-not-a-secret-0123456789",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


def replay(emu: AgentCoreEmulator, events: list[ChangeEvent], batch: int, wait: float) -> Any:
    target = (
        f"agentcore:memory_id={MEMORY_ID},namespace_prefix=healthd/shadow,shadow=on,"
        f"region=us-east-1,endpoint_url={emu.url},mode=managed,"
        f"consistency_wait_seconds={wait},batch_events={batch}"
    )
    memory = build_memory(parse_target(target))
    started = time.perf_counter()
    try:
        result = evaluate(
            events, memory, build_probe_set(events), name="agentcore", kind="agentcore"
        )
        unsettled = memory.unsettled_reads  # type: ignore[attr-defined]
    finally:
        memory.close()
    return time.perf_counter() - started, result, unsettled


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--delay", type=float, default=2.0, help="read-after-write delay (s)")
    parser.add_argument("--batch", type=int, default=100, help="batch_events of the batched run")
    parser.add_argument("--per-change-events", type=int, default=30)
    args = parser.parse_args()
    os.environ.update(DUMMY_AWS)
    events = generate(args.events, args.keys)
    wait = max(10.0, 5 * args.delay)
    print(
        f"AgentCore emulator, read-after-write delay {args.delay} s, "
        f"consistency_wait_seconds {wait}, mode managed; {len(events)} events"
    )
    with AgentCoreEmulator(read_after_write_delay=args.delay) as emu:
        emu.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
        few = events[: args.per_change_events]
        per_change, _, unsettled_one = replay(emu, few, 1, wait)
        batched, result, unsettled = replay(emu, events, args.batch, wait)
    projected = per_change / len(few) * len(events)
    print(
        f"batch_events=1   : {len(few)} events in {per_change:.1f} s "
        f"({per_change / len(few):.2f} s/event, {unsettled_one} unsettled reads); "
        f"projected for {len(events)}: {projected / 60:.1f} min"
    )
    print(
        f"batch_events={args.batch}: {len(events)} events in {batched:.1f} s "
        f"({batched / 60:.1f} min, {len(result.stages)} stages, {unsettled} unsettled reads)"
    )
    print(f"ratio: {projected / batched:.1f}x faster with batches of {args.batch}")
    final = result.metrics["all"]
    print(
        "final (batched): "
        + ", ".join(
            f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
            for k, v in final.as_dict().items()
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
