"""Whom a clause speaks of, and what value it gives a key that the key never held.

A memory serves what retrieval returned beside the item asked about: "Kim runs the search
service" for "who owns checkout?". A clause that does not name the key's subject but names
another one (the subject slot of a predicate, "the X service", a list item's lead, a
hyphenated service name) is about that other subject. And a clause about the subject may
give the key a value it never held ("gateway is implemented in Elixir"): the span after the
predicate's cue, read as ``other``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from healthd.reading._match import package_names, subject_pattern
from healthd.reading.aliases import GENERIC, OWNER_NOUNS

_NOUNS = "|".join(OWNER_NOUNS)
_ROLES = "exporter|scheduler|limiter|worker|cli|frontend|backend|portal"
_CANDIDATES = (
    # "the search service", "the user's deploy tool", "the exporter"
    re.compile(rf"\bthe\s+(?:[\w']+'s\s+)?(?P<e>[\w.-]+)\s+(?:[\w-]+\s+)?(?:{_NOUNS})\b", re.I),
    re.compile(rf"\bthe\s+(?P<e>{_ROLES})\b(?!\s+(?:of|for)\b)", re.I),
    # subject slot: "exporter is written in", "worker RUNS_ON", "Notifications publish to"
    re.compile(
        r"(?:^|[.;:,]\s*|\b(?:that|said|and)\s+)(?:the\s+)?(?P<e>[\w.-]+)(?:\s+(?:service|db|database|repo|team))?\s+"
        r"(?:(?:is|are|was|were)\s+)?(?:written|implemented|built|rewritten|hosted|deployed|"
        r"stored|running|runs|uses|use|publish(?:es)?|consumes?|depends|pins|treats|reads|"
        r"builds|emits|keeps|bumped|moved|made|(?!VALUE\b|PKG\b)(?:[A-Z]{2,}(?:_[A-Z]+)+|[A-Z]{4,}))\b",
    ),
    # the object of an ownership verb: "Maria owns analytics", "Ana handles the fraud rules"
    re.compile(
        r"\b(?:owns|owned|owner\s+of|maintainer\s+of|leads|lead\s+for|responsible\s+for|"
        r"on[\s-]call\s+for|handles|reviewing|covering|OWNS|LEADS|IS_\w+_(?:OF|FOR))\s+"
        r"(?:the\s+)?(?P<e>[\w.-]+)",
    ),
    # a list item's lead: "search - Kim", "| search | Tom |", "exporter: Go", "exporter Go"
    re.compile(
        rf"^[\s|*-]*(?-i:[A-Z][\w ]{{0,24}}:\s+)?(?P<e>(?-i:[a-z][\w.-]*))(?:\s+(?:{_NOUNS}))?"
        r"(?:\s*(?:\||:|→|->|=>)|\s+[-–]\s)\s*\S",
        re.I,
    ),
    re.compile(r"^\W*(?P<e>[a-z][\w.-]*)\s+VALUE\W*$"),
    # "the source of truth for refunds", "on call for search"
    re.compile(
        r"\b(?:source\s+of\s+truth|system\s+of\s+record|on[\s-]call|owner|owners)\s+for\s+"
        r"(?:the\s+)?(?P<e>[\w.-]+)",
        re.I,
    ),
    # a name before the key's attribute: "search latency budget is", "inventory's broker:"
    re.compile(
        r"^\W*(?:the\s+)?(?P<e>[\w.-]+?)(?:'s)?\s+(?:p\d\d\s+)?(?:latency\s+budget|latency|"
        r"budget|slo|(?:message\s+)?broker|language|owners?|source\s+of\s+truth|"
        r"system\s+of\s+record|ci|store|hosting|on[\s-]call)\s*(?:is|are|was|were|:|=)\s",
        re.I,
    ),
    # what a preference is for: "prefers Node for internal tooling"
    re.compile(
        r"\b(?:prefers?|preferred|likes?|favou?rs?)\s+(?:PKG\s+)?VALUE\s+for\s+(?:the\s+)?"
        r"(?:[\w']+'s\s+)?(?P<e>[\w.-]+)",
        re.I,
    ),
    # a service's name: "metrics-exporter", "cart-api", "ledger-v2"
    re.compile(rf"\b(?P<e>[a-z][a-z0-9]*-(?:{_NOUNS}|v\d+))\b", re.I),
)
_FUNCTION = frozenset(
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
        "was",
        "were",
        "be",
        "been",
        "and",
        "or",
        "but",
        "so",
        "as",
        "with",
        "from",
        "into",
        "then",
        "now",
        "still",
        "also",
        "only",
        "just",
        "not",
        "no",
        "never",
        "this",
        "that",
        "these",
        "those",
        "its",
        "their",
        "his",
        "her",
        "our",
        "my",
        "your",
        "all",
        "any",
        "some",
        "each",
        "every",
        "new",
        "old",
        "primary",
        "main",
        "same",
        "shared",
        "default",
        "existing",
        "current",
        "central",
        "single",
        "whole",
        "entire",
        "owner",
        "owners",
        "source",
        "truth",
        "record",
        "language",
        "broker",
        "budget",
        "latency",
        "version",
        "store",
        "ci",
        "hosting",
        "on-call",
        "oncall",
        "value",
        "values",
        "value's",
        "away",
        "back",
        "again",
        "off",
        "over",
        "instead",
        "rather",
        "before",
        "after",
        "today",
        "currently",
        "previously",
        "formerly",
        "next",
        "later",
    ]
)

# Labels that structure a document and lead its lines with a colon, naming no subject: a
# conventional commit's type and scope ("deps: bump ...", "fix: ..."), a changelog's
# sections, an ADR's fields and front matter ("summary: Why we chose ...").
_LABELS = frozenset(
    [
        "feat",
        "fix",
        "chore",
        "deps",
        "dependencies",
        "docs",
        "build",
        "perf",
        "refactor",
        "style",
        "test",
        "tests",
        "revert",
        "security",
        "added",
        "changed",
        "deprecated",
        "removed",
        "fixed",
        "breaking",
        "summary",
        "title",
        "description",
        "context",
        "decision",
        "status",
        "consequences",
        "rationale",
        "reason",
        "why",
        "note",
        "notes",
        "outcome",
        "result",
    ]
)
# Verbs a memory opens with when it leaves out its subject (Mem0's "uses PostgreSQL",
# "prefers tabs"): the word before the value is no name.
_MEMORY_VERBS = frozenset(
    [
        "uses",
        "used",
        "prefers",
        "preferred",
        "likes",
        "loves",
        "runs",
        "ran",
        "wants",
        "needs",
        "chose",
        "picked",
        "adopted",
        "switched",
        "migrated",
        "moved",
        "upgraded",
        "bumped",
        "bumps",
        "has",
        "had",
        "is",
        "was",
    ]
)


def _label(name: str) -> bool:
    """A document's label, or one with its scope ("ci-deps", "build-deps")."""
    return all(part in _LABELS or part == "ci" for part in name.split("-"))


# A name's version: ``payments-v2``, ``billing_v4``, ``api 3``.
_VERSION_SUFFIX = re.compile(r"[-_ ]v?(\d+)$")


def _related(candidate: str, subject: str) -> bool:
    """The candidate is the subject by another spelling: "orders" for ``orders-db``,
    "session" for ``sessions``, "payments-core" for ``payments``; never a sibling version
    ("payments-v2" is not ``payments-v1``)."""
    versions = (_VERSION_SUFFIX.search(candidate.lower()), _VERSION_SUFFIX.search(subject.lower()))
    if versions[0] and versions[1] and versions[0].group(1) != versions[1].group(1):
        return False
    a = re.sub(r"[^a-z0-9]", "", candidate.lower())
    b = re.sub(r"[^a-z0-9]", "", subject.lower())
    stem = min(len(a), len(b), 5)
    return bool(a) and stem >= 3 and a[:stem] == b[:stem]


# An item of a list: "rate limits in VALUE", "analytics PKG VALUE", "docs on VALUE".
_ITEM = re.compile(
    r"^\W*(?:[A-Z][\w ]{0,24}:\s+)?(?P<e>[a-z][\w.-]*)(?:\s+[a-z][\w.-]*)?\s+(?:(?:on|in|uses|at|is)\s+)?(?:PKG\s+)?VALUE\b",
)


# A word in -ing is a verb where an article, a preposition or a value follows it ("replacing
# the Node implementation", "moving to VALUE"); elsewhere it may be a name ("the billing
# worker", "shipping uses Kafka").
_GERUND = re.compile(
    r"(?<=ing)\s+(?:the|a|an|its|their|our|to|from|off|over|into|VALUE|PKG)\b", re.IGNORECASE
)


def other_subjects(clause: str, subject: str, blank: str, item: bool = False) -> list[str]:
    """The subjects ``clause`` speaks of that are not ``subject``; ``blank``: the clause with
    the key's values replaced by ``VALUE`` and the dependency's names by ``PKG``; ``item``:
    the clause is one item of a list whose other items name the subject."""
    if subject_pattern(subject).search(clause):
        return []
    found = []
    for pattern in (*_CANDIDATES, _ITEM) if item else _CANDIDATES:
        for match in pattern.finditer(blank):
            name = match.group("e").strip(".-").lower()
            if (
                not name
                or name in ("value", "pkg")
                or name.replace(" ", "-") in GENERIC
                or name in GENERIC
                or name in _FUNCTION
                or name in _MEMORY_VERBS
                or (_label(name) and blank[match.end("e") :].lstrip().startswith(":"))
                or name.isdigit()
                or re.fullmatch(r"[a-z]{3,}ed", name)  # a verb: "replaced"
                or _GERUND.match(blank, match.end("e"))  # "replacing the ..."
                or re.fullmatch(r"[a-z]+-\d+", name)  # a ticket's key: "PAY-400"
                or _related(name, subject)
            ):
                continue
            found.append(name)
    return found


# A value's span: a name as texts write one (capitalised words, a handle, a hyphenated
# service name with a version, a version), or, after a cue that takes one, "the" and a few
# lower-case words ("owned by the payments guild").
_NAME = r"(?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+|@[\w.-]+|[A-Z][\w.#+-]*(?:\s+[A-Z][\w.#+-]*)?|[a-z][\w.-]*-v\d+|[A-Za-z][\w.#+]*\.[a-z]{2,})"
_WORDS = r"(?:the\s+)?[\w.#+-]+(?:\s+(?!(?:for|in|on|at|since|and|but|now|this|that|with|to)\b)[\w.#+-]+){0,2}"
_STOPS = r"(?=\s*(?:$|[.,;:!?)(]|\s(?:for|in|on|at|since|and|but|now|this|that|with|to|today)\b))"

# Cues by the key's predicate (its last word for a ``dependency:``): the value after them is
# what the text gives the key. ``{x}`` a name, ``{w}`` a few words, ``{s}`` the subject.
CUES: dict[str, tuple[str, ...]] = {
    "language": (
        r"\b(?:written|implemented|built|coded|rewritten|developed)\s+(?:in|with)\s+{x}",
        r"\bIS_(?:WRITTEN|IMPLEMENTED)_IN\s+{x}",
        r"\b(?:uses|is\s+in)\s+{x}{stop}",
    ),
    "broker": (
        r"\bpublish(?:es)?\s+(?:events\s+)?(?:to|on)\s+{x}",
        r"\bPUBLISHES_TO\s+{x}",
        r"\buses\s+{x}(?:\s+for\s+messaging)?{stop}",
        r"\bbroker\s+is\s+{x}",
        r"\bgo(?:es)?\s+through\s+{x}",
        r"\bemits\s+(?:on|to)\s+{x}",
    ),
    "source_of_truth": (
        r"(?:^|\b(?:that|said)\s+){w}\s+(?:is|are)\s+the\s+(?:source\s+of\s+truth|system\s+of\s+record)",
        r"\b(?:source\s+of\s+truth|system\s+of\s+record|ledger\s+of\s+record)\s+is\s+{w}{stop}",
        r"\bauthoritative\s+in\s+{w}{stop}",
        r"{x}\s+IS_SOURCE_OF_TRUTH",
    ),
    "owners": (
        r"{x}\s+(?:owns|OWNS|IS_OWNER_OF|maintains)\b",
        r"\b(?:owned|maintained|run)\s+by\s+{w}{stop}",
        r"\bIS_OWNED_BY\s+{w}{stop}",
        r"\bowner\s*(?:is|:)\s*{x}",
        r"{x}\s+is\s+the\s+owner\b",
    ),
    "on_call": (
        r"{x}\s+is\s+(?:the\s+)?(?:[\w-]+\s+)?on[\s-]call\b",
        r"\bon[\s-]call\s*(?:is|:)\s*{x}",
    ),
    "store": (r"\b(?:stored|kept|live|lives)\s+in\s+{x}",),
    "hosting": (r"\b(?:runs|hosted|deployed|running)\s+on\s+{x}",),
    "ci": (
        r"\b(?:runs|builds)\s+on\s+{x}",
        r"\b(?:uses|USES)\s+{x}\s+for\s+CI\b",
    ),
    "latency_budget": (r"(?P<x>p\d\d\s*(?:<|under|below|within)\s*\d+\s*ms)",),
}
# Any key: "gateway: TypeScript", "sessions -> Valkey", "search - Kim".
_SUBJECT_LEAD = r"{s}\s*(?::|-|–|→|->|=>|\|)\s*{x}"


@lru_cache(maxsize=1024)
def cue_patterns(subject: str, predicate: str) -> tuple[re.Pattern[str], ...]:
    """The cues after which ``predicate``'s value stands, as patterns with a group ``x``."""
    x, w, stop = rf"(?P<x>{_NAME})", rf"(?P<x>{_WORDS})", _STOPS
    s = subject_pattern(subject).pattern
    templates: list[str] = [_SUBJECT_LEAD]
    if predicate.startswith("dependency:"):
        names = "|".join(
            re.escape(n).replace(r"\ ", r"\s+").replace(r"\-", "[-_ ]?")
            for n in sorted(package_names(predicate.split(":", 1)[1]), key=len, reverse=True)
        )
        templates = [
            rf"(?<![\w@/.-])@?(?i:{names})\s*(?:==|@|:|,)?\s*(?:version\s+)?"
            r"(?P<x>v?\d+(?:\.\d+)*)\b(?!\s+(?:extensions?|connections?|tables?|rows?|users?))"
        ]
    else:
        templates += CUES.get(predicate, ())
    return tuple(
        re.compile(
            t.replace("{x}", x)
            .replace("{w}", w)
            .replace("{stop}", stop)
            .replace("{s}", f"(?i:{s})")
        )
        for t in templates
    )
