"""The semantic reader: all-MiniLM-L6-v2 (the model shipped in a package, run in numpy)
judges whether each value a text names is current or past.

The default reader's rules find where the text names each of the key's values and read the
text once (subject focus, transitions, hedges, ``exists`` keys). The model then judges
every value the rules read as asserted or negated whose last clause names it alone: that
clause is embedded beside hypotheses about the key ("billing owners is bob", "billing
owners is now bob" against "billing owners is no longer bob", "billing owners was bob
before"), compared by cosine. Where the nearest past hypothesis is closer than the nearest
current one by at least ``margin`` the value is past, by at least ``margin`` the other way
current; nearer than that the model is not sure and the rules' reading stands. A clause
naming two of the values (a transition) is left to the rules: a sentence embedding is
blind to the word order that tells "from node to go" from "from go to node". A mention the
rules read as a hedge or a question ("might move to SQS") stays unread, and so does a text
naming none of the values.

The label carries the model id (``semantic-5:all-MiniLM-L6-v2``) and the margin when it is
not the default, so a changed model or threshold is a changed probe-set version.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from healthd.embedding import minilm
from healthd.errors import ReaderError, TargetError
from healthd.model import FactKey
from healthd.reading import Reading, register_reader
from healthd.reading._default_rules import _clauses, _sentences
from healthd.reading._match import mentions, subject_pattern
from healthd.reading.aliases import PeopleTable, people_digest
from healthd.reading.default import DefaultReader

NAME = "semantic"
VERSION = "5"  # of the hypotheses and the default rules it reads with: a change is a changed reader
MODEL_ID = minilm.MODEL.rsplit("/", 1)[-1]
# Below this gap between the nearest current and the nearest past hypothesis, MiniLM's
# preference is not trusted: the smallest margin at which it overturns none of the rules'
# correct readings of the shipped labelled set (the sweep is in the README).
MARGIN = 0.08

CURRENT = ("{s} {p} is {v}", "{s} {p} is now {v}", "{s} uses {v} today")
PAST = ("{s} {p} is no longer {v}", "{s} {p} was {v} before", "{s} stopped using {v}")
EXISTS_CURRENT = ("{s} exists", "{s} is live and running", "{s} was launched")
EXISTS_PAST = ("{s} no longer exists", "{s} was decommissioned", "{s} was shut down")


@dataclass
class SemanticReader:
    model: Any  # the loaded :class:`healthd.embedding.minilm.MiniLM`
    margin: float = MARGIN
    name: str = NAME
    version: str = VERSION
    rules: DefaultReader = field(default_factory=DefaultReader)

    @property
    def label(self) -> str:
        tail = "" if self.margin == MARGIN else f",margin={self.margin:g}"
        if self.rules.people:
            tail += f",people={people_digest(self.rules.people)}"
        return f"{self.name}-{self.version}:{MODEL_ID}{tail}"

    def with_people(self, table: PeopleTable) -> SemanticReader:
        """This reader with its rules naming people as ``table`` does."""
        return replace(self, rules=self.rules.with_people(table))

    def read(self, text: str, key: FactKey, values: Sequence[str]) -> Reading:
        ruled = self.rules.read(text, key, values)
        if ruled.unread:
            return ruled
        subject = key.subject
        if key.predicate == "exists":
            clause = _last_clause(text, subject, subject_pattern(subject).search)
            if clause is None:
                return ruled
            (alive,) = self._judge([(clause, _hypotheses(EXISTS_CURRENT, EXISTS_PAST, subject))])
            if alive is None:
                return ruled
            yes = tuple(v for v in values if v.lower() == "true")
            no = tuple(v for v in values if v.lower() == "false")
            return Reading(yes, no) if alive else Reading(no, yes)
        current = {v: v in ruled.asserted for v in values if v in ruled.asserted + ruled.negated}
        predicate = key.predicate.removeprefix("dependency:").replace("_", " ")
        asked: list[tuple[str, tuple[list[str], list[str]]]] = []
        judged: list[str] = []
        for value in current:
            clause = _last_clause(text, subject, _naming(value, values))
            # Only a clause naming this value alone: a similarity model is blind to the word
            # order that tells "from node to go" from "from go to node"; the rules read those.
            if clause is not None and {m.value for m in mentions(clause, values)} == {value}:
                judged.append(value)
                asked.append((clause, _hypotheses(CURRENT, PAST, subject, predicate, value)))
        for value, verdict in zip(judged, self._judge(asked), strict=True):
            if verdict is not None:
                current[value] = verdict
        return Reading(
            tuple(v for v, now in current.items() if now),
            tuple(v for v, now in current.items() if not now),
            ruled.other,
        )

    def _judge(self, asked: Sequence[tuple[str, tuple[list[str], list[str]]]]) -> list[bool | None]:
        """Per (clause, (current, past) hypotheses), in one batch: True (current), False
        (past) or None (nearer than the margin)."""
        texts = [t for clause, (cur, past) in asked for t in (clause, *cur, *past)]
        vectors = iter(self.model.encode(texts) if texts else [])
        out: list[bool | None] = []
        for _, (cur, past) in asked:
            clause = next(vectors)
            now = max(_dot(clause, next(vectors)) for _ in cur)
            before = max(_dot(clause, next(vectors)) for _ in past)
            gap = before - now
            out.append(None if abs(gap) < self.margin else gap < 0)
        return out


def _hypotheses(
    current: Sequence[str], past: Sequence[str], subject: str, predicate: str = "", value: str = ""
) -> tuple[list[str], list[str]]:
    words = {"s": subject.replace("_", " "), "p": predicate, "v": value.replace("@", "")}
    return [h.format(**words) for h in current], [h.format(**words) for h in past]


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def _naming(value: str, values: Sequence[str]) -> Callable[[str], bool]:
    return lambda clause: any(m.value == value for m in mentions(clause, values))


def _last_clause(text: str, subject: str, names: Callable[[str], object]) -> str | None:
    """The last clause (of the sentences about the subject) that ``names`` accepts."""
    chosen = None
    for sentence in _sentences(text, subject):
        for clause in _clauses(sentence):
            if names(clause):
                chosen = clause.strip()
    return chosen


@register_reader(NAME)
def semantic_reader(options: Mapping[str, str]) -> SemanticReader:
    unknown = sorted(set(options) - {"margin"})
    if unknown:
        raise ReaderError(f"reader 'semantic': unknown option(s) {unknown}; known: ['margin']")
    margin = MARGIN
    if "margin" in options:
        try:
            margin = float(options["margin"])
        except ValueError:
            margin = -1.0
        if not 0.0 <= margin <= 2.0:
            raise ReaderError(
                f"reader 'semantic': option margin: {options['margin']!r} is not a number "
                "from 0 to 2"
            )
    try:
        model = minilm.load()
    except TargetError as exc:
        raise ReaderError(f"reader 'semantic': {exc}") from None
    return SemanticReader(model, margin)
