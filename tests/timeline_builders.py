"""Terse builders for hand-written timelines in tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta

from healthd.model import Answer, ChangeEvent, Fact, FactKey, Probe, RetrievedFact

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def fact(subject: str, predicate: str, value: str, domain: str = "tech") -> Fact:
    return Fact(subject, predicate, value, domain)  # type: ignore[arg-type]


def _deps(deps: Iterable[tuple[str, str]]) -> tuple[FactKey, ...]:
    return tuple(FactKey(s, p) for s, p in deps)


def added(id: str, at: float, f: Fact, deps=(), multi: bool = False) -> ChangeEvent:
    return ChangeEvent(
        id,
        "added",
        day(at),
        "test",
        f,
        depends_on=_deps(deps),
        metadata={"cardinality": "multi"} if multi else {},
    )


def revalidated(id: str, at: float, f: Fact, deps=()) -> ChangeEvent:
    return ChangeEvent(id, "revalidated", day(at), "test", f, depends_on=_deps(deps))


def revised(
    id: str, at: float, previous: Fact, current: Fact, deps=(), multi: bool = False
) -> ChangeEvent:
    return ChangeEvent(
        id,
        "revised",
        day(at),
        "test",
        current,
        previous=previous,
        depends_on=_deps(deps),
        metadata={"cardinality": "multi"} if multi else {},
    )


def invalidated(id: str, at: float, f: Fact, reason: str = "gone") -> ChangeEvent:
    return ChangeEvent(id, "invalidated", day(at), "test", f, reason=reason)


def record(f: Fact, validated: float, *flags: str, rid: str = "") -> RetrievedFact:
    return RetrievedFact(
        f.subject,
        f.predicate,
        f.value,
        f.domain,
        rid or f"r-{f.value}",
        day(validated),
        day(validated),
        frozenset(flags),
    )


class ScriptedMemory:
    """A memory whose contents the test writes out: after event ``id`` is applied, each key
    listed under that id answers exactly the records given (other keys keep theirs)."""

    kind = "scripted"

    def __init__(self, script: Mapping[str, Mapping[FactKey, list[RetrievedFact]]]) -> None:
        self.script = script
        self.state: dict[FactKey, tuple[RetrievedFact, ...]] = {}
        self.changed: set[FactKey] = set()
        self.asked = 0

    def reset(self) -> None:
        self.state.clear()

    def apply(self, event: ChangeEvent) -> None:
        for key, records in self.script.get(event.id, {}).items():
            self.state[key] = tuple(records)
            self.changed.add(key)

    def changed_keys(self, at: datetime) -> set[FactKey]:
        changed, self.changed = self.changed, set()
        return changed

    def answer(self, probe: Probe, at: datetime) -> Answer:
        self.asked += 1
        return Answer(probe.id, self.state.get(probe.key, ()))

    def close(self) -> None:
        pass
