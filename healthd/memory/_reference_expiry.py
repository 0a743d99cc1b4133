"""Expiry in the reference memory: the soft expiry and purge a record is stamped with when
written or validated again, and the heap of those instants that tells which keys' answers
changed by themselves, with no write (see :mod:`healthd.memory.reference`)."""

from __future__ import annotations

import heapq
from datetime import timedelta

from healthd.memory._reference_records import _Expiry, _Record
from healthd.memory._reference_store import _Store
from healthd.model import FactKey

_NO_EXPIRY: _Expiry = (None, None)


class _Deadlines(_Store):
    """The TTL settings, and the heap of the instants at which an active record soft-expires
    or is purged."""

    deadlines_compact_min = 4096  # entries in the expiry heap before it is first compacted

    ttl: bool
    ttl_windows: dict[str, timedelta]
    grace: float
    # (expiry or purge, key, opener) of every record written: a min-heap
    _deadlines: list[tuple[float, FactKey, int]]
    _deadlines_compact_at: int
    _deadlines_loaded: bool
    _expiries: dict[tuple[timedelta, float], _Expiry]

    def _expiry_after(self, domain: str) -> _Expiry:
        """How long after a validation a record soft-expires and is purged, as set now: the
        log keeps it with each entry, so a later TTL change touches only later writes."""
        if not self.ttl:
            return _NO_EXPIRY
        window = self.ttl_windows[domain]
        found = self._expiries.get((window, self.grace))
        if found is None:  # one pair of floats per setting, not per logged operation
            ttl = window.total_seconds()
            found = self._expiries[window, self.grace] = (ttl, ttl * (1.0 + self.grace))
        return found

    def _expired(self, since: float, until: float, changed: set[FactKey]) -> None:
        """Add to ``changed`` the keys with an active record whose expiry or purge falls in
        (since, until]: read from the instants writes pushed, each checked against the record
        as it is now."""
        if not self._deadlines_loaded:
            self._load_deadlines(since)
        heap = self._deadlines
        while heap and heap[0][0] <= until:
            deadline, key, opener = heapq.heappop(heap)
            record = self._live_deadline(key, opener, deadline)
            if record is None:
                continue
            purge = record.columns[4]
            if purge is not None and purge != deadline:  # its expiry: the purge is next
                heapq.heappush(heap, (purge, key, opener))
            if deadline > since:
                changed.add(key)

    def _load_deadlines(self, since: float) -> None:
        """Deadlines of records written before this process: read once."""
        self._flush()
        for subject, predicate, opener, expires, purge in self._db.execute(
            "SELECT subject, predicate, opened_by, expires_at, purge_at FROM records"
            " WHERE namespace = ? AND state = 'active'"
            " AND (expires_at > ? OR purge_at > ?)",
            (self.namespace, since, since),
        ):
            self._push_deadlines(FactKey(subject, predicate), opener, expires, purge)
        self._deadlines_loaded = True

    def _push_deadlines(
        self, key: FactKey, opener: int, expires: float | None, purge: float | None
    ) -> None:
        """Push the first instant at which the answer of an active record's key changes by
        itself: its expiry (its purge is pushed when the expiry comes: most records are
        validated again before they expire, and never need it)."""
        at = expires if expires is not None else purge
        if at is None:
            return
        heap = self._deadlines
        heapq.heappush(heap, (at, key, opener))
        if len(heap) >= self._deadlines_compact_at:
            self._compact_deadlines()

    def _compact_deadlines(self) -> None:
        """Drop the instants a re-validation has since replaced (most of the heap, in a
        history of frequent re-validations); keys not in the cache keep theirs unchecked."""
        live = self._cache.live
        heap = [
            (at, key, opener)
            for at, key, opener in self._deadlines
            if key not in live or self._live_deadline(key, opener, at) is not None
        ]
        heapq.heapify(heap)
        self._deadlines = heap
        self._deadlines_compact_at = max(self.deadlines_compact_min, 2 * len(heap))

    def _live_deadline(self, key: FactKey, opener: int, at: float) -> _Record | None:
        """The record ``opener`` opened, if it is active and still expires or is purged at
        ``at`` (a re-validation pushes its new instants and leaves the old ones to be skipped
        here; the instants of an ended record change no answer)."""
        record = self._records_of(key).get(opener)
        if record is not None and (record.columns[3] == at or record.columns[4] == at):
            return record
        return None
