"""HTML report benchmark: size, generation time and time to open in chromium.

Evaluates generated timelines (the evaluator benchmark's generator) against reference and
naive, then times the HTML report from the finished results (the JSON report shape, the
page model with downsampling, the HTML) and, where Debian's chromium and Playwright are
installed, how long headless chromium takes from navigation until the charts and the
drill-down are drawn. Not a test: figures depend on the machine.

    .venv/bin/python benchmarks/bench_report.py            # 2k and 100k events
    .venv/bin/python benchmarks/bench_report.py --quick    # 2k and 20k events
"""

from __future__ import annotations

import argparse
import os
import shutil
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--keep", metavar="DIR", help="write the reports here and keep them")
    args = parser.parse_args()
    sizes = [(2000, 400), (20000, 2000) if args.quick else (100000, 10000)]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.keep or tmp)
        for events, keys in sizes:
            bench(events, keys, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
