"""Stopping: one process-wide flag, set when the daemon is asked to stop, and the waits and
subprocesses that give up as soon as it is set (or their time runs out); and the run's
deadline (``run_timeout``), which every wait, subprocess and HTTP call of the run keeps to."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

STOPPING = threading.Event()
_POLL_SECONDS = 0.2
_run = threading.local()  # the deadline of the run this thread is doing, if any


class Interrupted(Exception):
    """A wait or a subprocess was cut short: the process is stopping, or time ran out."""


class RunTimedOut(Exception):
    """The run has taken its ``run_timeout``: what it was doing gives up."""


@contextmanager
def run_deadline(seconds: float, label: str) -> Iterator[None]:
    """Within this block the thread's run ends ``seconds`` from now; ``label`` names the
    bound in messages (``run_timeout=2h``)."""
    _run.deadline = time.monotonic() + seconds
    _run.label = label
    try:
        yield
    finally:
        _run.deadline = None


def run_time_left() -> float | None:
    """Seconds left of the current run (0 when its time is up), None outside a run."""
    deadline: float | None = getattr(_run, "deadline", None)
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def run_label() -> str:
    """The current run's bound, as the configuration names it (``run_timeout=2h``)."""
    return str(getattr(_run, "label", "run_timeout"))


def check_run_time(what: str) -> None:
    """Raise :class:`RunTimedOut` when the current run's time is up."""
    if run_time_left() == 0.0:
        raise RunTimedOut(f"{what}: the run took its {run_label()}; it ends here as a failure")


def sleep(seconds: float) -> None:
    """``time.sleep`` that returns as soon as the process is stopping (or, in a run, when
    the run's time is up)."""
    left = run_time_left()
    STOPPING.wait(max(0.0, seconds if left is None else min(seconds, left)))


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
    left = run_time_left()
    deadline = time.monotonic() + (timeout if left is None else min(timeout, left))
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
                if run_time_left() == 0.0:
                    raise Interrupted(f"{what}: stopped, the run took its {run_label()}") from None
                raise Interrupted(f"{what}: no answer within {timeout:g} s") from None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    _signal_group(proc)
    proc.communicate()


class Watch:
    """Processes that a thread streams from: blocked in a pipe read, it cannot keep to a
    deadline itself. Made inside a run, a Watch kills each process it holds (and the
    process's group) as soon as that run takes its ``run_timeout`` or healthd is stopping,
    and ``why`` then says which; outside a run it watches nothing. Its thread starts with
    the first process. Processes are started with ``start_new_session=True``, so that their
    children go too."""

    def __init__(self) -> None:
        left = run_time_left()
        self._deadline = None if left is None else time.monotonic() + left
        self._label = run_label()
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.why: str | None = None

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            if self.why is not None:
                _signal_group(proc)
            self._procs.add(proc)
            if self._deadline is not None and self._thread is None and not self._done.is_set():
                self._thread = threading.Thread(
                    target=self._watch, name="healthd-process-watch", daemon=True
                )
                self._thread.start()

    def discard(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def close(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def _watch(self) -> None:
        assert self._deadline is not None
        while not self._done.wait(_POLL_SECONDS):
            if STOPPING.is_set():
                why = "stopped, healthd is shutting down"
            elif time.monotonic() >= self._deadline:
                why = f"stopped, the run took its {self._label}"
            else:
                continue
            with self._lock:
                self.why = why
                for proc in self._procs:
                    _signal_group(proc)
            return


def _signal_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
