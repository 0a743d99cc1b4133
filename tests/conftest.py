"""Fixtures shared by every test directory."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_helpers import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium driven by Playwright; skipped where either is missing."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, timeout=60_000
        )
        yield launched
        launched.close()


# What `scripts/test.sh --fast` leaves out besides the tests marked slow: the memory products'
# suites and their targets in the contract, the image, and what drives a browser.
_PRODUCT_PATHS = (
    "tests/agentcore/",
    "tests/test_mem0_",
    "tests/test_graphiti_",
    "tests/test_standin_mem0.py",
    "tests/daemon/test_daemon_real_memories.py",
    "tests/daemon/test_agentcore",
)
_PRODUCT_TARGETS = ("mem0-", "graphiti-", "agentcore-")
_IMAGE_PATHS = ("tests/monitoring/test_image.py",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.relative_to(config.rootpath).as_posix()
        callspec = getattr(item, "callspec", None)
        if path.startswith(_PRODUCT_PATHS) or (
            path.startswith("tests/contract/")
            and callspec is not None
            and callspec.id.startswith(_PRODUCT_TARGETS)
        ):
            item.add_marker(pytest.mark.product)
        if path.startswith(_IMAGE_PATHS):
            item.add_marker(pytest.mark.image)
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
