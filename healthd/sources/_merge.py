"""Merging the timelines of several sources into one, ordered by event time."""

from __future__ import annotations

import heapq
from typing import Iterable, Iterator

from healthd.model import ChangeEvent


def merge_timelines(*event_lists: Iterable[ChangeEvent]) -> list[ChangeEvent]:
    """One timeline ordered by event time.

    The merge is stable: events with equal timestamps keep the order of the lists they
    came from (the first list's first), and within one list their own order. Lists need
    not be sorted; each is sorted by time (stably) first.
    """

    def keyed(rank: int, events: Iterable[ChangeEvent]) -> Iterator[tuple]:
        ordered = sorted(events, key=lambda e: e.timestamp)
        for position, event in enumerate(ordered):
            yield (event.timestamp, rank, position, event)

    merged = heapq.merge(*(keyed(rank, events) for rank, events in enumerate(event_lists)))
    return [item[3] for item in merged]
