"""The model refuses events that break its invariants, with one line naming event and field."""

from __future__ import annotations

import copy
import pickle

import pytest
from timeline_builders import day, fact

from healthd.errors import TimelineError
from healthd.logging import redact_text
from healthd.model import ChangeEvent, Fact, FactKey, Probe, as_text

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


def module(name: str) -> ChangeEvent:
    """What the git source makes of a module directory git gave as ``name``."""
    return ChangeEvent(
        f"git:{name}",
        "added",
        day(1),
        "repo",
        fact(name, "dependency:x", "v1"),
        depends_on=(FactKey(name, "exists"),),
        metadata={"manifest": f"{name}/go.mod"},
    )


def test_names_that_are_not_text_are_written_out_and_two_stay_two():
    e9, said = as_text(module("caf\udce9"))  # Latin-1 b"caf\xe9", decoded with surrogateescape
    e8, _ = as_text(module("caf\udce8"))
    assert said == "id 'git:caf\\udce9'"  # the first field that held one
    assert (e9.id, e9.fact.subject, e9.depends_on) == (
        "git:caf\\xe9",
        "caf\\xe9",
        (FactKey("caf\\xe9", "exists"),),
    )
    assert e9.metadata == {"manifest": "caf\\xe9/go.mod"}
    assert e8.fact.subject == "caf\\xe8" != e9.fact.subject  # two names stay two
    escaped, _ = as_text(module("x\ud800"))  # a JSON escape's lone surrogate, not a byte
    assert escaped.fact.subject == "x\\ud800"
    ascii_event = module("api")
    assert as_text(ascii_event) == (ascii_event, None)


def test_error_text_stored_or_shown_is_text_whatever_a_name_held():
    # a Jira key that held a lone surrogate, in the error the daemon stores in its state
    text = redact_text("issue PAY-\udce9: field 'changelog' is missing")
    assert text == "issue PAY-\\xe9: field 'changelog' is missing"
    text.encode("utf-8")


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))])
def test_a_copied_or_unpickled_fact_or_probe_still_has_its_key(how):
    held = Fact("auth-service", "runtime", "go", "tech")
    probe = Probe("p-1", "What does auth-service run on?", "auth-service", "runtime", "tech")
    for original in (held, probe):
        again = how(original)
        assert again == original
        assert again.key == FactKey("auth-service", "runtime")
