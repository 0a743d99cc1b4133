"""Scale benchmark: `healthd evaluate` against the independent floor, on project-shaped
histories, whole processes side by side in one sitting.

For each size EVENTSxKEYS it writes a timeline with ``project_history.py`` (once, into
``--workdir``), then runs, alternately, ``--repeat`` times each:

* A: ``python -m healthd evaluate --timeline FILE --target reference --output /dev/null``
* B: ``python benchmarks/floor.py FILE`` (sqlite3 and json only; see its docstring for what
  it does and does not do)

and prints each one's CPU seconds (user + system of the finished process, from ``wait4``),
microseconds of CPU per event and peak RSS (medians), and A/B as the median of the pairwise
ratios, so a machine whose speed drifts between pairs still gives a fair ratio. Sizes with
the same number of keys are then compared per event (the longest against the shortest).

Before any timing, for each ``--check`` size (default 10000x1000; ``--check`` alone: none),
both run once untimed, healthd with ``--format json``, and the floor's final metrics must
equal healthd's, every metric of every domain: both are printed, and a difference ends the
benchmark with status 1 (a floor that computes something else measures nothing).

    .venv/bin/python benchmarks/bench_scale.py                        # 100000x10000
    .venv/bin/python benchmarks/bench_scale.py --sizes 100000x1000 1000000x1000 --repeat 1
    .venv/bin/python benchmarks/bench_scale.py --check 10000x1000 100000x10000 --sizes
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from project_history import write  # noqa: E402


def measure(command: list[str]) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB) of one finished process."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=HERE.parent)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{command[:4]} exited {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def timeline(workdir: str, size: str) -> tuple[str, int]:
    """The project history of ``size`` (written once) and its event count."""
    events, keys = (int(n) for n in size.split("x"))
    path = os.path.join(workdir, f"project-{events}-{keys}.jsonl")
    if not os.path.exists(path):
        write(events, keys, path + ".tmp")
        os.replace(path + ".tmp", path)
    return path, events


_FINAL_METRICS = (
    "import json, sys; "
    "print(json.dumps(json.load(open(sys.argv[1]))['targets'][0]['final']['metrics']))"
)


def agree(path: str) -> bool:
    """Whether the floor's final metrics are healthd's; both printed, cell by cell."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        subprocess.run(
            [sys.executable, "-m", "healthd", "evaluate", "--timeline", path, "--target",
             "reference", "--format", "json", "--output", report.name],
            cwd=HERE.parent, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        # read in a child: a report of every stage is large, and a process this one starts
        # later would inherit its size as the peak RSS measured for it
        healthd = json.loads(
            subprocess.run(
                [sys.executable, "-c", _FINAL_METRICS, report.name],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
    floor = subprocess.run(
        [sys.executable, "-I", str(HERE / "floor.py"), path],  # -I: without healthd on the path
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    metrics = json.loads(floor)["metrics"]
    same = True
    print(f"final metrics of {os.path.basename(path)}, healthd | floor:")
    for bucket, row in healthd.items():
        cells = []
        for name, value in row.items():
            theirs = metrics[bucket][name]
            mark = "" if theirs == value else "  <-- DIFFERS"
            same = same and not mark
            cells.append(f"{name} {_cell(value)} | {_cell(theirs)}{mark}")
        print(f"  {bucket:>11}: " + "; ".join(cells))
    print("  agree: " + ("yes" if same else "NO"), flush=True)
    return same


def _cell(value: float | int | None) -> str:
    return "null" if value is None else f"{value:.6g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["100000x10000"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "healthd-scale"))
    parser.add_argument("--no-floor", action="store_true", help="healthd alone")
    parser.add_argument(
        "--check",
        nargs="*",
        default=["10000x1000"],
        help="sizes whose final metrics healthd and the floor must agree on (none: skip)",
    )
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    for size in args.check:
        if not agree(timeline(args.workdir, size)[0]):
            return 1
    per_event: dict[int, list[tuple[int, float]]] = {}
    print(f"{'size':>16} | {'healthd CPU':>11} {'us/ev':>6} {'RSS MiB':>7} | "
          f"{'floor CPU':>9} {'us/ev':>6} {'RSS MiB':>7} | healthd/floor")  # fmt: skip
    for size in args.sizes:
        path, events = timeline(args.workdir, size)
        keys = int(size.split("x")[1])
        healthd = [sys.executable, "-m", "healthd", "evaluate", "--timeline", path,
                   "--target", "reference", "--output", os.devnull]  # fmt: skip
        floor = [sys.executable, "-I", str(HERE / "floor.py"), path]
        a_runs, b_runs = [], []
        for _ in range(args.repeat):
            a_runs.append(measure(healthd))
            if not args.no_floor:
                b_runs.append(measure(floor))
        a_cpu = statistics.median(cpu for cpu, _ in a_runs)
        a_rss = max(rss for _, rss in a_runs)
        row = f"{size:>16} | {a_cpu:10.2f}s {a_cpu / events * 1e6:6.0f} {a_rss:7.1f} | "
        if b_runs:
            b_cpu = statistics.median(cpu for cpu, _ in b_runs)
            b_rss = max(rss for _, rss in b_runs)
            ratio = statistics.median(a / b for (a, _), (b, _) in zip(a_runs, b_runs, strict=True))
            row += f"{b_cpu:8.2f}s {b_cpu / events * 1e6:6.0f} {b_rss:7.1f} | {ratio:.2f}x"
            # issue 43's: at 100k events / 10k keys and 300k / 1k
            row += " (target <= 2.5)" if size in ("100000x10000", "300000x1000") else ""
        print(row, flush=True)
        per_event.setdefault(keys, []).append((events, a_cpu / events))
    for keys, rows in per_event.items():
        if len(rows) > 1:
            rows.sort()
            (short, short_cost), (long, long_cost) = rows[0], rows[-1]
            print(
                f"per-event CPU on {keys} keys, {long} vs {short} events: "
                f"{long_cost / short_cost:.2f}x (target <= 1.2)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
