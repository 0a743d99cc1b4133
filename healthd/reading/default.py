"""The default reader: deterministic, rule-based, nothing outside the package.

A text is cut into clauses; in each, the key's values are found (:mod:`._match`) and each
mention is read by the words around it:

* a transition between two mentions decides both: "from node to go", "kafka → sqs",
  "replaced payments-v1 with payments-v2", "Alice handed billing over to Bob" (the first is
  past, the second current), "Bob took over from Alice", "sqs replaced kafka", "go, not
  node", "go instead of node" (the first current, the second past);
* otherwise a cue before or after the mention: "no longer uses kafka", "formerly owned by
  alice", "was owned by alice until March", "kafka was dropped" (past); "might move to sqs",
  "considered sqs" (a proposal: neither);
* otherwise the value is asserted.

A value's reading is that of its last mention ("kafka, then sqs, then back to kafka":
kafka current, sqs past). When the text names the key's subject in some sentences, only
those sentences (and ones that go on about it: "it", "they", "the service") are read, so a
summary of several facts is read for the one asked about. ``exists`` keys are read by what
the text says of the subject: "auth-service is live" asserts ``true``, "payments-v1 was
decommissioned" negates it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from healthd.model import FactKey
from healthd.reading import Reading, register_reader
from healthd.reading._match import (
    Mention,
    combine_handles,
    mentions,
    near_subject_pattern,
    package_pattern,
    subject_pattern,
    value_pattern,
)

NAME = "default"
VERSION = "2"

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|(?<=\))\s*-\s+|\s+[-–—]\s+(?=[A-Z])")
_CLAUSE = re.compile(
    r";\s*|,?\s+(?:but|whereas|however|although|though|while|so|and then)\s+|,\s*(?:and\s+)?now\s+",
    re.IGNORECASE,
)
_FOLLOW_ON = re.compile(
    r"^\W*(?:it|its|they|their|he|she|his|her|this|that|the service|the team)\b", re.IGNORECASE
)

_WORDS = 6  # how far a cue before or after a mention reaches, in words

_TRANSITION_VERB = (
    r"(?:from|replac\w*|supersed\w*|succeed\w*|swap\w*|switch\w*|migrat\w*|mov\w*|upgrad\w*|"
    r"downgrad\w*|bump\w*|hand\w*|transferr?\w*|pass\w*|chang\w*|reassign\w*|rotat\w*|went|"
    r"shift\w*|port\w*|rewr\w*|revert\w*|roll\w*|transition\w*|tighten\w*|loosen\w*|relax\w*|"
    r"rais\w*|lower\w*|cut|reduc\w*|increas\w*|went back|back)"
)
_FORWARD_ARROW = re.compile(r"(?:→|->|=>|⇒|➝|➔)\s*$")
_FORWARD_END = re.compile(
    r"\b(?:to|into|with|by|for|in favou?r of|making way for|then|for good)\s*$", re.IGNORECASE
)
_FORWARD_ANY = re.compile(
    r"\b(?:replaced\s+by|superseded\s+by|succeeded\s+by|gave\s+way\s+to|handed\b.*\b(?:over|off)\s+to|"
    r"passed\b.*\bto|transferred\b.*\bto|reassigned\b.*\bto|rotated\b.*\bto)\b",
    re.IGNORECASE,
)
_TRANSITION = re.compile(rf"\b{_TRANSITION_VERB}\b", re.IGNORECASE)
_BACKWARD_END = re.compile(
    r"(?:\b(?:replac(?:ed|es|ing)|has\s+replaced|supersed(?:ed|es|ing)|succeed(?:ed|s)|"
    r"took\s+over(?:\s+\w+)?\s+from|takes\s+over(?:\s+\w+)?\s+from|taking\s+over(?:\s+\w+)?\s+from|"
    r"instead\s+of|rather\s+than|in\s+place\s+of|not|over|from|after|(?:formerly|previously|originally|was|were|ex))"
    r"(?:\s+(?:the|a|an|its|our|their))?"
    r"|\(\s*(?:formerly|previously|was|ex|replacing|not)?)\W*$",
    re.IGNORECASE,
)
_BACKWARD_BLOCK = re.compile(r"\b(?:to|into|by)\s*$", re.IGNORECASE)

_PRE_PAST = re.compile(
    r"(?:n['’]t\b|\b(?:no\s+longer|not|never|no|without|off|stopped|stop|dropped|drop|drops|removed|remove|"
    r"abandoned|abandon|retired|retire|deprecated|deprecate|decommissioned|former|formerly|"
    r"previously|originally|used\s+to|ex|away\s+from|(?:decided|voted|argued|ruled|went)\s+against|rejected|reject|ditched|"
    r"phased\s+out|sunset|sunsetted|replaced|replacing|replace|superseded|until\s+recently|"
    r"moved\s+off|off\s+of|migrated\s+off|got\s+rid\s+of|gave\s+up|give\s+up|ripped\s+out|"
    r"reverted|revert\s+away|withdrawn|withdrew|dropping|removing|retiring|deprecating|"
    r"swapped\s+out|switched\s+off|turned\s+off|back\s+when|delet\w*|purg\w*|tear\s+down|"
    r"tore\s+down|kill\w*)\b)(?:[^.]*)$",
    re.IGNORECASE,
)
_PRE_FROM = re.compile(rf"\b{_TRANSITION_VERB}\b.*\bfrom\s+(?:\w+\s+){{0,2}}$", re.IGNORECASE)
_POST_PAST = re.compile(
    r"^[^\w,;:]*(?:[\w'’-]+\s+){0,3}?(?:(?:is|was|has|have|had|were|are|got|been|being)\s+)*"
    r"(?:(?:was|were)\s+(?:the|a|an|its|our|their)|(?:is|are|was|were)\s+(?:now\s+)?off|used\s+to|moved\s+(?:teams|on|away)|"
    r"switched\s+off|turned\s+off|shut\s+down|killed|"
    r"rejected|declined|ruled\s+out|vetoed|"
    r"no\s+longer|not|never|stepped\s+down|left|leaves|retired|deprecated|removed|dropped|"
    r"decommissioned|gone|abandoned|phased\s+out|until|through|up\s+to|replaced|superseded|"
    r"moved\s+on|handed\s+(?:it\s+)?(?:off|over)|rolled\s+back|reverted|withdrawn|ripped\s+out|"
    r"sunset|no\s+more|out\s+of\s+the\s+picture|obsolete|legacy|end-of-life|eol|dead|"
    r"is\s+history|was\s+history|lapsed|expired|ended|read-only|frozen|archived?|mothballed)(?![\w-])"
    r"|^[^\w,;:]*(?:[\w'’-]+\s+){0,3}?[\w]+n['’]t\b",
    re.IGNORECASE,
)
_POST_HEDGE = re.compile(
    r"^\W*(?:prototype|poc|proof\s+of\s+concept|spike|experiment|trial|pilot|proposal|rfc)\b"
    r"|^[^\w,;:]*(?:[\w'’-]+\s+){0,2}?(?:broke|breaks|broken|failed|fails|caused|crashe[sd]|"
    r"regressed)\b",
    re.IGNORECASE,
)
_CHANGING = re.compile(
    r"\b(?:is|are|am|'s|'re)\s+(?:being\s+(?:migrat|mov|rewrit|port|switch|replac|upgrad|chang)\w*|"
    r"(?:migrat|mov|rewrit|port|switch|transition|upgrad|replac|chang)\w*ing)\b",
    re.IGNORECASE,
)
_STAYS = re.compile(r"\b(?:stays?|remains?|keeps?|kept|still|continues?)\b[^.]*$", re.IGNORECASE)
_LIST_GAP = re.compile(r"^\s*(?:,|/|&|\band\b|\bor\b|,\s*(?:and|or)\b)\s*$", re.IGNORECASE)
# A sentence that opens by putting what follows in the past: "Until recently, ...".
_FRAME_PAST = re.compile(
    r"^\W*(?:until\s+recently|previously|formerly|in\s+the\s+past|historically|originally|"
    r"at\s+one\s+point|back\s+then|earlier|once)\s*[,:;-]",
    re.IGNORECASE,
)
# A clause that says what follows is no longer so: "it is no longer true that ...", the way
# healthd's own statements (reading/render.py) word an end.
_CLAUSE_NOT_SO = re.compile(
    r"^\W*it(?:\s+is|['’]s)\s+(?:no\s+longer|not)\s+(?:true|the\s+case)\s+that\b",
    re.IGNORECASE,
)
_POST_PAST_FIRST = re.compile(
    r"^\W*(?:\(\s*)?(?:formerly|previously|until|ex|old|before)\b", re.IGNORECASE
)
_HEDGE = re.compile(
    r"\b(?:might|may|could|consider\w*|propos\w*|evaluat\w*|explor\w*|investigat\w*|maybe|"
    r"perhaps|options?|alternatives?|candidates?|if|whether|spike|pilot\w*|trial\w*|debat\w*|"
    r"discuss\w*|suggest\w*|pitch\w*|weigh\w*|wants?\s+to|would\s+like|plan(?:s|ning)?\s+to|"
    r"hopes?\s+to|looking\s+(?:at|into)|once|as\s+soon\s+as|when)\b[^.]*$",
    re.IGNORECASE,
)
_CHOSEN = re.compile(
    r"\b(?:chos\w*|chose|selected|picked|decided|accepted|adopted|settled|went\s+with|"
    r"going\s+with|standardi[sz]\w*|approved|agreed|final)\b[^.]*$",
    re.IGNORECASE,
)

_GONE = re.compile(
    r"\b(?:decommission\w*|retired?|removed|deleted|shut\s*down|sunset\w*|turned\s+off|gone|"
    r"no\s+longer\s+(?:exists?|runs?|running|deployed|in\s+service)|deprecated|archived|torn\s+down|"
    r"tore\s+down|tear\s+down|teardown|killed|end-of-life|eol)\b",
    re.IGNORECASE,
)
_ALIVE = re.compile(
    r"\b(?:exists?|live|running|runs|in\s+production|in\s+service|deployed|active|launched|"
    r"created|introduced|set\s+up|stood\s+up|added|serves|handles|is\s+up|up\s+and\s+running|"
    r"went\s+live|shipped|spun\s+up|bootstrapped|still\s+around)\b",
    re.IGNORECASE,
)

ASSERTED, PAST, HEDGED = "asserted", "past", "hedged"


def _last_words(text: str, count: int = _WORDS) -> str:
    words = text.split()
    return " ".join(words[-count:]) + (" " if text[-1:].isspace() else "")


def _first_words(text: str, count: int = _WORDS) -> str:
    words = text.split()
    return (" " if text[:1].isspace() else "") + " ".join(words[:count])


def _pair(gap: str, before_first: str) -> tuple[str, str] | None:
    """How a transition between two mentions reads them, if ``gap`` is one."""
    text = gap.strip()
    if len(text.split()) > 8:
        return None
    if _FORWARD_ARROW.search(text) or _FORWARD_ANY.search(text):
        return PAST, ASSERTED
    if _FORWARD_END.search(text) and (
        _TRANSITION.search(text)
        or _TRANSITION.search(_last_words(before_first, 4))
        or re.search(r"\bfrom\s*(?:\w+\s+){0,2}$", before_first, re.I)
    ):
        return PAST, ASSERTED
    if _BACKWARD_END.search(text) and not _BACKWARD_BLOCK.search(text):
        return ASSERTED, PAST
    return None


def _single(before: str, after: str) -> str:
    """How the words around one mention read it."""
    pre = _last_words(before)
    post = _first_words(after)
    if _STAYS.search(pre) and not _PRE_PAST.search(pre):
        return ASSERTED
    if _POST_PAST_FIRST.search(after) or _POST_PAST.search(post):
        return PAST
    if _PRE_FROM.search(pre):
        return PAST
    chosen = _CHOSEN.search(pre)
    past = _PRE_PAST.search(pre)
    if past and not (chosen and chosen.start() > past.start()):
        return PAST
    if (_HEDGE.search(pre) or _POST_HEDGE.search(after)) and not chosen:
        return HEDGED
    return ASSERTED


def _read_clause(clause: str, values: Sequence[str]) -> list[tuple[Mention, str]]:
    found = mentions(clause, values)
    polarity: dict[int, str] = {}
    for i in range(len(found) - 1):
        first, second = found[i], found[i + 1]
        if first.value == second.value:
            continue
        previous_end = found[i - 1].end if i else 0
        before_first = clause[previous_end : first.start]
        pair = _pair(clause[first.end : second.start], before_first)
        if (
            pair == (ASSERTED, PAST)
            and before_first
            and _PRE_PAST.search(_last_words(before_first))
        ):
            pair = (PAST, ASSERTED)  # "no longer runs on node after the go rewrite"
        if pair is not None:
            if pair[0] == PAST:  # "a → b → c": b is past, whatever came before it
                polarity[i] = PAST
            else:
                polarity.setdefault(i, pair[0])
            polarity[i + 1] = pair[1]
    # A question, or a change still under way ("is rewriting ledger in Rust"), settles nothing.
    question = clause.rstrip().endswith("?") or bool(
        found and _CHANGING.search(clause[: found[-1].start])
    )
    out: list[tuple[Mention, str]] = []
    for i, mention in enumerate(found):
        reading = polarity.get(i)
        start = found[i - 1].end if i else 0
        if question:
            reading = HEDGED
        elif reading is None and i and _LIST_GAP.match(clause[start : mention.start]):
            reading = out[-1][1]  # "dropped kafka and sqs", "options: kafka, sqs"
        elif reading is None:
            end = found[i + 1].start if i + 1 < len(found) else len(clause)
            reading = _single(clause[start : mention.start], clause[mention.end : end])
        out.append((mention, reading))
    return out


def _sentences(text: str, subject: str) -> list[str]:
    sentences = [s for s in _SENTENCE.split(text) if s and s.strip()]
    pattern = subject_pattern(subject)
    if len(sentences) < 2 or not any(pattern.search(s) for s in sentences):
        return sentences
    kept, following, answering = [], False, False
    for sentence in sentences:
        if pattern.search(sentence):
            kept.append(sentence)
            following = True
        elif following and (answering or _FOLLOW_ON.search(sentence)):
            kept.append(sentence)  # "it ...", or the answer to a question about the subject
        else:
            following = False
        answering = following and sentence.rstrip().endswith("?")
    return kept


def _clauses(sentence: str) -> list[str]:
    return [c for c in _CLAUSE.split(sentence) if c and c.strip()]


@dataclass(frozen=True)
class DefaultReader:
    name: str = NAME
    version: str = VERSION

    @property
    def label(self) -> str:
        return f"{self.name}-{self.version}"

    def read(self, text: str, key: FactKey, values: Sequence[str]) -> Reading:
        if _about_another_subject(text, key.subject, values):
            return Reading()
        if key.predicate == "exists":
            return _read_existence(text, key.subject, values)
        if key.predicate.startswith("dependency:") and not package_pattern(
            key.predicate.split(":", 1)[1]
        ).search(text):
            return Reading()  # versions of some other package
        last: dict[str, str] = {}
        for sentence in _sentences(text, key.subject):
            framed = _FRAME_PAST.match(sentence) is not None
            for clause in _clauses(sentence):
                readings = _read_clause(clause, values)
                if framed or _CLAUSE_NOT_SO.match(clause):
                    readings = [(m, PAST if r == ASSERTED else r) for m, r in readings]
                for mention, reading in readings:
                    last[mention.value] = reading
                together = [m.value for m, r in readings if r == ASSERTED]
                if any(r == PAST for _, r in readings):
                    continue
                combined = combine_handles(clause, together, values)
                if combined != together:
                    for value in together:
                        last.pop(value, None)
                    for value in combined:
                        last[value] = ASSERTED
        return Reading(
            tuple(v for v, r in last.items() if r == ASSERTED),
            tuple(v for v, r in last.items() if r == PAST),
        )


def _about_another_subject(text: str, subject: str, values: Sequence[str]) -> bool:
    """The text names a longer name that starts with the subject's (``auth-service-v2`` for
    ``auth-service``) and never the subject itself; a value that happens to start with the
    subject's name (``payments-v2`` of ``payments``) does not count."""
    if subject_pattern(subject).search(text):
        return False
    for value in values:
        text = value_pattern(value).sub(" ", text)
    return near_subject_pattern(subject).search(text) is not None


def _read_existence(text: str, subject: str, values: Sequence[str]) -> Reading:
    pattern = subject_pattern(subject)
    state = None
    for sentence in _sentences(text, subject):
        if not pattern.search(sentence):
            continue
        framed = _FRAME_PAST.match(sentence) is not None
        for clause in _clauses(sentence):
            if not pattern.search(clause):
                continue
            if _GONE.search(clause):
                state = False
            elif _ALIVE.search(clause):
                state = not (framed or _CLAUSE_NOT_SO.match(clause))
    if state is None:
        return Reading()
    yes = tuple(v for v in values if v.lower() == "true")
    no = tuple(v for v in values if v.lower() == "false")
    return Reading(yes, no) if state else Reading(no, yes)


@register_reader(NAME)
def default_reader(options: Mapping[str, str]) -> DefaultReader:
    if options:
        from healthd.errors import ReaderError

        raise ReaderError(f"reader 'default' takes no options, got {sorted(options)}")
    return DefaultReader()
