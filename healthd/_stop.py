"""Stopping: one process-wide flag, set when the daemon is asked to stop, and the waits and
subprocesses that give up as soon as it is set (or their time runs out)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence

STOPPING = threading.Event()
_POLL_SECONDS = 0.2


class Interrupted(Exception):
    """A wait or a subprocess was cut short: the process is stopping, or time ran out."""


def sleep(seconds: float) -> None:
    """``time.sleep`` that returns as soon as the process is stopping."""
    STOPPING.wait(max(0.0, seconds))


def run(
    args: Sequence[str], *, env: Mapping[str, str] | None, timeout: float, what: str
) -> subprocess.CompletedProcess[bytes]:
    """Run a subprocess to the end, capturing its output; kill it (and its children) and
    raise :class:`Interrupted` when ``timeout`` seconds pass or the process is stopping."""
    proc = subprocess.Popen(
        list(args),
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            out, err = proc.communicate(timeout=_POLL_SECONDS)
            return subprocess.CompletedProcess(list(args), proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            if STOPPING.is_set():
                _kill(proc)
                raise Interrupted(f"{what}: stopped, healthd is shutting down") from None
            if time.monotonic() >= deadline:
                _kill(proc)
                raise Interrupted(f"{what}: no answer within {timeout:g} s") from None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.communicate()
