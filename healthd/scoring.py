"""Scoring: the metric definitions of DESIGN.md as pure functions of (truth, answers, time).

Every metric is kept as integer counts (numerator and denominator per domain) and turned into
ratios only at the end, so re-asking a subset of probes and adjusting the counts gives
exactly the numbers that asking every probe gives.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from healthd.model import (
    DOMAINS,
    HISTORICAL,
    Domain,
    Fact,
    FactKey,
    Probe,
    RetrievedFact,
    Status,
    stored_by_slot,
)

BUCKETS: tuple[str, ...] = ("all", *DOMAINS)

# Count fields, per bucket.
(
    POOL,
    FRESH,
    CONSISTENT,
    EXPECTED,
    COVERED,
    PROBES,
    CONTAMINATED,
    CONFLICTS,
    FORGET_DUE,
    FORGOTTEN,
) = range(10)
_FIELDS = 10
SIZE = len(BUCKETS) * _FIELDS

Windows = Mapping[str, timedelta]
DEFAULT_WINDOWS: Mapping[str, timedelta] = {
    "ownership": timedelta(days=30),
    "tech": timedelta(days=90),
    "decision": timedelta(days=180),
    "requirement": timedelta(days=365),
}
DEFAULT_FORGETTING_WINDOW = 3


class TruthView(Protocol):
    def status_of(self, key: FactKey, value: str, at: datetime) -> Status: ...
    def held(self, key: FactKey, at: datetime) -> Sequence[tuple[str, Domain]]: ...
    def multi_valued(self, key: FactKey) -> bool: ...


@dataclass(frozen=True, slots=True)
class Metrics:
    freshness: float | None
    consistency: float | None
    coverage: float | None
    forgetting: float | None
    contamination: float | None
    conflicts: int

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "freshness": self.freshness,
            "consistency": self.consistency,
            "coverage": self.coverage,
            "forgetting": self.forgetting,
            "contamination": self.contamination,
            "conflicts": self.conflicts,
        }


def ratio(numerator: int, denominator: int) -> float | None:
    """A share, or None when there is nothing to take a share of."""
    return numerator / denominator if denominator else None


_OFFSET = {name: i * _FIELDS for i, name in enumerate(BUCKETS)}


def _cells(domain: str, field: int) -> tuple[int, int]:
    """The count index of ``field`` for every bucket and for ``domain``'s own."""
    return field, _OFFSET[domain] + field


#: Per domain, per field: :func:`_cells`
_FIELD_CELLS = {
    domain: tuple(_cells(domain, field) for field in range(_FIELDS)) for domain in DOMAINS
}


def metrics_from_counts(counts: Sequence[int]) -> dict[str, Metrics]:
    out = {}
    for i, bucket in enumerate(BUCKETS):
        c = counts[i * _FIELDS : (i + 1) * _FIELDS]
        out[bucket] = Metrics(
            freshness=ratio(c[FRESH], c[POOL]),
            consistency=ratio(c[CONSISTENT], c[POOL]),
            coverage=ratio(c[COVERED], c[EXPECTED]),
            forgetting=ratio(c[FORGOTTEN], c[FORGET_DUE]),
            contamination=ratio(c[CONTAMINATED], c[PROBES]),
            conflicts=c[CONFLICTS],
        )
    return out


@stored_by_slot
@dataclass(frozen=True, slots=True)
class ProbeScore:
    """One probe's share of the counts at one moment.

    ``cells`` are (count index, amount) pairs to add; ``stale_after`` is the earliest instant
    at which one of its fresh facts turns stale, so a caller knows when to score it again.
    """

    cells: tuple[tuple[int, int], ...]
    stale_after: datetime | None


def score_probe(
    probe: Probe,
    facts: Sequence[RetrievedFact],
    truth: TruthView,
    at: datetime,
    windows: Windows = DEFAULT_WINDOWS,
) -> ProbeScore:
    """Score one probe in P_i against its answer at ``at``.

    Facts flagged ``historical`` are history the memory was asked to mark as such: they are
    left out of every metric.
    """
    added: list[int] = []  # each count index once per 1 it adds, as counted
    stale_after: datetime | None = None
    contaminated = False
    values_by_key: dict[FactKey, set[str]] = {}
    several = False  # some key served more than once: may conflict
    status_of = truth.status_of
    for fact in facts:
        if HISTORICAL in fact.flags:
            continue
        domain = fact.domain
        cells = _FIELD_CELLS[domain]
        added += cells[POOL]
        validated = fact.validated_at if fact.validated_at is not None else fact.written_at
        deadline = _plus(validated, windows[domain])
        if at <= deadline:
            added += cells[FRESH]
            if stale_after is None or deadline < stale_after:
                stale_after = deadline
        key = fact.key
        status = status_of(key, fact.value, at)
        if status == "current":
            added += cells[CONSISTENT]
        elif status in ("superseded", "invalidated"):
            contaminated = True
        values = values_by_key.get(key)
        if values is None:
            values_by_key[key] = {fact.value}
        else:
            values.add(fact.value)
            several = True

    probe_key = probe.key
    returned = values_by_key.get(probe_key, ())
    for value, domain in truth.held(probe_key, at):
        cells = _FIELD_CELLS[domain]
        added += cells[EXPECTED]
        if value in returned:
            added += cells[COVERED]

    cells = _FIELD_CELLS[probe.domain]
    added += cells[PROBES]
    if contaminated:
        added += cells[CONTAMINATED]
    if several and any(
        len(values) > 1 and not truth.multi_valued(key) for key, values in values_by_key.items()
    ):
        added += cells[CONFLICTS]
    return ProbeScore(_shared_cells(tuple(added)), stale_after)


def _shared_cells(added: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """The (count index, amount) pairs of count indices ``added`` once per 1 they add, in
    the order first added: the one shared copy of them."""
    shared = _CELLS_ADDED.get(added)
    if shared is not None:
        return shared
    counts: dict[int, int] = {}
    for index in added:
        counts[index] = counts.get(index, 0) + 1
    cells = tuple(counts.items())
    shared = _CELLS.get(cells)
    if shared is None:
        if len(_CELLS) < _CELLS_MAX:
            shared = _CELLS[cells] = cells
        else:  # a rarer combination: its own tuple, of shared pairs
            shared = tuple(_pair(cell) for cell in cells)
    if len(added) <= _ADDED_KEPT_MAX and len(_CELLS_ADDED) < _CELLS_MAX:
        _CELLS_ADDED[added] = shared
    return shared


# Most probes add one of a few combinations of counts: each score holds the one shared copy
# of its cells (a daemon keeps every probe's score; about 0.6 KiB a probe otherwise).
_CELLS: dict[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]] = {}
_CELLS_MAX = 4096
# the same by the indices as added (cheaper to look up than the pairs, built again), for
# answers of a few facts
_CELLS_ADDED: dict[tuple[int, ...], tuple[tuple[int, int], ...]] = {}
_ADDED_KEPT_MAX = 32


@functools.lru_cache(maxsize=65536)
def _pair(cell: tuple[int, int]) -> tuple[int, int]:
    """One (count index, amount) pair for every score that adds it (a baseline answering
    with every record it wrote adds counts in the hundreds, in ever new combinations)."""
    return cell


def _plus(at: datetime, window: timedelta) -> datetime:
    """``at + window``, or the latest representable time when that is past year 9999."""
    try:
        return at + window
    except OverflowError:
        return datetime.max.replace(tzinfo=at.tzinfo)


def forgetting_check(
    fact: Fact, facts: Sequence[RetrievedFact], truth: TruthView, at: datetime
) -> tuple[int, ...]:
    """The counts one ended fact adds when its forgetting window closes at ``at``.

    A fact that has become current again by then (a decision reversed back) is no longer
    expected to be forgotten and counts nothing.
    """
    if truth.status_of(fact.key, fact.value, at) == "current":
        return ()
    still_returned = any(
        not f.historical and f.key == fact.key and f.value == fact.value for f in facts
    )
    cells = list(_cells(fact.domain, FORGET_DUE))
    if not still_returned:
        cells.extend(_cells(fact.domain, FORGOTTEN))
    return tuple(cells)


def add_cells(counts: list[int], cells: Iterable[tuple[int, int]], sign: int = 1) -> None:
    for index, amount in cells:
        counts[index] += sign * amount
