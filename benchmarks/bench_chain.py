"""Deep dependencies: `healthd evaluate` over a chain of modules, each depending on the one
before it (a library stack, a pipeline of stages), at two or more lengths.

Each timeline adds the chain's ``N`` modules in order (``mN/exists`` depending on
``mN-1/exists``), then one fact per module depending on its module's existence: 2N events.
A cost per event that stays flat as the chain grows says no step walks the whole chain; the
ratio of the longest chain's CPU per event to the shortest's is printed (1.0: linear; the
chain's length ratio: quadratic). Whole processes, CPU (user + system) from ``wait4``, the
lengths alternated ``--repeat`` times, medians.

    .venv/bin/python benchmarks/bench_chain.py                      # 1000, 2000, 4000
    .venv/bin/python benchmarks/bench_chain.py --lengths 2000 8000 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import measure  # noqa: E402

START = datetime(2025, 1, 1, tzinfo=UTC)


def write_chain(path: Path, length: int) -> int:
    """The chain's timeline; how many events it holds."""
    events = 0
    with open(path, "w", encoding="utf-8") as out:

        def emit(subject: str, predicate: str, value: str, depends_on: str | None) -> None:
            nonlocal events
            event: dict[str, object] = {
                "id": f"c{events}",
                "type": "added",
                "timestamp": (START + timedelta(minutes=events)).isoformat(),
                "source": "chain",
                "fact": {
                    "subject": subject,
                    "predicate": predicate,
                    "value": value,
                    "domain": "tech",
                },
            }
            if depends_on is not None:
                event["depends_on"] = [{"subject": depends_on, "predicate": "exists"}]
            out.write(json.dumps(event) + "\n")
            events += 1

        for n in range(length):
            emit(f"m{n:06d}", "exists", "true", f"m{n - 1:06d}" if n else None)
        for n in range(length):
            emit(f"m{n:06d}", "language", "go", f"m{n:06d}")
    return events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[1000, 2000, 4000])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for length in args.lengths:
            path = Path(tmp) / f"chain-{length}.jsonl"
            files[length] = (str(path), write_chain(path, length))
        cpu: dict[int, list[float]] = {length: [] for length in args.lengths}
        rss: dict[int, list[float]] = {length: [] for length in args.lengths}
        for _ in range(args.repeat):
            for length, (path, _) in files.items():
                seconds, peak = measure(
                    [sys.executable, "-m", "healthd", "evaluate", "--timeline", path]
                    + ["--output", "/dev/null"]
                )
                cpu[length].append(seconds)
                rss[length].append(peak)
        per_event = {}
        print(f"{'chain':>7} {'events':>7} {'CPU s':>8} {'us/event':>9} {'peak MiB':>9}")
        for length, (_, events) in files.items():
            seconds = statistics.median(cpu[length])
            per_event[length] = seconds / events * 1e6
            print(
                f"{length:>7} {events:>7} {seconds:>8.2f} {per_event[length]:>9.0f}"
                f" {statistics.median(rss[length]):>9.1f}"
            )
        short, long = min(args.lengths), max(args.lengths)
        print(
            f"per event, {long} against {short}: {per_event[long] / per_event[short]:.2f}x"
            f" (linear: 1.0x; quadratic: {long / short:.1f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
