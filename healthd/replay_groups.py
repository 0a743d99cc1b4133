"""How a replay hands its events to a memory: one at a time, except a revalidation sweep's
events about one subject, which a memory that writes sweeps one statement per subject
(:class:`~healthd.memory.SweepBatching` with ``sweeps = "subject"``) is given at once,
before the replay steps any of them (so a budget refusal leaves the whole group)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from healthd.memory import Memory, SweepBatching
from healthd.model import ChangeEvent, is_sweep


def sweep_groups(events: Iterable[ChangeEvent], memory: Memory) -> Iterator[list[ChangeEvent]]:
    """``events`` in order, in groups: for a memory that writes a revalidation sweep one
    subject at a time (:class:`~healthd.memory.SweepBatching` with ``sweeps = "subject"``),
    each run of consecutive sweep events about one subject at one time is a group; every
    other event is a group of its own."""
    if not (isinstance(memory, SweepBatching) and memory.sweeps == "subject"):
        for event in events:
            yield [event]
        return
    group: list[ChangeEvent] = []
    for event in events:
        if group and not (
            is_sweep(event)
            and is_sweep(group[0])
            and event.timestamp == group[0].timestamp
            and event.fact.subject == group[0].fact.subject
        ):
            yield group
            group = []
        group.append(event)
    if group:
        yield group


def write_group(memory: Memory, group: list[ChangeEvent]) -> bool:
    """Give the memory a group of :func:`sweep_groups` of two or more events at once (one
    statement); True when it did, and the replay steps them ``written``."""
    if len(group) < 2 or not isinstance(memory, SweepBatching):
        return False
    memory.apply_sweep(group)
    return True
