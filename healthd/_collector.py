"""Garbage-collector thresholds for a replay.

A replay allocates millions of small containers that live as long as the replay (log
entries, intervals, answers) and almost no reference cycles. With CPython's default
thresholds the collector scans that growing heap again and again: about a fifth of a
100k-event replay's CPU went to collections that freed nothing. During a replay the young
generation is collected every 100,000 allocations instead of every 700, and the older ones
less often; cycles are still collected, and the previous thresholds come back afterwards.

A one-off replay (`healthd evaluate`: replay, report, exit) goes further. Even those
collections found nothing on a 100k-event history (not one object in 12 collections and the
final one), yet cost about a tenth of its CPU: a collection reads every young object and
what it refers to, scattered over a heap of hundreds of MiB, about 1 to 3 µs an object.
So the young generation is collected only every :data:`ONE_OFF_YOUNG` allocations (what
cyclic garbage a memory might make is still freed, and never more than that much is held),
the older generations not at all, and at the end what survived is moved to the oldest
generation as it stands: restoring the default thresholds would otherwise scan it all at
the next allocation, to free nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

REPLAY_THRESHOLDS = (100_000, 50, 100)
ONE_OFF_YOUNG = 2_000_000  # net allocations of tracked objects between two collections
_NEVER = 1 << 30  # collections of the younger generation before an older one is collected


@contextmanager
def replay_collection() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(REPLAY_THRESHOLDS, before, strict=False)))
    try:
        yield
    finally:
        _settle()
        gc.set_threshold(*before)


def _settle() -> None:
    """What the young generations hold goes to the oldest one as it stands (freeze clears
    the allocation count, unfreeze hands the objects back to the collector, not counted as
    promoted): with the previous thresholds back, the next allocation would otherwise scan
    what the replay kept (a pull's events), to free nothing. Cycles among them are still
    freed by the next full collection."""
    gc.freeze()
    gc.unfreeze()


@contextmanager
def one_off_collection() -> Iterator[None]:
    """Thresholds for a replay whose process ends soon after it (see the module's text)."""
    before = gc.get_threshold()
    gc.set_threshold(max(ONE_OFF_YOUNG, before[0]), _NEVER, _NEVER)
    try:
        yield
    finally:
        _settle()  # no full collection follows for them alone either
        gc.set_threshold(*before)
