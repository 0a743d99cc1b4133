"""Garbage-collector thresholds for a replay.

A replay allocates millions of small containers that live as long as the replay (log
entries, intervals, answers) and almost no reference cycles. With CPython's default
thresholds the collector scans that growing heap again and again: about a fifth of a
100k-event replay's CPU went to collections that freed nothing. During a replay the young
generation is collected every 100,000 allocations instead of every 700, and the older ones
less often; cycles are still collected, and the previous thresholds come back afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

REPLAY_THRESHOLDS = (100_000, 50, 100)


@contextmanager
def replay_collection() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(REPLAY_THRESHOLDS, before, strict=False)))
    try:
        yield
    finally:
        gc.set_threshold(*before)
