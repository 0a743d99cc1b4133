"""Pages opened in headless Debian chromium (the ``browser`` fixture is in conftest.py).

``open_page`` loads a URL and records what a user's browser would complain about: console
errors, uncaught exceptions, and every request the page makes. ``page_data`` reads the page
model a report page embeds.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from typing import Any

CHROMIUM = shutil.which("chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]


@dataclass
class Visit:
    page: Any
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def open_page(browser: Any, url: str, width: int = 1280, height: int = 900) -> Visit:
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(15_000)
    visit = Visit(page)
    page.on(
        "console",
        lambda m: visit.console_errors.append(m.text) if m.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda e: visit.console_errors.append(f"uncaught: {e}"))
    page.on("request", lambda r: visit.requests.append(r.url))
    page.goto(url)
    page.wait_for_selector("body[data-ready=yes]")
    return visit


def page_data(html: str) -> dict:
    found = re.search(r"<script id='healthd-data' type='application/json'>(.*?)</script>", html)
    assert found, "no page model in the HTML"
    return json.loads(found.group(1))
