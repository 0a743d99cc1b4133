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


@pytest.fixture(autouse=True)
def _no_deferred_logging_left() -> Iterator[None]:
    """A command a test ran may leave its logging configuration deferred (``healthd``'s CLI
    defers it until a logger first logs): applied in a later test, it would replace that
    test's ``capture_logs`` mid-way. It belongs to the test that made it."""
    from healthd import logging as healthd_logging

    yield
    healthd_logging._deferred.clear()


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


class DrippingHost:
    """A host on 127.0.0.1 that answers every connection with headers promising 100,000
    bytes and then a byte each half second: a call bounded only between two reads never
    ends. ``accepted`` counts the connections (a retry is a second one)."""

    def __init__(self) -> None:
        import socket
        import threading

        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen()
        self._stop = threading.Event()
        self.accepted = 0
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        import threading

        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def _drip(self, connection: Any) -> None:
        import time

        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                               b"Content-Length: 100000\r\n\r\n")  # fmt: skip
            while not self._stop.is_set():
                try:
                    connection.sendall(b" ")
                except OSError:
                    return
                time.sleep(0.5)

    def close(self) -> None:
        self._stop.set()
        self._listener.close()


@pytest.fixture
def dripping_host() -> Iterator[DrippingHost]:
    host = DrippingHost()
    try:
        yield host
    finally:
        host.close()
