"""Reader benchmark: the default reader's cost per served item, and the bundled example
scored from text-only answers against structured answers, in one run.

* per item: every item of the shipped labelled set read ``--rounds`` times;
* the example: the reference memory in process, answering with structured facts, then the
  same memory answering with served items only (each fact as a sentence, a historical one
  as "Until recently: ..."), read back by the default reader; same metrics at every stage
  (checked), best of ``--repeat`` runs each, in ``full`` and ``incremental`` mode. Target:
  text-only at most 1.5x the structured run;
* a large organisation: ``--people N`` identity records (a Backstage catalog's Users) made
  into the reader's people table, then one owners sentence read against them, beside the
  same reading with no people (target: the table in seconds, a reading within 10x).

    .venv/bin/python benchmarks/bench_reader.py [--people 20000]
"""

from __future__ import annotations

import argparse
import platform
import time
from datetime import datetime

from healthd.cli import example_timeline_path
from healthd.evaluator import evaluate
from healthd.memory.reference import ReferenceMemory
from healthd.model import HISTORICAL, Answer, FactKey, Probe, ServedItem
from healthd.people import Person
from healthd.probes import build_probe_set
from healthd.reading import build_reader, with_people
from healthd.reading.labelled import load_labelled
from healthd.reading.render import sentence
from healthd.timeline import read_timeline


class TextOnly(ReferenceMemory):
    """The reference memory, serving text: each retrieved fact as a sentence, no fields."""

    def answer(self, probe: Probe, at: datetime) -> Answer:
        items = []
        for fact in super().answer(probe, at).facts:
            text = sentence(fact.fact)
            if HISTORICAL in fact.flags:
                text = f"Until recently: {text}"
            items.append(
                ServedItem(
                    text,
                    fact.record_id,
                    fact.written_at,
                    fact.validated_at,
                    flags=fact.flags - {HISTORICAL},
                )
            )
        return Answer(probe.id, (), tuple(items))


def per_item(rounds: int) -> tuple[float, int]:
    reader = build_reader()
    items = load_labelled()
    started = time.perf_counter()
    for _ in range(rounds):
        for item in items:
            reader.read(item.text, item.key, item.values)
    elapsed = time.perf_counter() - started
    return elapsed / (rounds * len(items)), len(items)


def example(mode: str, repeat: int) -> tuple[float, float, int]:
    events = read_timeline(example_timeline_path())
    probes = build_probe_set(events)
    best = {"structured": float("inf"), "text": float("inf")}
    counts = {}
    items = 0
    for _ in range(repeat):
        for name, kind in (("structured", ReferenceMemory), ("text", TextOnly)):
            memory = kind()
            started = time.perf_counter()
            result = evaluate(events, memory, probes, name=name, kind=name, mode=mode)
            best[name] = min(best[name], time.perf_counter() - started)
            memory.close()
            counts[name] = [s.counts for s in result.stages]
            if name == "text":
                items = result.reading.items
    if counts["structured"] != counts["text"]:
        raise SystemExit("text-only answers scored differently from structured ones")
    return best["structured"], best["text"], items


def large_org(count: int, reads: int = 200) -> tuple[float, float, float]:
    """(seconds to build the reader's people table from ``count`` Users, seconds a reading
    with them, seconds a reading with none)."""
    people = [
        Person(f"user{i}", (f"First{i} Last{i}",), (f"first{i}.last{i}@acme.io",))
        for i in range(count)
    ]
    started = time.perf_counter()
    reader = with_people(build_reader(), people)
    table = time.perf_counter() - started
    key = FactKey("checkout", "owners")
    values = [f"@user{i}" for i in range(20)]
    costs = []
    for each in (reader, build_reader()):
        started = time.perf_counter()
        for _ in range(reads):
            each.read("checkout is owned by First3 Last3", key, values)
        costs.append((time.perf_counter() - started) / reads)
    return table, costs[0], costs[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--people", type=int, default=20_000)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, Python {platform.python_version()}")
    table, with_them, without = large_org(args.people)
    print(
        f"{args.people} people: table {table:.2f} s, a reading {with_them * 1e3:.2f} ms against "
        f"{without * 1e3:.2f} ms with none: {with_them / without:.1f}x (target <= 10x)"
    )
    cost, count = per_item(args.rounds)
    print(f"default reader: {cost * 1e6:.0f} µs per served item ({count} items x {args.rounds})")
    for mode in ("incremental", "full"):
        structured, text, items = example(mode, args.repeat)
        print(
            f"bundled example, {mode}: structured {structured * 1000:.0f} ms, text-only "
            f"{text * 1000:.0f} ms ({items} items read at the end): {text / structured:.2f}x "
            f"(target <= 1.5x), identical metrics at every stage"
        )


if __name__ == "__main__":
    main()
