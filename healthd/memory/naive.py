"""The `naive` memory: add-only, never forgets.

The design the seeds say fails a lifecycle test (single-pass extraction, ADD-only, no
delete): every assertion is appended as a new record, revisions and invalidations remove
nothing. Shown beside every target as the baseline.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from healthd.errors import ShadowViolation
from healthd.memory import register_memory
from healthd.memory._options import reject_unknown, switch
from healthd.model import Answer, ChangeEvent, FactKey, Probe, RetrievedFact


class NaiveMemory:
    kind = "naive"

    def __init__(self, *, shadow: bool = True) -> None:
        if not shadow:
            raise ShadowViolation("the naive memory is always a shadow; shadow=off is refused")
        # each key's records, newest first: the answer itself, shared with whoever holds it
        self._records: dict[FactKey, tuple[RetrievedFact, ...]] = {}
        self._touched: set[FactKey] = set()
        self._clock: datetime | None = None
        self._count = 0

    def reset(self) -> None:
        self._records.clear()
        self._touched.clear()
        self._clock = None
        self._count = 0

    def apply(self, event: ChangeEvent) -> None:
        if self._clock is None or event.timestamp > self._clock:
            self._clock = event.timestamp
        if event.type == "invalidated":
            return
        fact = event.fact
        self._count += 1
        record = RetrievedFact(
            fact.subject,
            fact.predicate,
            fact.value,
            fact.domain,
            f"naive-{self._count}",
            self._clock,
            event.timestamp,
        )
        key = fact.key
        self._records[key] = (record,) + self._records.get(key, ())
        self._touched.add(key)

    def answer(self, probe: Probe, at: datetime) -> Answer:
        return Answer(probe.id, self._records.get(probe.key, ()))

    def changed_keys(self, at: datetime) -> set[FactKey]:
        changed, self._touched = self._touched, set()
        return changed

    def close(self) -> None:
        self._records.clear()


@register_memory("naive")
def naive_memory(options: Mapping[str, Any]) -> NaiveMemory:
    reject_unknown(options, {"shadow"}, "naive")
    return NaiveMemory(shadow=switch(options, "shadow", True))
