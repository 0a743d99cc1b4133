"""Regenerate the README's screenshots of the HTML report and of the daemon's page at `/`.

Without ``--live``: runs `healthd evaluate --html` on the bundled example (reference and
naive, plus reference with supersession switched off, so the verdict shows a crossing and
the drill-down a forgetting layer), opens the file in Debian's headless chromium through
Playwright, and writes

* docs/report.png: the top of the page (the verdict, then the charts);
* docs/report-drill-down.png: the failing probes, filtered to the decision domain.

With ``--live URL``: opens a running daemon's `/` (``healthd run`` on a real repository's
history, see the README) and writes docs/live-page.png, the top of the page: the verdict
first, then the targets, runs and sources.

Needs the ``test`` extra (Playwright) and Debian's chromium (scripts/test.sh installs both):

    .venv/bin/python scripts/report_screenshot.py [--html KEEP.html]
    .venv/bin/python scripts/report_screenshot.py --live http://127.0.0.1:9479/
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("reference", "naive", "reference:supersession=off")
VIEWPORT = {"width": 1280, "height": 1000}


def _report(page: Any, html: Path, out: Path) -> list[Path]:
    page.goto(html.as_uri())
    page.wait_for_selector("body[data-ready=yes]")
    page.screenshot(path=str(out / "report.png"), clip={"x": 0, "y": 0, **VIEWPORT})
    page.select_option("#f-domain", "decision")
    page.locator("#failures").screenshot(path=str(out / "report-drill-down.png"))
    return [out / "report.png", out / "report-drill-down.png"]


def _live(page: Any, url: str, out: Path) -> list[Path]:
    page.goto(url)
    page.wait_for_selector("body[data-ready=yes]")
    page.screenshot(path=str(out / "live-page.png"), clip={"x": 0, "y": 0, **VIEWPORT})
    return [out / "live-page.png"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", metavar="FILE", help="keep the generated report here")
    parser.add_argument("--live", metavar="URL", help="a running daemon's page to capture")
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
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport=VIEWPORT)
        if args.live:
            written = _live(page, args.live, out)
        else:
            html = Path(args.html or Path(tmp) / "report.html").resolve()
            command = [sys.executable, "-m", "healthd", "evaluate", "--html", str(html)]
            command += [part for t in TARGETS for part in ("--target", t)]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, timeout=300)
            written = _report(page, html, out)
        browser.close()
    print("wrote " + ", ".join(str(w) for w in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
