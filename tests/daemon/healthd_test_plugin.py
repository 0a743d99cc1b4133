"""A healthd plugin used by the daemon tests (loaded with ``plugins = [...]`` or
``HEALTHD_PLUGINS``): extra kinds that make failures and slow runs happen for real.

* memory ``exploding``: every ``apply`` raises (its message carries a fake token, which must
  never reach a log line);
* source ``sleepy``: sleeps ``delay`` seconds in every pull (``first_delay`` in the first,
  when given), then reads ``path`` like the ``file`` source (or yields nothing without one).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from healthd.errors import ConfigError, MemoryAdapterError
from healthd.memory import memory_kinds, register_memory

# The memory registry loads its built-in kinds only while it is empty: load them first.
memory_kinds()

from healthd.memory.naive import NaiveMemory
from healthd.sources import PullResult, register_source
from healthd.sources.file import FileSource

FAKE_TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


class ExplodingMemory(NaiveMemory):
    kind = "exploding"

    def apply(self, event):
        raise MemoryAdapterError(
            f"upstream rejected the write: "
            f"https://bot:{FAKE_TOKEN}@memory.example/api token={FAKE_TOKEN}"
        )


@register_memory("exploding")
def exploding(options: Mapping[str, Any]) -> ExplodingMemory:
    return ExplodingMemory()


class SleepySource:
    kind = "sleepy"

    def __init__(
        self, name: str, delay: float, path: str | None, first_delay: float | None = None
    ) -> None:
        self.name = name
        self.delay = delay
        self._first_delay = first_delay
        self._file = FileSource(name, path) if path else None

    def pull(self, cursor: str | None) -> PullResult:
        first, self._first_delay = self._first_delay, None
        time.sleep(self.delay if first is None else first)
        if self._file is None:
            return PullResult([], cursor)
        return self._file.pull(cursor)


@register_source("sleepy")
def sleepy(name: str, options: Mapping[str, Any]) -> SleepySource:
    unknown = set(options) - {"delay", "path", "first_delay"}
    if unknown:
        raise ConfigError(f"source {name!r}: unknown option {sorted(unknown)[0]!r}")
    first = options.get("first_delay")
    return SleepySource(
        name,
        float(options.get("delay", 1.0)),
        options.get("path"),
        None if first is None else float(first),
    )
