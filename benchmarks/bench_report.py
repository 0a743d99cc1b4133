"""HTML report benchmark: size, generation time and time to open in chromium.

Evaluates generated timelines (the evaluator benchmark's generator) against reference and
naive, then times the HTML report from the finished results (the JSON report shape, the
page model with downsampling, the HTML) and, where Debian's chromium and Playwright are
installed, how long headless chromium takes from navigation until the charts and the
drill-down are drawn. Not a test: figures depend on the machine.

    .venv/bin/python benchmarks/bench_report.py            # 2k and 100k events
    .venv/bin/python benchmarks/bench_report.py --quick    # 2k and 20k events
    .venv/bin/python benchmarks/bench_report.py --from-memory 300 [--keep DIR]

``--from-memory MB``: peak RSS (ru_maxrss of a child process) of ``healthd report --from``
on a generated results file of about MB megabytes (a 2k-event evaluation of reference and
naive, its stages repeated with later indices and times to that size), streamed (today's
``load_report``) and read whole (``json.loads`` of the file, as before), the ratio of each
peak to the file's size, and the seconds each took. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_evaluator import generate

from healthd.evaluator import evaluate
from healthd.exporters.report import report_json
from healthd.memory import build_memory, parse_target
from healthd.probes import build_probe_set
from healthd.report import render_report, write_html

TARGETS = ("reference", "naive")
SIZE_LIMIT = 5 * 1024 * 1024
OPEN_LIMIT = 2.0


def open_seconds(path: Path) -> float | None:
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if chromium is None:
        return None
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto("about:blank")
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready=yes]", timeout=60_000)
            best = min(best, time.perf_counter() - started)
        browser.close()
    return best


def bench(events: int, keys: int, out: Path) -> None:
    timeline = generate(events, keys)
    probes = build_probe_set(timeline)
    started = time.perf_counter()
    results = []
    for label in TARGETS:
        spec = parse_target(label)
        memory = build_memory(spec)
        results.append(evaluate(timeline, memory, probes, name=label, kind=spec.kind))
        memory.close()
    evaluated = time.perf_counter() - started
    started = time.perf_counter()
    report = report_json(results, probes.version, len(probes))
    html = render_report(report, events=timeline)
    path = out / f"report-{events}.html"
    write_html(str(path), html)
    generated = time.perf_counter() - started
    size = os.path.getsize(path)
    opened = open_seconds(path)
    print(
        f"{events:>7} events {keys:>6} keys {len(probes):>5} probes x {len(TARGETS)} targets | "
        f"evaluate {evaluated:7.2f} s | HTML {generated:6.2f} s, {size / 1e6:6.2f} MB "
        f"({'under' if size < SIZE_LIMIT else 'OVER'} 5 MB) | opens in "
        + (
            f"{opened:5.2f} s ({'under' if opened < OPEN_LIMIT else 'OVER'} 2 s)"
            if opened is not None
            else "— (no chromium/playwright)"
        ),
        flush=True,
    )


def write_large_report(path: Path, megabytes: float) -> int:
    """A valid results file of about ``megabytes`` MB: a 2k-event evaluation's report, each
    target's stages repeated (indices and times moved on) until the file is that size.
    Returns the stages per target."""
    from datetime import timedelta

    from healthd.timeline import format_timestamp, parse_timestamp

    timeline = generate(2000, 400)
    probes = build_probe_set(timeline)
    results = []
    for label in TARGETS:
        spec = parse_target(label)
        memory = build_memory(spec)
        results.append(evaluate(timeline, memory, probes, name=label, kind=spec.kind))
        memory.close()
    report = report_json(results, probes.version, len(probes))
    one = sum(len(json.dumps(s, indent=1)) for s in report["targets"][0]["stages"])
    copies = max(1, int(megabytes * 1e6 / (one * len(TARGETS))))
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"probe_set": ' + json.dumps(report["probe_set"]) + ', "targets": [')
        for t, target in enumerate(report["targets"]):
            stages = target.pop("stages")
            first = parse_timestamp(stages[0]["timestamp"])
            span = parse_timestamp(stages[-1]["timestamp"]) - first + timedelta(hours=1)
            head = json.dumps(target)[:-1]
            out.write((", " if t else "") + head + ', "stages": [')
            n = 0
            for copy in range(copies):
                for stage in stages:
                    n += 1
                    moved = {
                        **stage,
                        "index": n,
                        "timestamp": format_timestamp(
                            parse_timestamp(stage["timestamp"]) + copy * span
                        ),
                    }
                    out.write(("," if n > 1 else "") + "\n" + json.dumps(moved, indent=1))
            out.write("]}")
        out.write("]}\n")
    return copies * len(stages)


WHOLE = r"""
import sys
from healthd.report import _load_whole, render_report, write_html
write_html(sys.argv[2], render_report(_load_whole(sys.argv[1])))
"""

PEAK = (
    "import resource, subprocess, sys, time; t = time.perf_counter();"
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, timeout=3600);"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN);"
    "print(r.ru_maxrss, time.perf_counter() - t)"
)


def from_memory(megabytes: float, out: Path) -> dict[str, object]:
    """Peak RSS of report --from on a generated file of about ``megabytes`` MB, streamed and
    read whole."""
    path = out / "results.json"
    stages = write_large_report(path, megabytes)
    size = os.path.getsize(path)
    row: dict[str, object] = {
        "results_file_mb": round(size / 1e6, 1),
        "stages_per_target": stages,
        "targets": len(TARGETS),
    }
    commands = {
        "streamed": [sys.executable, "-m", "healthd", "report", "--from", str(path),
                     "--html", str(out / "streamed.html")],
        "read_whole": [sys.executable, "-c", WHOLE, str(path), str(out / "whole.html")],
    }  # fmt: skip
    for label, command in commands.items():
        done = subprocess.run(
            [sys.executable, "-c", PEAK, *command], capture_output=True, text=True, check=True
        )
        peak_kib, seconds = done.stdout.split()
        peak = int(peak_kib) * 1024
        row[f"{label}_peak_rss_mb"] = round(peak / 1e6, 1)
        row[f"{label}_peak_to_file_size"] = round(peak / size, 3)
        row[f"{label}_seconds"] = round(float(seconds), 1)
    row["same_html"] = (out / "streamed.html").read_bytes() == (out / "whole.html").read_bytes()
    row["machine"] = {"cpus": os.cpu_count(), "load_average": os.getloadavg()}
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--keep", metavar="DIR", help="write the reports here and keep them")
    parser.add_argument(
        "--from-memory", type=float, metavar="MB", help="report --from on an MB-sized file"
    )
    args = parser.parse_args()
    if args.from_memory:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(args.keep or tmp)
            out.mkdir(parents=True, exist_ok=True)
            print(json.dumps(from_memory(args.from_memory, out), indent=1))
        return 0
    sizes = [(2000, 400), (20000, 2000) if args.quick else (100000, 10000)]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.keep or tmp)
        for events, keys in sizes:
            bench(events, keys, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
