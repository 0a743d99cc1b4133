"""Merging the timelines of several sources into one, ordered by event time."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from datetime import datetime

from healthd.model import ChangeEvent


def merge_timelines(*event_lists: Iterable[ChangeEvent]) -> list[ChangeEvent]:
    """One timeline: the sources merged by event time, each keeping its own arrival order.

    A source's order is part of its timeline (a backdated event found late must arrive
    late), so lists are merged at their heads, not sorted. The merge is stable: on equal
    timestamps the first list goes first. Sources whose events are in time order give a
    timeline in time order.
    """

    def keyed(
        rank: int, events: Iterable[ChangeEvent]
    ) -> Iterator[tuple[datetime, int, int, ChangeEvent]]:
        for position, event in enumerate(events):
            yield (event.timestamp, rank, position, event)

    merged = heapq.merge(*(keyed(rank, events) for rank, events in enumerate(event_lists)))
    return [item[3] for item in merged]
