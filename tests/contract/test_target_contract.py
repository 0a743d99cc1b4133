"""The contract every target kind keeps, run against each kind that runs here (see
``conftest.FACTORIES``): apply, answer, reset, shadow isolation and event time."""

from __future__ import annotations

import pytest
from timeline_builders import added, day, fact, invalidated, revised

from healthd.errors import TargetError
from healthd.model import Probe
from healthd.reading import build_reader, read_facts

LANGUAGE = Probe(
    "lang", "What language is auth-service written in?", "auth-service", "language", "tech"
)
NODE = fact("auth-service", "language", "node")
GO = fact("auth-service", "language", "go")


def served(memory, at: float) -> tuple:
    """What the memory serves for the probe: its structured facts, and those the default
    reader reads in its served text (a kind that serves text, such as mem0)."""
    answer = memory.answer(LANGUAGE, day(at))
    held = {f.value: f.domain for f in (NODE, GO)}
    return answer.facts + read_facts(build_reader(), LANGUAGE.key, held, answer.items)[1]


def values(memory, at: float = 20) -> list[str]:
    return sorted(f.value for f in served(memory, at))


@pytest.fixture
def memory(target):
    memory = target.build(True)
    memory.reset()
    yield memory
    memory.close()


def test_an_applied_fact_is_answered_with_its_validation_time(memory):
    memory.apply(added("e1", 3, NODE))
    (got,) = served(memory, 4)
    assert (got.subject, got.predicate, got.value, got.domain) == (
        "auth-service",
        "language",
        "node",
        "tech",
    )
    assert got.last_validated == day(3)


def test_a_revision_serves_the_new_value_and_drops_the_old_one_if_the_kind_forgets(target, memory):
    memory.apply(added("e1", 1, NODE))
    memory.apply(revised("e2", 2, NODE, GO))
    assert values(memory) == (["go"] if target.forgets else ["go", "node"])


def test_an_invalidated_fact_is_no_longer_served_if_the_kind_forgets(target, memory):
    memory.apply(added("e1", 1, NODE))
    memory.apply(invalidated("e2", 2, NODE))
    assert values(memory) == ([] if target.forgets else ["node"])


def test_reset_empties_the_shadow_scope(memory):
    memory.apply(added("e1", 1, NODE))
    memory.reset()
    assert values(memory) == []
    memory.apply(added("e1", 1, GO))  # the same event id applies again after a reset
    assert values(memory) == ["go"]


def test_writes_and_reset_leave_data_outside_the_shadow_scope_untouched(target, memory):
    if target.isolation_checked_in is not None:
        pytest.skip(
            f"{target.kind}: its store admits one process; see {target.isolation_checked_in}"
        )
    if target.write_outside is None:
        pytest.skip(f"{target.kind} has no scope outside its own")
    target.write_outside()
    memory.apply(added("e1", 1, NODE))
    memory.reset()
    assert target.outside_intact()


def test_a_scope_not_declared_shadow_is_refused_before_any_write(target):
    if target.write_outside is not None:
        target.write_outside()
    before = target.snapshot()
    with pytest.raises(TargetError, match="shadow"):
        target.build(False)
    assert target.snapshot() == before


def test_a_backdated_event_does_not_override_a_newer_one(target, memory):
    if not target.honours_event_time:
        pytest.skip(f"{target.kind} does not claim to honour event time")
    memory.apply(added("e1", 10, GO))
    memory.apply(revised("late", 5, fact("auth-service", "language", "perl"), NODE))
    assert values(memory) == ["go"]
