"""Evaluator benchmark: what an event costs, against the floor for the same work.

Every run is its own process (so peak memory is its own); times are CPU seconds of the
replay alone (timeline generation excluded), the best of ``--repeat`` processes. Printed:

* incremental events/s at 10k events over 1k keys, 100k/10k and 100k/1k, and the ratio of
  per-event CPU at 100k/1k to 10k/1k (does an event cost more as each key's history grows?);
* the floor next to healthd at 100k/10k: a bare SQLite script doing the same work per event
  (one transaction with the log insert and the record write, plus one indexed select per
  probe query healthd issued, spread over the events that issued them) plus the ground-truth
  fold alone, and healthd/floor;
* full vs incremental on a workload with >= 1,000 probes: probe queries full/incremental and
  whether every stage's metrics are identical (a digest of all of them).

Not a test: figures depend on the machine; compare the ratios, measured side by side.

    .venv/bin/python benchmarks/bench_evaluator.py            # the figures above
    .venv/bin/python benchmarks/bench_evaluator.py --quick    # a tenth of the sizes
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import sqlite3
import subprocess
import sys
import time
from array import array
from datetime import UTC, datetime, timedelta

from healthd.evaluator import StageResult, evaluate
from healthd.memory import build_memory, parse_target
from healthd.model import ChangeEvent, Fact, FactKey
from healthd.probes import build_probe_set
from healthd.truth import GroundTruth

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


def generate(events: int, keys: int, seed: int = 7, grow: float = 0.25) -> list[ChangeEvent]:
    """A realistic mix: keys appear over time, most later events re-validate or revise what
    is there, some invalidate, whole services are occasionally decommissioned (cascading to
    their facts), and a few changes arrive late with an older event time. ``grow`` is the share
    of events that add a key while fewer than ``keys`` exist."""
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
        if (created < keys and (roll < grow or not live)) or len(live) < 3:
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


def run_one(
    events: int, keys: int, mode: str, target: str, grow: float, check_metrics: bool = False
) -> dict:
    timeline = generate(events, keys, grow=grow)
    probes = build_probe_set(timeline)
    spec = parse_target(target)
    memory = build_memory(spec)
    digest = hashlib.sha256()

    def on_stage(stage: StageResult) -> None:
        # Every metric is a ratio of these counts, so equal counts mean equal metrics; the
        # full vs incremental comparison also digests the metrics themselves, built per stage.
        digest.update(array("q", stage.counts).tobytes())
        if check_metrics:
            digest.update(
                repr(sorted((b, m.as_dict().items()) for b, m in stage.metrics.items())).encode()
            )

    started = time.process_time()
    result = evaluate(
        timeline,
        memory,
        probes,
        name=target,
        kind=spec.kind,
        mode=mode,
        keep_stages=False,
        on_stage=on_stage,
    )
    cpu = time.process_time() - started
    return {
        "events": events,
        "keys": keys,
        "mode": mode,
        "target": target,
        "probes": len(probes),
        "cpu_seconds": cpu,
        "events_per_second": events / cpu,
        "probe_queries": result.probe_queries,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "metrics_sha256": digest.hexdigest(),
    }


FLOOR_SCHEMA = """
CREATE TABLE log (id INTEGER PRIMARY KEY, subject TEXT, predicate TEXT, at REAL, kind TEXT,
                  value TEXT, depends_on TEXT);
CREATE INDEX log_key ON log(subject, predicate);
CREATE TABLE records (id INTEGER PRIMARY KEY, subject TEXT, predicate TEXT, value TEXT,
                      domain TEXT, updated_at REAL, state TEXT);
CREATE INDEX records_key ON records(subject, predicate, state);
"""


def run_floor(events: int, keys: int, queries: int, grow: float) -> dict:
    """The same work with nothing but SQLite and the truth fold: per event one transaction
    (log insert, record write), ``queries`` indexed selects spread evenly over the events,
    and GroundTruth.apply plus a status read of the event's facts."""
    timeline = generate(events, keys, grow=grow)
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(FLOOR_SCHEMA)
    truth = GroundTruth()
    owed = 0.0
    per_event = queries / events
    started = time.process_time()
    for event in timeline:
        fact = event.fact
        db.execute("BEGIN")
        db.execute(
            "INSERT INTO log (subject, predicate, at, kind, value, depends_on) "
            "VALUES (?,?,?,?,?,?)",
            (
                fact.subject,
                fact.predicate,
                event.timestamp.timestamp(),
                event.type,
                fact.value,
                json.dumps([list(k) for k in event.depends_on]),
            ),
        )
        db.execute(
            "UPDATE records SET state = 'ended' WHERE subject = ? AND predicate = ? "
            "AND state = 'active' AND value != ?",
            (fact.subject, fact.predicate, fact.value),
        )
        db.execute(
            "INSERT INTO records (subject, predicate, value, domain, updated_at, state) "
            "VALUES (?,?,?,?,?, 'active')",
            (fact.subject, fact.predicate, fact.value, fact.domain, event.timestamp.timestamp()),
        )
        db.execute("COMMIT")
        truth.apply(event)
        at = truth.latest
        assert at is not None
        for key in event.keys:
            truth.current(key, at)
        owed += per_event
        while owed >= 1:
            owed -= 1
            db.execute(
                "SELECT id, value, domain, updated_at FROM records WHERE subject = ? AND "
                "predicate = ? AND state = 'active'",
                (fact.subject, fact.predicate),
            ).fetchall()
    cpu = time.process_time() - started
    return {
        "events": events,
        "keys": keys,
        "queries": queries,
        "cpu_seconds": cpu,
        "events_per_second": events / cpu,
    }


def child(*args: object) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    return json.loads(done.stdout)


def best(repeat: int, *args: object) -> dict:
    runs = [child(*args) for _ in range(repeat)]
    return min(runs, key=lambda r: r["cpu_seconds"])


def show(row: dict) -> None:
    print(
        f"  {row['mode']:<11} {row['events']:>7} events {row['keys']:>6} keys "
        f"{row['probes']:>6} probes | {row['cpu_seconds']:8.2f} s CPU "
        f"{row['events_per_second']:7.0f} ev/s | {row['probe_queries']:>9} probe queries | "
        f"peak RSS {row['peak_rss_mb']:6.1f} MB"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs="+")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--target", default="reference")
    parser.add_argument("--skip-full", action="store_true", help="leave out full vs incremental")
    args = parser.parse_args()
    if args.child:
        what, *rest = args.child
        if what == "floor":
            events, keys, queries, grow = rest
            print(json.dumps(run_floor(int(events), int(keys), int(queries), float(grow))))
        else:
            events, keys, mode, target, grow, *check = rest
            row = run_one(int(events), int(keys), mode, target, float(grow), check == ["metrics"])
            print(json.dumps(row))
        return 0
    scale = 10 if args.quick else 1
    small, big, deep = (10_000, 1_000), (100_000, 10_000), (100_000, 1_000)
    small, big, deep = ((e // scale, k // scale) for e, k in (small, big, deep))
    t, r = args.target, args.repeat
    print(f"target {t}: incremental, CPU seconds, best of {r}")
    rows = {}
    for name, (e, k) in (("small", small), ("big", big), ("deep", deep)):
        rows[name] = best(r, "run", e, k, "incremental", t, 0.25)
        show(rows[name])
    per = {n: row["cpu_seconds"] / row["events"] for n, row in rows.items()}
    print(
        f"  per-event CPU {deep[0]}/{deep[1]} vs {small[0]}/{small[1]}: "
        f"{per['deep'] / per['small']:.2f}x (target <= 1.3)"
    )
    print(f"  {big[0]}/{big[1]}: {rows['big']['events_per_second']:.0f} ev/s (target >= 5000)")
    floor = best(r, "floor", *big, rows["big"]["probe_queries"], 0.25)
    print(
        f"  floor (bare SQLite, same inserts and {floor['queries']} selects, plus the truth "
        f"fold): {floor['cpu_seconds']:.2f} s CPU, {floor['events_per_second']:.0f} ev/s"
    )
    print(
        f"  healthd/floor: {rows['big']['cpu_seconds'] / floor['cpu_seconds']:.1f}x (target <= 3)"
    )
    if args.skip_full:
        return 0
    e, k = (3_000 // scale, 1_200 // scale)
    print(f"target {t}: full vs incremental on {e} events over {k} keys, keys grow fast")
    inc = child("run", e, k, "incremental", t, 0.6, "metrics")
    full = child("run", e, k, "full", t, 0.6, "metrics")
    show(full)
    show(inc)
    same = inc["metrics_sha256"] == full["metrics_sha256"]
    print(f"  identical stage metrics at every stage: {'yes' if same else 'NO'}")
    print(
        f"  probe queries full/incremental: {full['probe_queries'] / inc['probe_queries']:.0f}x"
        f"  (target >= 50x; grows with the number of probes)"
    )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
