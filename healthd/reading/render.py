"""A change event as one plain statement, so a memory that stores text can store what it is
sent (the HTTP contract's applied event carries it as ``text``). Pure."""

from __future__ import annotations

from healthd.model import ChangeEvent, Fact


def _names(value: str) -> str:
    handles = value.split()
    if len(handles) > 1 and all(h.startswith("@") for h in handles):
        return ", ".join(handles[:-1]) + " and " + handles[-1]
    return value


def sentence(fact: Fact) -> str:
    """The fact as a sentence: "Billing is owned by @bob and @carol."."""
    text = _phrase(fact)
    return f"{text[0].upper()}{text[1:]}."


def _phrase(fact: Fact) -> str:
    subject, predicate, value = fact.subject, fact.predicate, _names(fact.value)
    pred = predicate.lower()
    if pred == "exists":
        return f"{subject} exists" if value.lower() == "true" else f"{subject} does not exist"
    if pred in ("owner", "owners", "owned_by", "codeowners", "maintainers", "maintainer"):
        return f"{subject} is owned by {value}"
    if pred in ("on_call", "on-call"):
        return f"{value} is on call for {subject}"
    if pred == "language":
        return f"{subject} is written in {value}"
    if pred.startswith("dependency:"):
        return f"{subject} depends on {predicate.split(':', 1)[1]} {value}"
    if pred == "requirement":
        return f"{subject} requires {value}"
    words = predicate.replace("_", " ").replace("-", " ").replace(":", " ")
    return f"the {words} of {subject} is {value}"


def statement(event: ChangeEvent) -> str:
    """What the event says, as a sentence: "auth-service is written in go (it was node)"."""
    fact = event.fact
    if event.type == "invalidated":
        return f"It is no longer true that {_phrase(fact)}."
    if event.type == "revised" and event.previous is not None:
        before = event.previous
        if before.key == fact.key:
            return (
                f"{_phrase(fact)[0].upper()}{_phrase(fact)[1:]} (replacing {_names(before.value)})."
            )
        return f"{_phrase(fact)[0].upper()}{_phrase(fact)[1:]}; it is no longer true that {_phrase(before)}."
    text = _phrase(fact)
    return f"{text[0].upper()}{text[1:]}."
