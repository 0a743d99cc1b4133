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

from healthd.reading.aliases import PACKAGES

_VERSION = re.compile(r"v?(\d+(?:\.\d+)*)", re.IGNORECASE)
_HANDLE = re.compile(r"@[\w.-]+")
_SPLIT = re.compile(r"[\s_/-]+")
_LIST_SEP = r"(?:\s*(?:,|&|\+|/|\band\b)\s*(?:\band\b\s*)?|\s+)"
# A name ends at a space or punctuation, not at a hyphen that goes on with a longer name
# (payments-v10); "kafka-based" and the like still name kafka.
_AFTER = r"(?![\w@])(?!-(?!(?:based|backed|powered|driven|only|first|era)\b)\w)"
_BEFORE = r"(?<![\w@.-])"
# A name inside a file's name is not that name: "webpack" in `webpack.config.js`, "vite" in
# `vite.config.ts` (a name's own suffix still is: "Node.js" for node).
_FILE_AFTER = (
    r"(?!\.(?:config|conf|ya?ml|json|toml|lock|ini|cfg|env|properties|xml|md|txt|sh|py|rb|ts|"
    r"tsx|jsx|mjs|cjs|gradle)\b)(?!\.\w+\.\w)"
)
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
    after = _AFTER + (_FILE_AFTER if value.strip()[-1:].isalpha() else "")
    return re.compile(rf"{_BEFORE}{prefix}{body}{after}", re.IGNORECASE)


@lru_cache(maxsize=4096)
def content_words(value: str) -> tuple[re.Pattern[str], ...]:
    """The content words of a long value (three or more), each as a pattern that takes a
    plural or possessive; empty for a short value, which must be named as written, and for
    a name without spaces (``dd/mm/yyyy`` is not named by "yyyy-mm-dd")."""
    words = [w for w in re.findall(r"[\w]+", value.lower()) if w not in _STOP and len(w) > 1]
    if len(words) < 3 or not any(c.isspace() for c in value.strip()):
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


@lru_cache(maxsize=4096)
def short_value_pattern(subject: str, value: str) -> re.Pattern[str] | None:
    """A value that is the subject's name and a version tag (``payments-v2`` of ``payments``)
    is also named by the tag alone where the text speaks of the subject: "payments: v2 is
    authoritative now; v1 is kept read-only"."""
    head = subject.lower() + "-"
    tail = value[len(head) :] if value.lower().startswith(head) else ""
    if not re.fullmatch(r"v\d+", tail, re.IGNORECASE):
        return None
    return re.compile(rf"{_BEFORE}{re.escape(tail)}(?![\w.@])(?!-\w)", re.IGNORECASE)


_BOUND = re.compile(r"(p\d\d|latency)\s*(?:<=?|>=?)\s*(\d+(?:\.\d+)?)\s*(ms|s)", re.IGNORECASE)
_METRIC = re.compile(r"\b(?:p\d\d|latency|budget|slo)\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def bound_pattern(value: str) -> re.Pattern[str] | None:
    """A bound on a metric (``p99 < 250 ms``) is also named by its number and unit alone
    ("250ms") in a clause that names the metric: "p99 budget tightened to 250ms (was 300ms)"."""
    match = _BOUND.fullmatch(value.strip())
    if match is None:
        return None
    number, unit = match.group(2), match.group(3)
    return re.compile(rf"(?<![\w.<>]){re.escape(number)}\s*{unit}\b", re.IGNORECASE)


def mentions(clause: str, values: Sequence[str], subject: str | None = None) -> list[Mention]:
    """Where ``clause`` names each of ``values``; overlapping finds keep the longest (so "Bob
    and Carol" is ``@bob @carol``, not ``@bob``), in text order. With ``subject``, a value
    named by its version tag alone (:func:`short_value_pattern`) is found too."""
    found: list[Mention] = []
    for value in values:
        if not value.strip():
            continue
        for match in value_pattern(value).finditer(clause):
            found.append(Mention(match.start(), match.end(), value))
        short = short_value_pattern(subject, value) if subject else None
        if short is not None:
            for match in short.finditer(clause):
                found.append(Mention(match.start(), match.end(), value))
        bound = bound_pattern(value)
        if bound is not None and _METRIC.search(clause):
            for match in bound.finditer(clause):
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
    return re.compile(rf"{_BEFORE}{_name(subject)}{_plural(subject)}{_AFTER}", re.IGNORECASE)


def _plural(subject: str) -> str:
    """A subject of several words, the last a word, is also named in the plural or the
    possessive: "the cloud platforms team" speaks of `cloud platform`. (A one-word name's
    plural is as likely another subject: `payment` and `payments`.)"""
    return r"(?:s|['’]s)?" if subject[-1:].isalpha() and " " in subject.strip() else ""


@lru_cache(maxsize=4096)
def near_subject_pattern(subject: str) -> re.Pattern[str]:
    """A longer name that starts with the subject's: ``auth-service-v2`` for ``auth-service``
    (its plural is the subject itself)."""
    plural = r"(?!(?:s|['’]s)(?![\w@])(?!-\w))" if _plural(subject) else ""
    return re.compile(rf"{_BEFORE}{_name(subject)}{plural}[-_.]?\w", re.IGNORECASE)


def package_names(name: str) -> tuple[str, ...]:
    """Every name a text may give a dependency: its key's name, its usual names
    (:data:`.aliases.PACKAGES`), and a path's last one or two segments (a Go module's
    ``/vN`` suffix dropped, an npm scope's package alone)."""
    names = [name, *PACKAGES.get(name.lower(), ())]
    parts = [p for p in name.strip("@").split("/") if p]
    if len(parts) > 1:
        if re.fullmatch(r"v\d+", parts[-1]) and len(parts) > 2:
            names.append("/".join(parts[-2:]))
            parts = parts[:-1]
        names += ["/".join(parts[-2:]), parts[-1]]
    return tuple(dict.fromkeys(n.lower() for n in names))


@lru_cache(maxsize=4096)
def package_pattern(name: str) -> re.Pattern[str]:
    """How a text names a dependency, by its name, a common alias or its path's tail."""
    names = sorted(package_names(name), key=len, reverse=True)
    body = "|".join(_name(n) for n in names)
    return re.compile(rf"{_BEFORE}@?(?:{body}){_AFTER}", re.IGNORECASE)
