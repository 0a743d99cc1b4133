"""A timeline event as the episode a team's agent would give Graphiti: one plain sentence.

Pure: no I/O. The sentence says what changed in words (``The language of auth-service
changed from "node" to "go".``), values in double quotes so that a value holding "to" or a
full stop stays whole. What Graphiti makes of it (entities, edges, which old edges it
contradicts) is Graphiti's and its LLM's decision, not healthd's: the episode carries no
fact ids, no keys, no hints.

:data:`STATEMENT` is the grammar of these sentences, for whatever must read them back
(the stand-in LLM's responder, which plays the team's LLM in offline tests).
"""

from __future__ import annotations

import re

from healthd.model import ChangeEvent, Fact

SOURCE_DESCRIPTION = "project history replayed by healthd"

#: ``The <phrase> of <subject> <verb> "<value>".`` and ``<subject> <exists-verb>.``
STATEMENT = re.compile(
    r"^The (?P<phrase>.+?) of (?P<subject>\S+) (?:"
    r'changed from "(?P<old>[^"]*)" to "(?P<new>[^"]*)"'
    r'|(?P<verb>is still|is no longer|is) "(?P<value>[^"]*)"'
    r")\.$"
    r"|^(?P<existing>\S+) (?P<exists>exists|still exists|no longer exists)\.$"
)


def phrase(predicate: str) -> str:
    """A predicate in words: ``dependency:postgres`` is "postgres dependency",
    ``source_of_truth`` "source of truth"."""
    if predicate.lower().startswith("dependency:"):
        return f"{_words(predicate.split(':', 1)[1])} dependency"
    return _words(predicate)


def episode_text(event: ChangeEvent) -> str:
    """What the event says, as sentences, one a line."""
    fact = event.fact
    if fact.predicate == "exists":
        verb = {
            "added": "exists",
            "revised": "exists",
            "revalidated": "still exists",
            "invalidated": "no longer exists",
        }[event.type]
        if fact.value.lower() != "true" and event.type != "invalidated":
            verb = "no longer exists"
        return f"{fact.subject} {verb}."
    if event.type == "revised" and event.previous is not None:
        if event.previous.key == fact.key:
            return f'{_the(fact)} changed from "{event.previous.value}" to "{fact.value}".'
        return f'{_the(event.previous)} is no longer "{event.previous.value}".\n{_sentence(fact)}'
    if event.type == "invalidated":
        return f'{_the(fact)} is no longer "{fact.value}".'
    if event.type == "revalidated":
        return f'{_the(fact)} is still "{fact.value}".'
    return _sentence(fact)


def episode_name(event: ChangeEvent) -> str:
    """The episode's name: the event's id, as the team would name a ticket or a commit."""
    return event.id


def _sentence(fact: Fact) -> str:
    return f'{_the(fact)} is "{fact.value}".'


def _the(fact: Fact) -> str:
    return f"The {phrase(fact.predicate)} of {fact.subject}"


def _words(text: str) -> str:
    return re.sub(r"[_\-:./]+", " ", text).strip()
