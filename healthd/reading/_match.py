"""Finding a key's values in free text: the normalisation real texts need.

A value is found where the text names it in any of the ways people write it: any case,
``@alice`` or ``Alice``, ``payments-v1`` / ``payments v1`` / ``payments_v1``, a version
``1.2`` as ``v1.2`` or ``1.2.0``, a list of handles (``@bob @carol``) as "Bob and Carol" in
either order, ``<`` as "under" or "below". Never inside a longer name: ``payments-v1`` is
not in ``payments-v10``, ``alice`` is not in ``alicia``, ``13`` is not in ``1.13``. A long
value (a requirement's wording) is also found where every one of its content words is in
the same clause, in whatever order a paraphrase puts them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations

_VERSION = re.compile(r"v?(\d+(?:\.\d+)*)", re.IGNORECASE)
_HANDLE = re.compile(r"@[\w.-]+")
_SPLIT = re.compile(r"[\s_/-]+")
_LIST_SEP = r"(?:\s*(?:,|&|\+|/|\band\b)\s*(?:\band\b\s*)?|\s+)"
# A name ends at a space or punctuation, not at a hyphen that goes on with a longer name
# (payments-v10); "kafka-based" and the like still name kafka.
_AFTER = r"(?![\w@])(?!-(?!(?:based|backed|powered|driven|only|first|era)\b)\w)"
_BEFORE = r"(?<![\w@.-])"
_ALIASES = {
    "<": r"(?:<|under|below|less\s+than|within|at\s+most)",
    ">": r"(?:>|over|above|more\s+than|at\s+least)",
    "<=": r"(?:<=|≤|at\s+most|within)",
    ">=": r"(?:>=|≥|at\s+least)",
}
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "for",
        "to",
        "in",
        "on",
        "at",
        "by",
        "is",
        "are",
        "be",
        "with",
        "and",
        "or",
        "every",
        "each",
        "all",
        "any",
        "its",
        "it",
        "this",
        "that",
        "must",
        "should",
        "shall",
        "will",
        "per",
        "from",
        "as",
    ]
)


@dataclass(frozen=True, slots=True)
class Mention:
    start: int
    end: int
    value: str


def _token(token: str) -> str:
    alias = _ALIASES.get(token)
    if alias is not None:
        return alias
    version = _VERSION.fullmatch(token)
    if version is not None and any(c.isdigit() for c in token):
        parts = version.group(1).split(".")
        while len(parts) > 1 and parts[-1] == "0":
            parts.pop()
        return r"v?" + r"\.".join(parts) + r"(?:\.0)*(?!\.\d)"
    # "ms" after a number may be glued to it ("250ms"); anything else keeps its spelling.
    return re.escape(token)


def _name(text: str) -> str:
    tokens = [t for t in _SPLIT.split(text.strip().lstrip("@")) if t]
    return r"[\s_/-]*".join(_token(t) for t in tokens)


@lru_cache(maxsize=4096)
def value_pattern(value: str) -> re.Pattern[str]:
    """The pattern of every way a text names ``value``."""
    handles = value.split()
    if len(handles) > 1 and all(_HANDLE.fullmatch(h) for h in handles):
        names = [r"@?" + _name(h) for h in handles[:4]]
        body = "|".join(_LIST_SEP.join(order) for order in permutations(names))
        return re.compile(rf"{_BEFORE}(?:{body}){_AFTER}", re.IGNORECASE)
    body = _name(value)
    prefix = r"@?" if value.startswith("@") or " " not in value.strip() else ""
    return re.compile(rf"{_BEFORE}{prefix}{body}{_AFTER}", re.IGNORECASE)


@lru_cache(maxsize=4096)
def content_words(value: str) -> tuple[re.Pattern[str], ...]:
    """The content words of a long value (three or more), each as a pattern that takes a
    plural or possessive; empty for a short value, which must be named as written."""
    words = [w for w in re.findall(r"[\w]+", value.lower()) if w not in _STOP and len(w) > 1]
    if len(words) < 3:
        return ()
    return tuple(
        re.compile(rf"\b{re.escape(_stem(w))}(?:e|es|s|ed|d|ing|'s)?\b", re.IGNORECASE)
        for w in words
    )


def _stem(word: str) -> str:
    """Crude, enough for a paraphrase: "deleted" and "delete", "exports" and "export"."""
    if len(word) <= 3:
        return word
    return word.removesuffix("s").removesuffix("e")


def mentions(clause: str, values: Sequence[str]) -> list[Mention]:
    """Where ``clause`` names each of ``values``; overlapping finds keep the longest (so "Bob
    and Carol" is ``@bob @carol``, not ``@bob``), in text order."""
    found: list[Mention] = []
    for value in values:
        if not value.strip():
            continue
        for match in value_pattern(value).finditer(clause):
            found.append(Mention(match.start(), match.end(), value))
        words = content_words(value)
        if words and not any(m.value == value for m in found):
            spans = [w.search(clause) for w in words]
            if all(spans):
                starts = [s.start() for s in spans if s]
                ends = [s.end() for s in spans if s]
                found.append(Mention(min(starts), max(ends), value))
    found.sort(key=lambda m: (-(m.end - m.start), m.start))
    kept: list[Mention] = []
    for mention in found:
        if all(mention.end <= k.start or mention.start >= k.end for k in kept):
            kept.append(mention)
    kept.sort(key=lambda m: m.start)
    return kept


def combine_handles(clause: str, asserted: Sequence[str], values: Sequence[str]) -> list[str]:
    """Handles named together in a clause that asserts one of them ("Carol joined Bob as
    owner", "add @kenji next to @priya") read as the key's list value of exactly those
    handles, when the key has held one."""
    if not asserted:
        return list(asserted)
    for value in values:
        handles = value.split()
        if len(handles) < 2 or not all(_HANDLE.fullmatch(h) for h in handles):
            continue
        if value in asserted or not all(value_pattern(h).search(clause) for h in handles):
            continue
        if set(asserted) <= set(handles) | {value}:
            return [value]
    return list(asserted)


@lru_cache(maxsize=4096)
def subject_pattern(subject: str) -> re.Pattern[str]:
    """How a text names a subject: ``adr:0007`` also as "ADR 7" / "ADR-0007"."""
    if subject.lower().startswith("adr:"):
        number = subject.split(":", 1)[1].lstrip("0") or "0"
        return re.compile(rf"\badr[\s#:-]*0*{re.escape(number)}\b", re.IGNORECASE)
    return re.compile(rf"{_BEFORE}{_name(subject)}{_AFTER}", re.IGNORECASE)


@lru_cache(maxsize=4096)
def near_subject_pattern(subject: str) -> re.Pattern[str]:
    """A longer name that starts with the subject's: ``auth-service-v2`` for ``auth-service``."""
    return re.compile(rf"{_BEFORE}{_name(subject)}[-_.]?\w", re.IGNORECASE)


_PACKAGE_ALIASES = {
    "postgres": ("postgresql", "pg", "psql"),
    "postgresql": ("postgres", "pg"),
    "node": ("node.js", "nodejs"),
    "react": ("reactjs", "react.js"),
}


@lru_cache(maxsize=4096)
def package_pattern(name: str) -> re.Pattern[str]:
    """How a text names a dependency, by its name or a common alias."""
    names = (name, *_PACKAGE_ALIASES.get(name.lower(), ()))
    body = "|".join(_name(n) for n in names)
    return re.compile(rf"{_BEFORE}(?:{body}){_AFTER}", re.IGNORECASE)
