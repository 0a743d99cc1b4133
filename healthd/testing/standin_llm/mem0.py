"""Stand-in for the LLM behind Mem0 2.2's extraction (``ADDITIVE_EXTRACTION_PROMPT``).

Mem0's ``add(messages, infer=True)`` sends one chat request: its system prompt ("You are a
Memory Extractor ...") and a user prompt of sections (``## Existing Memories`` as JSON,
``## New Messages`` as ``user: ...`` lines, ``## Observation Date``, ...); the model answers
``{"memory": [{"id": "0", "text": ..., "attributed_to": ..., "linked_memory_ids": [...]}]}``.

This is not a model. It extracts deterministically from the turns healthd renders for a
timeline event, ``(2024-03-01 09:00 UTC) Billing is owned by @bob.``: one memory per turn,
the statement grounded in its date as the prompt asks ("As of 2024-03-01, billing is owned
by @bob."), "it is no longer true that X is Y" said as "X is no longer Y", skipped when
an existing memory already states it (the prompt's deduplication rule); it links nothing.
A prompt that is not Mem0's is not its to answer (``None``); Mem0's prompt with a turn it
cannot read is refused with an error rather than guessed at.

That is ``style="verbatim"``, which reads the turns by the shape healthd gives them (kept so
that figures measured before styles existed reproduce exactly). ``style="varied"`` (the
default) reads the turns as English (:func:`healthd.testing.standin_style.read`: sentence
splitting, subject, verb group and object, a date wherever the turn gives one) and writes
each fact as :mod:`healthd.testing.standin_style` documents (reworded in several registers,
merged with another subject's fact, its subject left as "it", credited to a neighbouring
subject too, now and then with an invented value, dropped or stale), deterministically for
a seed; the other subjects come from the prompt's Existing Memories and Last k Messages. A
turn it reads nothing in gives no memory, as Mem0's prompt says for chatter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from healthd.testing import standin_style

SYSTEM_MARK = "You are a Memory Extractor"
_SECTION = re.compile(r"^## (.+)$", re.MULTILINE)
TURN = re.compile(r"^\((\d{4}-\d{2}-\d{2})[^)]*\) (\S.*)$")
_NO_LONGER = re.compile(r"[Ii]t is no longer true that (.+?)(?=;|\.\s|\.$|$)")
_REPLACING = re.compile(r" \(replacing [^)]*\)$")
_GROUNDED = re.compile(r"^As of (\d{4}-\d{2}-\d{2}), (.*)$", re.DOTALL)


class UnreadableTurn(ValueError):
    """Mem0's prompt, with a new message the stand-in does not know how to read."""


def respond(
    request: Mapping[str, Any],
    style: str = standin_style.DEFAULT_STYLE,
    seed: int = standin_style.DEFAULT_SEED,
    noise: standin_style.Noise | None = None,
) -> str | None:
    messages = request.get("messages")
    if not isinstance(messages, list) or len(messages) != 2:
        return None
    system, user = (m.get("content") if isinstance(m, Mapping) else None for m in messages)
    if not (isinstance(system, str) and isinstance(user, str)) or SYSTEM_MARK not in system:
        return None
    sections = prompt_sections(user)
    if "New Messages" not in sections or "Existing Memories" not in sections:
        return None
    existing = _existing(sections["Existing Memories"])
    if style == "varied":
        return json.dumps(
            {"memory": _noisy(_varied(sections, existing, seed), sections, seed, noise)}
        )
    memories: list[dict[str, Any]] = []
    for role, content in _turns(sections["New Messages"]):
        if role != "user":
            continue
        found = TURN.match(content)
        if found is None:
            raise UnreadableTurn(f"the Mem0 stand-in cannot read this turn: {content[:80]!r}")
        day, statement = found.groups()
        if any(_same(statement, text) for _, text in existing):
            continue  # "semantically equivalent to an Existing Memory": skipped
        memories.append(
            {
                "id": str(len(memories)),
                "text": grounded(statement, day),
                "attributed_to": "user",
                "linked_memory_ids": [],
            }
        )
    return json.dumps({"memory": _noisy(memories, sections, seed, noise)})


def _noisy(
    memories: list[dict[str, Any]],
    sections: Mapping[str, str],
    seed: int,
    noise: standin_style.Noise | None,
) -> list[dict[str, Any]]:
    """The memories as this replay of the same turns writes them (:class:`Noise`)."""
    if noise is None or not noise.share:
        return memories
    said = sections["New Messages"]
    day = next(iter(standin_style.dates(said)), None)
    texts = noise.vary([m["text"] for m in memories], seed=seed, key=said, day=day)
    return [
        {"id": str(i), "text": text, "attributed_to": "user", "linked_memory_ids": []}
        for i, text in enumerate(texts)
    ]


def _varied(
    sections: Mapping[str, str], existing: Sequence[tuple[str, str]], seed: int
) -> list[dict[str, Any]]:
    known = [claim for _, text in existing for claim in standin_style.read(text)]
    earlier = [
        claim
        for _, content in _turns(sections.get("Last k Messages", ""))
        for claim in standin_style.read(content)
    ]
    said = sections["New Messages"]
    memories: list[dict[str, Any]] = []
    for role, content in _turns(said):
        if role != "user":
            continue
        claims = standin_style.read(content)
        day = next(iter(standin_style.dates(content)), None)
        for index, claim in enumerate(claims):
            if any(_restates(claim, other) for other in known):
                continue  # "semantically equivalent to an Existing Memory": skipped
            context = [*known, *earlier, *claims[:index], *claims[index + 1 :]]
            key = f"{content}#{index}"
            for memory in standin_style.write(
                claim, seed=seed, key=key, context=context, said=said, day=day
            ):
                memories.append(
                    {
                        "id": str(len(memories)),
                        "text": memory.text,
                        "attributed_to": "user",
                        "linked_memory_ids": [],
                    }
                )
    return memories


def _restates(new: standin_style.Claim, old: standin_style.Claim) -> bool:
    return (new.topic, new.value.casefold(), new.negated) == (
        old.topic,
        old.value.casefold(),
        old.negated,
    )


def grounded(statement: str, day: str) -> str:
    """The statement as a memory grounded in its observation date, its "it is no longer
    true that ..." clauses said as plain negations."""
    text = _NO_LONGER.sub(lambda m: _negated(m.group(1)), statement)
    return f"As of {day}, {text[:1].lower()}{text[1:]}"


def _negated(phrase: str) -> str:
    """ "billing is owned by @bob" as "billing is no longer owned by @bob"; a phrase of
    another shape is kept as it was said."""
    for verb in (" is ", " depends on ", " requires ", " exists"):
        at = phrase.find(verb)
        if at > 0:
            if verb == " is ":
                return f"{phrase[:at]} is no longer {phrase[at + len(verb) :]}"
            return f"{phrase[:at]} no longer {phrase[at + 1 :]}"
    return f"it is no longer true that {phrase}"


def prompt_sections(prompt: str) -> dict[str, str]:
    """The user prompt's ``## Name`` sections, by name."""
    marks = list(_SECTION.finditer(prompt))
    return {
        mark.group(1).strip(): prompt[mark.end() : nxt.start() if nxt else len(prompt)].strip()
        for mark, nxt in zip(marks, [*marks[1:], None], strict=True)
    }


def _existing(section: str) -> list[tuple[str, str]]:
    try:
        rows = json.loads(section or "[]")
    except ValueError:
        raise UnreadableTurn("the Existing Memories section is not JSON") from None
    return [(str(r.get("id")), str(r.get("text", ""))) for r in _rows(rows)]


def _rows(rows: Any) -> Sequence[Mapping[str, Any]]:
    return [r for r in rows if isinstance(r, Mapping)] if isinstance(rows, list) else []


def _turns(section: str) -> list[tuple[str, str]]:
    turns: list[tuple[str, str]] = []
    for line in section.splitlines():
        role, sep, content = line.partition(": ")
        if sep and role in ("user", "assistant", "system"):
            turns.append((role, content.strip()))
        elif turns and line.strip():  # a turn's content over several lines
            turns[-1] = (turns[-1][0], f"{turns[-1][1]} {line.strip()}")
    return turns


def _body(text: str) -> str:
    found = _GROUNDED.match(text.strip())
    body = found.group(2) if found else text.strip()
    return body.rstrip(".").lower()


def _same(statement: str, memory: str) -> bool:
    """The new statement says nothing the memory does not: the same words, or the memory's
    words with the transition it adds ("... @bob (replacing @alice)" covers "... @bob")."""
    new, known = _body(statement), _body(memory)
    return new == known or new == _REPLACING.sub("", known)
