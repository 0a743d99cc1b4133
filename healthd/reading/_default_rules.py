"""The default reader's rules (:class:`.default.DefaultReader`): deterministic, nothing
outside the package.

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
from collections.abc import Sequence
from functools import lru_cache

from healthd.model import FactKey
from healthd.reading import Reading
from healthd.reading._match import (
    Mention,
    combine_handles,
    mentions,
    near_subject_pattern,
    package_names,
    package_pattern,
    subject_pattern,
    value_pattern,
)
from healthd.reading._subjects import cue_patterns, other_subjects
from healthd.reading.aliases import (
    PeopleIndex,
    person_aliases,
    spelling,
)

# (a numbered list item's "1." at the start of a line ends no sentence)
_SENTENCE = re.compile(
    r"(?<=[.!?])(?<!^\d\.)(?<!\n\d\.)(?<!^\d\d\.)(?<!\n\d\d\.)\s+|\n+|(?<=\))\s*-\s+"
    r"|\s+[-–—]\s+(?=[A-Z])"
)
_CLAUSE = re.compile(
    r";\s*|,?\s+(?:but|whereas|however|although|though|while|so|and then)\s+|,\s*(?:and\s+)?now\s+",
    re.IGNORECASE,
)
_FOLLOW_ON = re.compile(
    r"^\W*(?:(?:now|today|since\s+then|later|then)\s*,?\s+)?"
    r"(?:it|its|they|their|he|she|his|her|this|that|the service|the team)\b",
    re.IGNORECASE,
)
# What something used to be, however far the name stands from it in its clause: "wfwp
# used to be a script I wrote in AutoHotkey". What it used to be ends where the clause
# goes on past it: a colon, a dash, or a comma with a conjunction ("deploys used to be
# slow, and with ArgoCD they take a minute" says nothing past of ArgoCD).
_USED_TO_BE = re.compile(
    r"\bused\s+to\s+be\b(?![\s\S]*?(?::|\s[-–—]\s|,\s*(?:and|or|but|yet)\b))", re.IGNORECASE
)

_WORDS = 6  # how far a cue before or after a mention reaches, in words

_TRANSITION_VERB = (
    r"(?:from|replac\w*|supersed\w*|succeed\w*|swap\w*|switch\w*|migrat\w*|mov\w*|upgrad\w*|"
    r"downgrad\w*|bump\w*|hand\w*|transferr?\w*|pass\w*|chang\w*|reassign\w*|rotat\w*|went|"
    r"shift\w*|port\w*|rewr\w*|revert\w*|roll\w*|transition\w*|tighten\w*|loosen\w*|relax\w*|"
    r"rais\w*|lower\w*|cut|reduc\w*|increas\w*|translated|converted|went back|back)"
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
# Markup around a name: "from `^43.0` to `^44.0`", "**external-secrets**".
_MARKUP = " \t\n`*_\"'“”‘’"
_INLINE_MARKUP = re.compile(r"[`*\"“”]+|(?<!\w)_+|_+(?!\w)")
_FROM_END = re.compile(r"\bfrom(?:\s+[\w-]+){0,2}\s*$", re.IGNORECASE)
_TO_NEAR = re.compile(r"^(?:[\w-]+\s+){0,2}(?:to|into)(?:\s+[\w-]+){0,2}$", re.IGNORECASE)

_PRE_PAST = re.compile(
    r"(?:n['’]t\b|\b(?:no\s+longer|not|never|no|without|off|stopped|stop|dropped|drop|drops|removed|remove|"
    r"abandoned|abandon|retired|retire|deprecated|deprecate|decommissioned|former|formerly|"
    r"previously|originally|used\s+to|ex|away\s+from|(?:decided|voted|argued|ruled|went)\s+against|rejected|reject|ditched|"
    r"phased\s+out|sunset|sunsetted|replaced|replacing|replaces|replace|superseded|until\s+recently|"
    r"eliminat\w*|rather\s+than(?:\s+(?:use|using))?|instead\s+of(?:\s+using)?|"
    r"(?:pick\w*|prefer\w*|chose|choose|select\w*)\b[^.]*\bover|"
    r"moved\s+off|off\s+of|migrated\s+off|got\s+rid\s+of|gave\s+up|give\s+up|ripped\s+out|"
    r"reverted|revert\s+away|withdrawn|withdrew|dropping|removing|retiring|deprecating|"
    r"swapped\s+out|switched\s+off|turned\s+off|back\s+when|delet\w*|purg\w*|tear\s+down|"
    r"tore\s+down|kill\w*)\b)(?:[^.]*)$"
    r"|\b(?:was|were|before)\s*:?\s*$",
    re.IGNORECASE,
)
_PRE_FROM = re.compile(rf"\b{_TRANSITION_VERB}\b.*\bfrom\s+(?:\w+\s+){{0,2}}$", re.IGNORECASE)
_POST_PAST = re.compile(
    r"^[^\w,;:]*(?:[\w'’-]+\s+){0,3}?(?:(?:is|was|has|have|had|were|are|got|been|being)\s+)*"
    r"(?:(?:was|were)\s+(?:the|a|an|its|our|their)|(?:is|are|was|were)\s+(?:now\s+)?off|used\s+to|moved\s+(?:teams|on|away)|"
    r"switched\s+off|turned\s+off|shut\s+down|killed|stopped\s+being|"
    r"rejected|declined|ruled\s+out|vetoed|"
    r"no\s+longer|not|never|stepped\s+down|left|leaves|retired|deprecated|removed|dropped|"
    r"decommissioned|gone|abandoned|phased\s+out|until|through|up\s+to|replaced|superseded|"
    r"moved\s+on|handed\s+(?:it\s+)?(?:off|over)|rolled\s+back|reverted|withdrawn|ripped\s+out|"
    r"sunset|no\s+more|out\s+of\s+the\s+picture|obsolete|legacy|end-of-life|eol|dead|"
    r"is\s+history|was\s+history|lapsed|expired|ended|read-only|frozen|archived?|mothballed|"
    r"undone|backed\s+out|IS_ARCHIVE_OF|kept\s+(?:as|for|warm|only|around)|"
    r"only\s+(?:kept|serves|runs|used|for)|(?:a\s+)?(?:cold\s+)?(?:fallback|backup|standby|mirror|replica)|"
    r"stays?\s+(?:on|around)\s+as)(?![\w-])"
    r"|^[^\w,;:]*(?:[\w'’-]+\s+){0,3}?[\w]+n['’]t\b",
    re.IGNORECASE,
)
_MODALS = r"will|may|might|could|would"
_POST_HEDGE = re.compile(
    r"^\W*(?:prototype|poc|proof\s+of\s+concept|spike|experiment|trial|pilot|proposal|rfc)\b"
    rf"|^\W*(?:{_MODALS}|should|is\s+going\s+to|is\s+expected\s+to|"
    r"(?:is|are|was|were)\s+(?:supposed|meant|asked|due|slated)\s+to|"
    r"plans?\s+to|is\s+planning|or\b(?!\s+(?:higher|later|newer|above|greater|more|better|up)\b))"
    r"|^[^.;,]{0,40}?\b(?:(?:is|are)\s+)?(?:scheduled|planned|proposed|pending|blocked)\b"
    r"|^[^.;]*\b(?:not\s+confirmed|needs?\s+confirmation|need\s+to\s+check|I\s+forget)\b"
    r"|^[^\w,;:]*(?:[\w'’-]+\s+){0,2}?(?:broke|breaks|broken|failed|fails|caused|crashe[sd]|"
    r"regressed)\b",
    re.IGNORECASE,
)
# A heading over the options a decision weighed (MADR's "## Considered Options"), and the
# list items under it, none of them chosen by being listed.
_OPTIONS_HEAD = re.compile(
    r"^\W*(?:(?:considered\s+)?(?:options|alternatives|candidates)(?:\s+considered)?)\s*:?\s*$",
    re.IGNORECASE,
)
_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•+])\s+")
_POST_MODAL = re.compile(
    rf"^\W*(?:{_MODALS}|(?:is|are)\s+(?:going|about|due|slated|scheduled)\s+to)\b",
    re.IGNORECASE,
)
_CHANGING = re.compile(
    r"\b(?:is|are|am|'s|'re)\s+(?:being\s+(?:migrat|mov|rewrit|port|switch|replac|upgrad|chang)\w*|"
    r"(?:migrat|mov|rewrit|port|switch|transition|upgrad|replac|chang)\w*ing)\b",
    re.IGNORECASE,
)
_STAYS = re.compile(r"\b(?:stays?|remains?|keeps?|kept|still|continues?)\b[^.]*$", re.IGNORECASE)
_TIGHT_LIST = re.compile(r"^\s*[/,&+]\s*$")  # "v1/v2", "kafka, sqs": no "and" of prose
_LIST_GAP = re.compile(r"^\s*(?:,|/|&|\band\b|\bor\b|,\s*(?:and|or)\b)\s*$", re.IGNORECASE)
# A sentence that opens by putting what follows in the past: "Until recently, ...".
_FRAME_PAST = re.compile(
    r"^\W*(?:until\s+recently|previously|formerly|in\s+the\s+past|historically|originally|"
    r"prior\s+to\s+(?:this|that)\b[\w\s-]{0,30}?|"
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
    r"hopes?\s+to|looking\s+(?:at|into)|once|as\s+soon\s+as|when|will_\w+|plans?|"
    r"intends?\s+to|going\s+to|try|todo|next\s+step|scheduled|possibly|believes?|thinks?|"
    r"hopes?)\b[^.]*$",
    re.IGNORECASE,
)
# Not knowing, whatever follows: "not sure if Lee still owns it" is no assertion.
_UNSURE = re.compile(
    r"\b(?:not\s+sure|unsure|unclear|wonder\w*|whether|tentative\w*|provisional\w*|(?:doesn['’]t|don['’]t|does\s+not)\s+"
    r"(?:remember|know)|forget)\b[^.]*$",
    re.IGNORECASE,
)
# A wish beside what still holds: "wants Kubernetes for the api but it still runs on ECS".
_DESIRE = re.compile(
    r"\b(?:wants?|prefers?|would\s+(?:rather|like)|should|asked\s+\w+\s+to|supposed\s+to|"
    r"target|eventually|hopes?)\b[^.]*$",
    re.IGNORECASE,
)
_WISH = re.compile(
    r"\b(?:wants?|prefers?|would\s+(?:rather|like)|should|asked\s+\w+\s+to|supposed\s+to|"
    r"target|eventually|hopes?)\b",
    re.IGNORECASE,
)
# Whom a request is made of: "asked Tom to take search" (Tom does not hold it yet).
_ASKED = re.compile(r"\b(?:asked|told|wants?|needs?|expects?|invited|pinged)\s+@?$", re.IGNORECASE)
_TO = re.compile(r"^\s+to\s+\w", re.IGNORECASE)
# An intent governs its whole clause, however far the value stands from it: "plans to
# upgrade the orders database to PostgreSQL 16", "RFC: cut ... over to payments-v2".
_INTENT = re.compile(
    r"\b(?:plans?\s+to|planning\s+to|wants?\s+to|wanted\s+to|intends?\s+to|"
    r"would\s+like\s+to|hopes?\s+to|aims?\s+to|(?:is|are|am)\s+considering|proposes?\s+to|"
    r"proposal\s+to)\b"
    r"|^\W*(?:RFC|proposal|plan|idea|draft|todo)\s*:",
    re.IGNORECASE,
)
# A change still to come, which leaves both its sides as they are: "we will replace the
# Docker Registry with ECR", "we will need to shut down live-0", "the plan is to migrate".
_PLANNED = re.compile(
    r"\b(?:will|shall|['’]ll|(?:is|are|am)\s+going\s+to)\s+(?:(?:need|have|want)\s+to\s+)?"
    r"(?:replace|switch|migrate|move|decomm?iss?ion|retire|remove|shut|deprecate|drop|phase|"
    r"sunset|delete|turn|stop|rewrite|port|upgrade|transition|eliminate|convert|roll)\b"
    # the same in the passive, toward what follows: "will be rolled back to Node.js 22",
    # "will be upgraded to" (not "Kuzu will be removed in a future release — Kuzu ...")
    r"|\b(?:will|shall|['’]ll)\s+be\s+(?:(?:replaced|switched|migrated|moved|upgraded|"
    r"downgraded|converted|rolled|reverted|ported|rewritten)(?:\s+back|\s+over)?\s+"
    r"(?:to|into|onto|with|by)|(?:rewritten|ported)\s+in)\b"
    r"|\bplan\s+is\s+to\b",
    re.IGNORECASE,
)
# A change set in a period still to come: "decided to migrate Atlas to Postgres next quarter".
_UPCOMING = re.compile(
    r"\b(?:next|coming|following)\s+(?:week|month|quarter|year|sprint|release|cycle|spring|"
    r"summer|autumn|fall|winter)\b|\blater\s+this\s+(?:week|month|quarter|year)\b",
    re.IGNORECASE,
)
# What "will be used" is decided, not planned: "PostgreSQL will be used as the primary
# database".
_WILL_BE_USED = re.compile(r"^\W*(?:will|shall)\s+be\s+(?:used|adopted)\b", re.IGNORECASE)
_HOLDS = re.compile(r"\b(?:still|remains?|for\s+now|today)\b", re.IGNORECASE)
# A value back in place: "back on 14", "Jenkins again".
_BACK = re.compile(r"\b(?:back\s+(?:on|to|in)|again\s+on)\s*$", re.IGNORECASE)
# A clause that undoes what the clause before it did: "..., then reverted", "rolled back".
_UNDO = re.compile(
    r"^\W*(?:(?:then|and\s+then|but)\s+)?(?:was\s+|got\s+)?(?:rolled\s+back|reverted|undone|"
    r"backed\s+out|back\s+to)\b",
    re.IGNORECASE,
)
# A clause that goes on about what the clause before it named, to end it: "`data` still
# works but is now deprecated".
_THEN_GONE = re.compile(
    r"^\W*(?:is|are|was|were|has\s+been|have\s+been)\s+(?:now\s+|also\s+)?(?:deprecated|"
    r"removed|retired|dropped|obsolete|superseded|replaced|gone|end-of-life|decommissioned)\b",
    re.IGNORECASE,
)
# A sentence set in a past period: "between 2021 and 2023 it used X", "back in 2020",
# "(invalid since 2023-06-30)", "last week".
_DATED = re.compile(
    r"\b(?:in|during|throughout|back\s+in|through|until|between|from)\s+(?:early\s+|late\s+)?"
    r"(?:19|20)\d\d\b|\b(?:19|20)\d\d(?:-\d\d)?\s*(?:–|-|—|to|and)\s*(?:19|20)\d\d\b|"
    r"\b(?:last|previous)\s+(?:week|month|year|quarter|spring|summer|autumn|fall|winter|sprint)\b|"
    r"\bback\s+then\b",
    re.IGNORECASE,
)
_PAST_VERB = re.compile(
    r"\b(?:was|were|ran|used|owned|published|pinned|had|kept|built|recalled|did|served|held|led|"
    r"worked|lived|managed|maintained)\b",
    re.IGNORECASE,
)
_INVALID_SINCE = re.compile(r"\(\s*invalid\s+since\b", re.IGNORECASE)
_CHOSEN = re.compile(
    r"\b(?:chos\w*|chose|selected|picked|decided|accepted|adopted|settled|went\s+with|prefer|"
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
# Unread for the key because the text speaks only of another subject (issue 38 item 1).
IRRELEVANT = Reading(irrelevant=True)


def _last_words(text: str, count: int = _WORDS) -> str:
    words = text.split()
    return " ".join(words[-count:]) + (" " if text[-1:].isspace() else "")


def _first_words(text: str, count: int = _WORDS) -> str:
    words = text.split()
    return (" " if text[:1].isspace() else "") + " ".join(words[:count])


# What a thing gives way to, however far it stands from it: "SSL is an old and now insecure
# protocol that has been deprecated in favor of TLS".
_GIVES_WAY = re.compile(r"\bin\s+favou?r\s+of\s*$", re.IGNORECASE)
# The value a thing was replaced by or gave way to, current: "was replaced by PostgreSQL".
_GIVEN_WAY_TO = re.compile(
    r"\b(?:(?:replaced|superseded|succeeded)\s+by|in\s+favou?r\s+of|making\s+way\s+for|"
    r"gave\s+way\s+to)(?:\s+(?:the|a|an))?\W*$",
    re.IGNORECASE,
)


_REWRITTEN_IN = re.compile(r"\brewr\w*\s+in\s*$", re.IGNORECASE)
_THEN_TO = re.compile(r",?\s*(?:and\s+)?(?:then|later)\s+(?:on\s+)?(?:to|onto)", re.IGNORECASE)


def _pair(gap: str, before_first: str) -> tuple[str, str] | None:
    """How a transition between two mentions reads them, if ``gap`` is one."""
    text = _INLINE_MARKUP.sub("", gap).strip()
    if _GIVES_WAY.search(text) and len(text.split()) <= 16:
        return PAST, ASSERTED
    if len(text.split()) > 8:
        return None
    if _REWRITTEN_IN.search(text):
        return PAST, ASSERTED  # "the original STATA code has been rewritten in R"
    if _THEN_TO.fullmatch(text):
        return PAST, ASSERTED  # "from npm to pnpm, then to bun": pnpm gave way too
    if _FORWARD_ARROW.search(text) or _FORWARD_ANY.search(text):
        return PAST, ASSERTED
    if _TO_NEAR.search(text) and (
        _FROM_END.search(before_first.rstrip(_MARKUP))
        or _TRANSITION.search(_last_words(_INLINE_MARKUP.sub("", before_first), 4))
    ):
        return PAST, ASSERTED  # "from in-person French classes to online Spanish classes"
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
    if _UNSURE.search(before):
        return HEDGED
    if _ASKED.search(before) and _TO.match(after):
        return HEDGED
    if _BACK.search(pre):
        return ASSERTED
    if _STAYS.search(pre) and not _PRE_PAST.search(pre):
        return ASSERTED
    decided = _WILL_BE_USED.match(after) is not None
    if _POST_MODAL.match(after) and not decided:
        return HEDGED  # "Python 3.8 will be removed on 5 October": not yet
    if _POST_PAST_FIRST.search(after) or _POST_PAST.search(post) or _USED_TO_BE.search(before):
        return PAST
    if _GIVEN_WAY_TO.search(pre):
        return ASSERTED
    if _PRE_FROM.search(pre):
        return PAST
    chosen = _CHOSEN.search(pre)
    past = _PRE_PAST.search(pre)
    if past and not (chosen and chosen.start() > past.start()):
        return PAST
    if (_HEDGE.search(pre) or (_POST_HEDGE.search(after) and not decided)) and not chosen:
        return HEDGED
    return ASSERTED


def _read_clause(
    clause: str, values: Sequence[str], subject: str | None = None
) -> list[tuple[Mention, str]]:
    found = mentions(clause, values, subject)
    polarity: dict[int, str] = {}
    for i in range(len(found) - 1):
        first, second = found[i], found[i + 1]
        if first.value == second.value:
            continue
        run = i  # the first of a list the first mention ends: "from v1/v2 to v3"
        while run and _TIGHT_LIST.match(clause[found[run - 1].end : found[run].start]):
            run -= 1
        previous_end = found[run - 1].end if run else 0
        before_first = clause[previous_end : found[run].start]
        pair = _pair(clause[first.end : second.start], before_first)
        if (
            pair == (ASSERTED, PAST)
            and before_first
            and _PRE_PAST.search(_last_words(before_first))
        ):
            pair = (PAST, ASSERTED)  # "no longer runs on node after the go rewrite"
        if pair is not None:
            if pair[0] == PAST:  # "a → b → c": b is past, whatever came before it
                for j in range(run, i + 1):
                    polarity[j] = PAST
            else:
                polarity.setdefault(i, pair[0])
            polarity[i + 1] = pair[1]
    # A question, or a change still under way ("is rewriting ledger in Rust"), settles nothing.
    question = clause.rstrip().endswith("?") or bool(
        found and _CHANGING.search(clause[: found[-1].start])
    )
    upcoming = _UPCOMING.search(clause)
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
        before = clause[: mention.start]
        if upcoming and mention.start < upcoming.start() and _TRANSITION.search(before):
            reading = HEDGED  # "migrate X to Y next quarter": neither side has changed yet
        if (reading != HEDGED and _planned(before)) or (reading == ASSERTED and _intended(before)):
            reading = HEDGED  # a change still to come changes neither side yet
        out.append((mention, reading))
    return out


# A dash after a list item's one-word lead ("Owners: search - Kim; checkout - Lee") pairs the
# lead with its value; it does not end a sentence.
_LIST_DASH = re.compile(r"((?:^|[:;,|]|\n)[^\S\n]*[\w.-]+)[^\S\n]+([-–—])[^\S\n]+")


# A line break inside a paragraph of hard-wrapped prose (an ADR or a README at 80 or 100
# columns): a long line that breaks off mid-phrase (after a comma, a hyphen or a word that
# cannot end one: "and", "the", "including"), followed by a line that opens no list item,
# heading, quote or table row. It joins its lines; any other line break ends a sentence.
_BROKEN_OFF = re.compile(
    r"(?:[,(-]|\b(?:and|or|nor|but|the|a|an|of|to|for|with|in|on|at|by|from|including|as|that|"
    r"which|who|is|are|was|were|be|been|our|their|its|than|into|via|using|when|where|while|"
    r"if|so))[^\S\n]*$",
    re.IGNORECASE,
)
_OWN_LINE = re.compile(r"^[^\S\n]*(?:[-*•+>#|]|\d+[.)]\s|$)")


def _unwrap(text: str) -> str:
    if "\n" not in text:
        return text
    lines = text.split("\n")
    out = [lines[0]]
    for line in lines[1:]:
        held = out[-1]
        if (
            len(held) >= 40
            and not _OWN_LINE.match(held)
            and not _OWN_LINE.match(line)
            and _BROKEN_OFF.search(held)
        ):
            out[-1] = f"{held.rstrip()} {line.lstrip()}"
        else:
            out.append(line)
    return "\n".join(out)


def _split(text: str) -> list[str]:
    """``text`` cut into sentences, a list item's dash kept inside its item."""
    text = _unwrap(text)
    held = _LIST_DASH.sub(lambda m: f"{m.group(1)}\0{m.group(2)}\0", text)
    parts = _SENTENCE.split(held)
    return [p.replace("\0", " ") for p in parts if p and p.strip()]


def _wished(before: str) -> bool:
    """A wish stands before the mention with nothing that still holds between them:
    "target p99 < 250 ms eventually" (a wish), "..., still p99 < 300 ms" (what holds)."""
    wishes = list(_WISH.finditer(before))
    return bool(wishes) and not _HOLDS.search(before[wishes[-1].end() :])


def _planned(before: str) -> bool:
    """A change still to come governs what follows it in its phrase: no "and", comma,
    semicolon or closing bracket between ("we will port it to Go) runs on Postgres" is no
    plan for Postgres)."""
    plans = list(_PLANNED.finditer(before))
    return bool(plans) and not _PLAN_BREAK.search(before[plans[-1].end() :])


# (a comma before a participle goes on with the plan: "we will rewrite it in Go, replacing
# the Node implementation")
_PLAN_BREAK = re.compile(r"\band\b|[;)]|,(?!\s*\w+ing\b)", re.IGNORECASE)


def _intended(before: str) -> bool:
    """An intent opens the clause and nothing chosen or holding comes after it."""
    intent = _INTENT.search(before)
    if intent is None:
        return False
    rest = before[intent.end() :]
    return not (_HOLDS.search(rest) or _CHOSEN.search(rest))


def _sentences(text: str, subject: str, package: str = "") -> list[str]:
    """The sentences about ``subject``, where the text names it in some: those, the ones
    that go on about it, and (for a dependency ``package``) the ones naming the package
    (a changelog names its project once: "- Project upgraded to Django v3.2\n- Minimum
    Python version requirement upgraded to 3.7"; a line about another subject is left out
    clause by clause, as anywhere)."""
    sentences = _split(text)
    pattern = subject_pattern(subject)
    if len(sentences) < 2 or not any(pattern.search(s) for s in sentences):
        return sentences
    named = package_pattern(package) if package else None
    kept, following, answering = [], False, False
    for sentence in sentences:
        if pattern.search(sentence) or (named is not None and named.search(sentence)):
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


def read(text: str, key: FactKey, values: Sequence[str], people_index: PeopleIndex) -> Reading:
    """How ``text`` reads the values of ``key`` (:meth:`.default.DefaultReader.read`)."""
    text = _name_people(_LINK.sub(r"\1", text), values, people_index)
    if _about_another_subject(text, key.subject, values):
        return IRRELEVANT  # "auth-service-v2 ..." for auth-service
    if key.predicate == "exists":
        return _read_existence(text, key.subject, values)
    package = key.predicate.split(":", 1)[1] if key.predicate.startswith("dependency:") else ""
    if package and not package_pattern(package).search(text):
        return IRRELEVANT  # versions of some other package
    named = subject_pattern(key.subject).search(text) is not None
    if not named and _personal(text, values):
        return IRRELEVANT  # "User prefers Python": of the user, not of billing
    people = _people(values) or key.predicate.lower() in _HELD_BY
    if people and not named:
        return IRRELEVANT  # "Lee has been away since Monday": of no subject's owners
    last: dict[str, str] = {}
    others: list[str] = []
    kept = elsewhere = False  # a clause read for the key; one left as another subject's
    listing = False  # in the items under an "Options considered" heading
    for sentence in _sentences(text, key.subject, package):
        if _OPTIONS_HEAD.match(sentence):
            listing = True
            continue
        listing = listing and _LIST_ITEM.match(sentence) is not None
        framed = _FRAME_PAST.match(sentence) is not None
        invalid = bool(_INVALID_SINCE.search(sentence))
        desire = bool(_HOLDS.search(sentence))
        before: list[str] = []  # values asserted by the sentence's earlier clauses
        for clause in _clauses(sentence):
            # A date scopes its own clause: "was rewritten in Go; it was Python until 2024".
            dated = invalid or bool(_DATED.search(clause) and _PAST_VERB.search(clause))
            clause = _own_part(clause, key.subject, values, package)
            if not clause:
                elsewhere = True
                continue
            kept = True
            readings = _read_clause(clause, values, key.subject)
            if (
                framed
                or _CLAUSE_NOT_SO.match(clause)
                or (dated and len({m.value for m, _ in readings}) == 1)
            ):
                readings = [(m, PAST if r == ASSERTED else r) for m, r in readings]
            if listing:
                readings = [(m, HEDGED) for m, _ in readings]
            if desire:
                readings = [
                    (m, HEDGED if r == ASSERTED and _wished(clause[: m.start]) else r)
                    for m, r in readings
                ]
            if _UNDO.match(clause) or _THEN_GONE.match(clause):
                for value in before:
                    if last.get(value) == ASSERTED:
                        last[value] = PAST
            for mention, reading in readings:
                if people and reading == ASSERTED and _colleague(clause, mention):
                    if last.get(mention.value) == ASSERTED:
                        continue  # "owned by @alice; @alice mentors @bob"
                    reading = HEDGED
                last[mention.value] = reading
            if readings:  # (a clause naming none goes on about the same ones)
                before = [m.value for m, r in readings if r == ASSERTED]
            if not (framed or dated):
                others += _others(clause, key, values)
            together = [m.value for m, r in readings if r == ASSERTED]
            if any(r == PAST for _, r in readings):
                continue
            combined = combine_handles(clause, together, values)
            if combined != together:
                for value in together:
                    last.pop(value, None)
                for value in combined:
                    last[value] = ASSERTED
    found = Reading(
        tuple(v for v, r in last.items() if r == ASSERTED),
        tuple(v for v, r in last.items() if r == PAST),
        tuple(dict.fromkeys(others)),
    )
    if found.unread and elsewhere and not kept and not named:
        return IRRELEVANT  # "the exporter is written in Go": every clause another's
    return found


# A memory of a person's taste or skill (Mem0's "User prefers Python", "User's favorite
# language is Python", "Manik prefers TypeScript", "User speaks English and Spanish"):
# what the person likes or knows, not what a project runs on, unless it says what for
# ("prefers Vue.js for our use case").
_PERSONAL = re.compile(
    r"^\W*(?:the\s+)?(?P<who>user|(?-i:[A-Z][a-z]+))(?:['’]s\s+(?:favou?rite|preferred)\b|\s+(?:"
    r"prefers|likes|loves|enjoys|speaks|knows|is\s+(?:learning|fluent|proficient|interested)\b|"
    r"works\s+(?:mostly\s+|mainly\s+|primarily\s+)?with)\b)",
    re.IGNORECASE,
)
_FOR_PROJECT = re.compile(r"\bfor\s+(?:our|the|this|its|their|my)\b", re.IGNORECASE)


def _personal(text: str, values: Sequence[str]) -> bool:
    """The text is one sentence of a person's taste or skill, for no stated purpose."""
    match = _PERSONAL.match(text)
    if match is None or len(_split(text)) > 1 or _FOR_PROJECT.search(text):
        return False
    who = match.group("who")
    return not any(value_pattern(v).fullmatch(who) for v in values)


_HANDLE = re.compile(r"@[\w.-]+")
# A markdown link, read as its text: "from [tonweb](https://github.com/toncenter/tonweb) to
# [ton-org](...)" names each once, and its target names no subject ("PR [#21](.../pull/21)").
_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\s]*\)")


_SHARP_S = re.compile("ß|ss")


@lru_cache(maxsize=4096)
def _alias_pattern(alias: str) -> re.Pattern[str]:
    """A person's other spelling as texts write it: an e-mail as is, a name with its words
    apart by spaces, dots, hyphens or underscores, in any case."""
    if "@" in alias:
        return re.compile(rf"(?<![\w.+-]){re.escape(alias)}(?![\w-]|\.\w)", re.IGNORECASE)
    # (a pattern ignoring case reads "İ" as "i" but neither "SS" as "ß" nor "ß" as "ss",
    # which Unicode's case folding makes one)
    words = r"[\s._-]+".join(_SHARP_S.sub("(?:ß|ss)", re.escape(w)) for w in alias.split())
    return re.compile(rf"(?<![\w@.:/-])@?{words}(?![\w@])(?!-\w)", re.IGNORECASE)


def _name_people(text: str, values: Sequence[str], index: PeopleIndex) -> str:
    """``text`` with every other spelling of a person among ``values`` (their display name,
    e-mail, handle, as the sources' identity data gives them) written as the value writes
    them: "Kim Lee (@klee) owns checkout" reads as naming ``@klee`` twice."""
    aliases = {part: person_aliases(part, index) for value in values for part in value.split()}
    # a spelling two of the values' people have (two "John Smith"s) names neither
    whose: dict[str, list[str]] = {}
    for part, spelt in aliases.items():
        for alias in spelt:
            whose.setdefault(alias, []).append(part)
    named = [
        (alias, part)
        for alias, parts in whose.items()
        for part in parts[:1]
        if all(_one(part, other, aliases[part]) for other in parts[1:])
    ]
    # longest first across the values: "Alice Chen" is hers before "alice" is another's
    for alias, part in sorted(named, key=lambda named: -len(named[0])):
        text = _alias_pattern(alias).sub(part.replace("\\", r"\\"), text)
    return text


def _one(part: str, other: str, aliases: Sequence[str]) -> bool:
    """Whether two of a key's values are one person: ``other`` is ``part`` as spelt, or one
    of its other spellings."""
    return spelling(other) in (spelling(part), *aliases)


#: The predicates healthd's sources give owners under, whose values are people or teams
#: however a source writes them: GitHub's logins "alice bob", Jira's accountIds or e-mails,
#: Backstage's "team-a" or "user:klee", as much as CODEOWNERS' "@alice".
_HELD_BY = frozenset({"owner", "owners"})


def _people(values: Sequence[str]) -> bool:
    """A key whose values are people: a text must name its subject to speak of it."""
    return bool(values) and all(
        all(_HANDLE.fullmatch(h) for h in v.split()) for v in values if v.strip()
    )


# Working on something is not owning it: "Bob works on the ML team", "Alice mentors Bob on
# the ML team", "works with Alice on billing".
_COLLEAGUE_AFTER = re.compile(
    r"^[^\S\n]*(?:works?|worked|working|helps?|helped|contributes?|contributed|pairs?|paired|"
    r"collaborates?|collaborated)\s+(?:on|with|in|for|at|to)\b|^[^\S\n]*(?:mentors?|mentored|joined|joins|"
    r"reports?\s+to|is\s+(?:a\s+)?(?:member|part)\s+of)\b",
    re.IGNORECASE,
)
_COLLEAGUE_BEFORE = re.compile(
    r"\b(?:(?:works?|worked|working|pairs?|paired|collaborates?|collaborated)\s+with|"
    r"mentors?|mentored\s+by|reports?\s+to)\s*$",
    re.IGNORECASE,
)


def _colleague(clause: str, mention: Mention) -> bool:
    """The person is named as one who works with or on it, not as who holds it."""
    return bool(
        _COLLEAGUE_AFTER.match(clause[mention.end :])
        or _COLLEAGUE_BEFORE.search(clause[: mention.start])
    )


_SEGMENT = re.compile(r",\s*|\s+\|\s+")


def _blank(text: str, subject: str, values: Sequence[str], package: str) -> str:
    """``text`` with the key's values as ``VALUE`` and the dependency's names as ``PKG``."""
    for mention in reversed(mentions(text, values, subject)):
        text = text[: mention.start] + "VALUE" + text[mention.end :]
    if package:
        text = package_pattern(package).sub("PKG", text)
    return text


def _own_part(clause: str, subject: str, values: Sequence[str], package: str) -> str:
    """The part of ``clause`` about ``subject``: nothing where it speaks only of another
    subject ("Kim runs the search service"), and of a list naming the subject ("gateway Go,
    exporter Node"), the items not about another one."""
    if other_subjects(clause, subject, _blank(clause, subject, values, package)):
        return ""
    if not subject_pattern(subject).search(clause) or not _SEGMENT.search(clause):
        return clause
    parts = _SEGMENT.split(clause)
    kept = [
        p
        for p in parts
        if not other_subjects(p, subject, _blank(p, subject, values, package), item=True)
    ]
    return clause if len(kept) == len(parts) else ", ".join(kept)


def _others(clause: str, key: FactKey, values: Sequence[str]) -> list[str]:
    """Values ``clause`` asserts for the key that are none of ``values``: the span after one
    of the predicate's cues ("written in X", "owned by X", "X is the source of truth")."""
    found = []
    package = key.predicate.split(":", 1)[1] if key.predicate.startswith("dependency:") else ""
    names = set(package_names(package)) if package else set()
    named = mentions(clause, values, key.subject)
    for pattern in cue_patterns(key.subject, key.predicate):
        for match in pattern.finditer(clause):
            if any(m.start < match.end("x") and match.start("x") < m.end for m in named):
                continue  # part of a value the key has held: "kim.lee@acme.io"
            span = match.group("x").strip(" .,;:")
            bare = span.lower().removeprefix("the ").strip()
            if (
                not bare
                or bare in _NOT_VALUES
                or bare in names
                or mentions(span, values, key.subject)
                or subject_pattern(key.subject).fullmatch(bare)
                or subject_pattern(key.subject).match(bare)
            ):
                continue
            start, end = match.start("x"), match.end("x")
            if clause.rstrip().endswith("?"):
                continue
            if (
                _single(clause[:start], clause[end:]) != ASSERTED
                or _DESIRE.search(clause[:start])
                or _planned(clause[:start])
                or _intended(clause[:start])
            ):
                continue
            found.append(span)
    return found


_NOT_VALUES = frozenset(
    [
        "it",
        "this",
        "that",
        "them",
        "they",
        "he",
        "she",
        "we",
        "i",
        "you",
        "the",
        "user",
        "users",
        "team",
        "someone",
        "nobody",
        "everyone",
        "owner",
        "owners",
        "source",
        "truth",
        "system",
        "record",
        "it's",
        "its",
        "our",
        "their",
    ]
)


def _about_another_subject(text: str, subject: str, values: Sequence[str]) -> bool:
    """The text names a longer name that starts with the subject's (``auth-service-v2`` for
    ``auth-service``) and never the subject itself; a value that happens to start with the
    subject's name (``payments-v2`` of ``payments``) does not count, nor such a name where
    the key's values are themselves such names (``billing-v4`` for billing's source of truth
    is a value the key never held, not another subject)."""
    if subject_pattern(subject).search(text):
        return False
    near = near_subject_pattern(subject)
    if any(near.match(value) for value in values):
        return False
    for value in values:
        text = value_pattern(value).sub(" ", text)
    return near.search(text) is not None


def _read_existence(text: str, subject: str, values: Sequence[str]) -> Reading:
    pattern = subject_pattern(subject)
    state = None
    for sentence in _sentences(text, subject):
        if not pattern.search(sentence):
            continue
        framed = _FRAME_PAST.match(sentence) is not None
        for clause in _clauses(sentence):
            named = pattern.search(clause)
            if named is None:
                continue
            before = clause[: named.start()]
            if _planned(before) or _intended(before) or _POST_MODAL.match(clause[named.end() :]):
                continue  # "we will decommission the CLI tool": not yet
            if _GONE.search(clause):
                state = False
            elif _ALIVE.search(clause):
                state = not (framed or _CLAUSE_NOT_SO.match(clause))
    if state is None:
        return Reading()
    yes = tuple(v for v in values if v.lower() == "true")
    no = tuple(v for v in values if v.lower() == "false")
    return Reading(yes, no) if state else Reading(no, yes)
