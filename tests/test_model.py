"""The model refuses events that break its invariants, with one line naming event and field."""

from __future__ import annotations

import pytest
from timeline_builders import day, fact

from healthd.errors import TimelineError
from healthd.model import ChangeEvent

go, node = fact("auth", "language", "go"), fact("auth", "language", "node")


def test_a_revision_without_its_previous_fact_is_refused():
    with pytest.raises(TimelineError) as caught:
        ChangeEvent("e7", "revised", day(1), "test", go)
    assert (
        str(caught.value) == "event 'e7', field 'previous': missing (required on a revised event)"
    )
    assert caught.value.field == "previous"


def test_only_a_revision_carries_a_previous_fact():
    with pytest.raises(TimelineError, match=r"event 'e8', field 'previous': only a revised"):
        ChangeEvent("e8", "added", day(1), "test", go, previous=node)


def test_an_unknown_event_type_is_refused():
    with pytest.raises(TimelineError, match=r"event 'e9', field 'type': unknown type 'renamed'"):
        ChangeEvent("e9", "renamed", day(1), "test", go)  # type: ignore[arg-type]
