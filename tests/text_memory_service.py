"""A text-only memory service: the HTTP contract answered with ``items`` alone.

It holds what the reference memory holds (or, with ``forgets=False``, what the add-only
``naive`` memory holds) and serves each record as a sentence in its own words, the way a
vector store of extracted memories would: no subject, predicate, value or domain fields,
only the text, the record's id and its times. The phrasing is this service's, not the
statements healthd sends with each event (which it ignores), so a test that scores it shows
the reader reading someone else's text.

``says`` adds, to every answer for a key, an item with a sentence of its own (a value the
key never held, as an LLM-extracted memory may invent one), written when the key was first
asked about; ``silent_on`` names keys whose own records it does not serve.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from memory_service import MemoryService

from healthd.memory.naive import NaiveMemory
from healthd.model import HISTORICAL


def _person(handle: str) -> str:
    return handle.lstrip("@").capitalize()


def _people(value: str) -> str:
    names = [_person(h) for h in value.split()]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def phrase(subject: str, predicate: str, value: str) -> str:
    """One record as this service words it."""
    if predicate == "owners":
        verb = "looks" if len(value.split()) == 1 else "look"
        return f"{_people(value)} {verb} after {subject}"
    if predicate == "on_call":
        return f"{_people(value)} carries the pager for {subject}"
    if predicate == "exists":
        return f"{subject} is up and running" if value == "true" else f"{subject} is gone"
    if predicate == "language":
        return f"The {subject} codebase is {value.capitalize()}"
    if predicate.startswith("dependency:"):
        return f"{subject} is built against {predicate.split(':', 1)[1]} {value}"
    words = predicate.replace("_", " ")
    return f"For {subject}, the {words} is {value}"


def served(fact: dict[str, Any]) -> dict[str, Any]:
    text = phrase(fact["subject"], fact["predicate"], fact["value"])
    if HISTORICAL in fact.get("flags", ()):
        text = f"Until recently: {text[0].lower()}{text[1:]}"
    return {
        "text": text + ".",
        "record_id": fact["record_id"],
        "written_at": fact["written_at"],
        "validated_at": fact["validated_at"],
        "flags": [f for f in fact.get("flags", ()) if f != HISTORICAL],
    }


class TextMemoryService(MemoryService):
    def __init__(
        self,
        *,
        forgets: bool = True,
        says: Mapping[tuple[str, str], str] | None = None,
        silent_on: Collection[tuple[str, str]] = (),
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.forgets = forgets
        self.says = dict(says or {})
        self.silent_on = set(silent_on)
        self._said_at: dict[tuple[str, str], str] = {}

    def _reset(self, namespace: str) -> None:
        if self.forgets:
            super()._reset(namespace)
            return
        old = self.memories.pop(namespace, None)
        if old is not None:
            old.close()
        self.memories[namespace] = NaiveMemory()  # type: ignore[assignment]
        self._applied[namespace] = set()

    def route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        status, payload = super().route(method, path, body)
        if path.endswith("/query") and status == 200:
            probe = body["probe"]
            key = (probe["subject"], probe["predicate"])
            items = [
                served(f)
                for f in payload["facts"]
                if (f["subject"], f["predicate"]) != key or key not in self.silent_on
            ]
            if key in self.says:
                at = self._said_at.setdefault(key, body["at"])
                record = f"said:{key[0]}:{key[1]}"
                items.append(
                    {
                        "text": self.says[key],
                        "record_id": record,
                        "written_at": at,
                        "validated_at": at,
                    }
                )
            payload = {"items": items}
        return status, payload
