"""Regenerate the README's screenshots of the HTML report for the bundled example.

Runs `healthd evaluate --html` on the bundled example (reference and naive, plus reference
with supersession switched off, so the drill-down shows a forgetting layer), opens the file
in Debian's headless chromium through Playwright, and writes

* docs/report.png: the top of the page (charts over the stages, hovered on a stage);
* docs/report-drill-down.png: the failing probes, filtered to the decision domain.

    .venv/bin/python scripts/report_screenshot.py [--html KEEP.html]

Needs the test extra (Playwright: `pip install -e '.[test]'`) and Debian's chromium.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("reference", "naive", "reference:supersession=off")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", metavar="FILE", help="keep the generated report here")
    parser.add_argument("--out", metavar="DIR", default=str(ROOT / "docs"))
    args = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print(
            "report_screenshot: needs Playwright, from the test extra: pip install -e '.[test]'",
            file=sys.stderr,
        )
        return 2
    chromium = shutil.which("chromium")
    if chromium is None:
        print("report_screenshot: Debian's chromium is not installed", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as tmp:
        html = Path(args.html or Path(tmp) / "report.html").resolve()
        command = [sys.executable, "-m", "healthd", "evaluate", "--html", str(html)]
        command += [part for t in TARGETS for part in ("--target", t)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, timeout=300)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(html.as_uri())
            page.wait_for_selector("body[data-ready=yes]")
            over = page.locator(".chart[data-target='1'] .u-over").bounding_box()
            page.mouse.move(over["x"] + over["width"] * 0.55, over["y"] + over["height"] * 0.5)
            page.screenshot(
                path=str(out / "report.png"), clip={"x": 0, "y": 0, "width": 1280, "height": 1000}
            )
            page.mouse.move(0, 0)
            page.select_option("#f-domain", "decision")
            page.locator("#failures").screenshot(path=str(out / "report-drill-down.png"))
            browser.close()
    print(f"wrote {out / 'report.png'} and {out / 'report-drill-down.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
