"""Evaluator benchmark: incremental vs full, and incremental alone at scale.

Prints events per second, probe queries issued and peak resident memory for each run (each
in its own process, so peak memory is its own), the ratios, and whether the stage metrics
are identical. Not a test: figures depend on the machine; compare the ratios.

    .venv/bin/python benchmarks/bench_evaluator.py             # 5k/1k both modes + 100k/10k
    .venv/bin/python benchmarks/bench_evaluator.py --quick     # 2k/400 both modes + 20k/2k
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

from healthd.evaluator import evaluate
from healthd.memory import build_memory, parse_target
from healthd.model import ChangeEvent, Fact, FactKey
from healthd.probes import build_probe_set

DOMAIN_PREDICATES = {
    "tech": [
        "language",
        "dependency:postgres",
        "dependency:redis",
        "dependency:kafka-client",
        "runtime",
        "framework",
    ],
    "ownership": ["owners", "on_call"],
    "decision": ["broker", "source_of_truth", "deploy_strategy"],
    "requirement": ["latency_budget", "retention", "availability"],
}


def generate(events: int, keys: int, seed: int = 7) -> list[ChangeEvent]:
    """A realistic mix: keys appear over time, most later events re-validate or revise what
    is there, some invalidate, whole services are occasionally decommissioned (cascading to
    their facts), and a few changes arrive late with an older event time."""
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    step = timedelta(days=730) / events
    services = [f"svc-{i:04d}" for i in range(max(1, keys // 10))]
    pairs = [(d, p) for d, ps in DOMAIN_PREDICATES.items() for p in ps]
    live: dict[FactKey, Fact] = {}
    deps: dict[FactKey, tuple[FactKey, ...]] = {}
    created = 0
    out: list[ChangeEvent] = []
    clock = start
    for n in range(events):
        clock += step
        at = clock
        roll = rng.random()
        ev_id = f"b-{n}"
        if (created < keys and (roll < 0.25 or not live)) or len(live) < 3:
            service = rng.choice(services)
            exists = FactKey(service, "exists")
            if exists not in live:
                fact = Fact(service, "exists", "true", "tech")
                live[exists] = fact
                created += 1
                out.append(ChangeEvent(ev_id, "added", at, "bench", fact))
                continue
            domain, predicate = rng.choice(pairs)
            key = FactKey(service, predicate)
            if key in live:
                predicate = f"{predicate}-{created}"
                key = FactKey(service, predicate)
            fact = Fact(service, predicate, f"v{rng.randint(1, 9)}", domain)  # type: ignore[arg-type]
            live[key] = fact
            deps[key] = (exists,)
            created += 1
            out.append(ChangeEvent(ev_id, "added", at, "bench", fact, depends_on=(exists,)))
            continue
        key = rng.choice(list(live)) if len(live) < 64 else rng.choice(tuple(live))
        fact = live[key]
        if roll < 0.60:
            out.append(
                ChangeEvent(ev_id, "revalidated", at, "bench", fact, depends_on=deps.get(key, ()))
            )
        elif roll < 0.88 and key.predicate != "exists":
            if rng.random() < 0.05:
                at -= step * rng.randint(5, 200)  # found late, happened earlier
            new = Fact(fact.subject, fact.predicate, f"v{rng.randint(1, 99)}", fact.domain)
            if new.value == fact.value:
                new = Fact(fact.subject, fact.predicate, fact.value + "'", fact.domain)
            live[key] = new
            out.append(
                ChangeEvent(
                    ev_id, "revised", at, "bench", new, previous=fact, depends_on=deps.get(key, ())
                )
            )
        elif key.predicate == "exists" and rng.random() > 0.15:
            out.append(ChangeEvent(ev_id, "revalidated", at, "bench", fact))
        else:
            del live[key]
            if key.predicate == "exists":
                for dependent in [k for k, d in deps.items() if key in d and k in live]:
                    del live[dependent]
            out.append(ChangeEvent(ev_id, "invalidated", at, "bench", fact, reason="removed"))
    return out


def run_one(events: int, keys: int, mode: str, target: str) -> dict:
    timeline = generate(events, keys)
    probes = build_probe_set(timeline)
    spec = parse_target(target)
    memory = build_memory(spec)
    digest = hashlib.sha256()
    started = time.perf_counter()
    result = evaluate(
        timeline,
        memory,
        probes,
        name=target,
        kind=spec.kind,
        mode=mode,
        keep_stages=False,
        on_stage=lambda s: digest.update(
            repr(sorted((b, m.as_dict().items()) for b, m in s.metrics.items())).encode()
        ),
    )
    elapsed = time.perf_counter() - started
    return {
        "events": events,
        "keys": keys,
        "mode": mode,
        "target": target,
        "probes": len(probes),
        "seconds": elapsed,
        "events_per_second": events / elapsed,
        "probe_queries": result.probe_queries,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "metrics_sha256": digest.hexdigest(),
        "final_all": result.metrics["all"].as_dict(),
    }


def child(events: int, keys: int, mode: str, target: str) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(events), str(keys), mode, target],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def show(row: dict) -> None:
    print(
        f"  {row['mode']:<11} {row['events']:>7} events {row['keys']:>6} keys "
        f"{row['probes']:>6} probes | {row['seconds']:8.2f} s "
        f"{row['events_per_second']:9.0f} ev/s | {row['probe_queries']:>10} probe queries | "
        f"peak RSS {row['peak_rss_mb']:7.1f} MB"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=4, metavar=("EVENTS", "KEYS", "MODE", "TARGET"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--target", default="reference")
    args = parser.parse_args()
    if args.child:
        events, keys, mode, target = args.child
        print(json.dumps(run_one(int(events), int(keys), mode, target)))
        return 0
    small, large = (
        ((2_000, 400), (20_000, 2_000)) if args.quick else ((5_000, 1_000), (100_000, 10_000))
    )
    print(f"target {args.target}: incremental vs full on {small[0]} events over {small[1]} keys")
    inc = child(*small, "incremental", args.target)
    full = child(*small, "full", args.target)
    show(full)
    show(inc)
    same = inc["metrics_sha256"] == full["metrics_sha256"]
    print(f"  identical stage metrics: {'yes' if same else 'NO'}")
    print(
        f"  probe queries full/incremental: {full['probe_queries'] / inc['probe_queries']:.1f}x"
        f"  (target >= 50x)"
    )
    print(f"  speed incremental/full: {inc['events_per_second'] / full['events_per_second']:.1f}x")
    print(f"target {args.target}: incremental alone on {large[0]} events over {large[1]} keys")
    big = child(*large, "incremental", args.target)
    show(big)
    print(f"  replay time {big['seconds']:.1f} s (target < 60 s for 100,000 events)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
