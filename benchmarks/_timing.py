"""A memory whose calls are timed, so a benchmark can tell healthd's own time from the time
spent inside the memory (its code, its client library, the round trip and the server)."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from healthd.memory import ChangeTracking, Memory
from healthd.model import Answer, ChangeEvent, FactKey, Probe


class Timed:
    """Forwards to a memory and adds up the time spent inside its calls; the evaluator sees
    the memory's own protocol."""

    def __init__(self, inner: Memory) -> None:
        self.inner = inner
        self.inside = 0.0
        self.calls = 0

    def _timed(self, call: Any, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args)
        finally:
            self.inside += time.perf_counter() - started
            self.calls += 1

    def reset(self) -> None:
        self._timed(self.inner.reset)

    def apply(self, event: ChangeEvent) -> None:
        self._timed(self.inner.apply, event)

    def answer(self, probe: Probe, at: datetime) -> Answer:
        result: Answer = self._timed(self.inner.answer, probe, at)
        return result

    def close(self) -> None:
        self.inner.close()


class TimedTracking(Timed):
    """The same, for a memory that reports the keys whose answers may have changed."""

    def changed_keys(self, at: datetime) -> set[FactKey] | None:
        assert isinstance(self.inner, ChangeTracking)
        result: set[FactKey] | None = self._timed(self.inner.changed_keys, at)
        return result


def timed(inner: Memory) -> Timed:
    return TimedTracking(inner) if isinstance(inner, ChangeTracking) else Timed(inner)
