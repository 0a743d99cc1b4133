"""`healthd serve-memory` as a real process on a free 127.0.0.1 port."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_URL = re.compile(rb"on (http://127\.0\.0\.1:\d+)")


@contextmanager
def serve_memory(*args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Start the server, yield (its URL, the process), stop it with SIGTERM."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "healthd", "serve-memory", "--port", "0", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = _URL.search(line)
        if match is None:
            proc.kill()
            raise AssertionError(f"serve-memory did not start: {line!r} {proc.stderr.read()!r}")
        yield match.group(1).decode(), proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
