"""Merging the timelines of several sources into one, ordered by event time."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
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


def merge_sources(
    named: Sequence[tuple[str, Iterable[ChangeEvent]]], conflicts: list[str]
) -> list[ChangeEvent]:
    """:func:`merge_timelines` of each named source's events (each already without repeats
    of its own), one event an id: a timeline with one id twice is refused by its reader, and
    a memory applies an event once per id, so the second of two sources giving one id would
    be lost there without a word. The id stays with the first source (in the configuration's
    order, as the daemon's first run pulls them); another source's event under it, the same,
    is taken once, and one with other content is left out and said in ``conflicts``, naming
    both sources."""
    from healthd.sources import describe_event, differs_from

    first: dict[str, tuple[str, ChangeEvent]] = {}
    lists: list[list[ChangeEvent]] = []
    for name, events in named:
        kept = []
        for event in events:
            before = first.setdefault(event.id, (name, event))
            if before[0] == name:
                kept.append(event)
            elif differs := differs_from(before[1], event):
                conflicts.append(
                    f"source {name!r}: event id {event.id!r} was given first by source "
                    f"{before[0]!r} with other content ({differs}): "
                    f"{describe_event(before[1])} there, {describe_event(event)} here; not taken"
                )
        lists.append(kept)
    return merge_timelines(*lists)
