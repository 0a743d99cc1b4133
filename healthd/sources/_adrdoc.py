"""Architecture decision records: one file's text → number, title, status and links.

Understands Nygard/adr-tools records (``# 2. Title``, a ``## Status`` section holding
``Accepted`` / ``Superseded by [3. ...](0003-....md)`` / ``Supersedes [...]``) and MADR
(front matter ``status:``, ``* Status:`` / ``- Status:`` lines), with the mess real logs
contain: spelling variants (``superceded``), decoration (``**Status:** ✅ Accepted``,
``~~Proposed~~ Accepted``), unlinked references (``Superseded by ADR-0003``).

Pure; :func:`parse_adr` never raises, it reports what it could not understand in
``problem``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Status = Literal["accepted", "proposed", "superseded", "deprecated", "rejected"]

_SUPERSEDED = r"super(?:s|c|sc|ss)e+ded|replaced|obsoleted"
_SUPERSEDES = r"super(?:s|c|sc|ss)e+des|replaces|obsoletes"
_WORDS: list[tuple[Status, re.Pattern[str]]] = [
    ("superseded", re.compile(rf"\b(?:{_SUPERSEDED})\b", re.I)),
    ("deprecated", re.compile(r"\b(?:deprecated?|obsolete|retired|withdrawn)\b", re.I)),
    ("rejected", re.compile(r"\b(?:rejected|declined|refused|abandoned)\b", re.I)),
    (
        "accepted",
        # ("implemented": nats-io/nats-architecture-and-design's template offers `Approved`,
        # `Partially Implemented`, `Implemented`: a decision in force, more so than approved)
        # ("implemented" said of the future or denied is no status: "Proposed (to be
        # implemented in Q3)", "Not implemented", "Won't be implemented"; "being implemented"
        # is a decision in force under way, as design docs say: "Status: being implemented")
        re.compile(
            r"\b(?:accepted|approved|adopted|agreed|decided|active|done)\b"
            r"|(?<!\bbe )(?<!\bnot )(?<!\byet )(?<!\bonce )(?<!\bwhen )"
            r"(?<!\bif )(?<!\buntil )(?<!\bnever )(?<!n't )(?<!n’t )(?<!\bnot being )"
            r"(?<!n't being )\bimplemented\b",
            re.I,
        ),
    ),
    (
        "proposed",
        re.compile(
            r"\b(?:proposed?|draft|drafted|in[ -]review|under review|"
            r"pending|open|wip|in[ -]progress|discussion|suggested|"
            # a decision set aside, not in force (adr/madr's own 0003: "status: on hold")
            r"on[ -]hold|suspended|postponed|deferred)\b"
            r"|^[\W_]*incomplete\b",  # (as the status itself, not "rollout incomplete")
            re.I,
        ),
    ),
]
# a link's text holds no bracket and its target no parenthesis, and a title follows the
# target after a space (CommonMark): no two parts can take the same characters, so text like
# "[a]([a]([a](..." is read in linear time (it took time cubic in its length: 10 KB, minutes)
_LINK = re.compile(r"\[([^\[\]]*)\]\(\s*<?([^()\s<>]*)>?(?:\s[^()]*)?\)")
_REF_NUM = re.compile(
    r"(?:\b(?:adr|decision|record)[\s#:_-]*0*(\d{1,6})\b|#\s*0*(\d{1,6})\b"
    r"|(?<![\w.])0*(\d{1,6})(?:\.(?!\d)|\b)(?![-/]\d))",
    re.I,
)
_FILE_NUM = re.compile(r"^(?:adr|decision)?[-_ ]?0*(\d{1,6})(?=[-_. ]|$)", re.I)
# a record named by the day it was written, as log4brains names them (thomvaill/log4brains'
# docs/adr/20200924-use-markdown-architectural-decision-records.md; 2020-09-24-... too): the
# date, YYYYMMDD, is its number (not the year a dashed date begins with)
_DATE_NUM = re.compile(r"^((?:19|20)\d\d)(-?)(0[1-9]|1[0-2])\2(0[1-9]|[12]\d|3[01])(?=[-_. ]|$)")
# a number behind another prefix, RFC-style: ``DR002-...``, ``RFC-0001-...``, ``PEP-008``
# (at least three digits, so ``v2-api.md`` or ``k8s.md`` are no records)
_PREFIXED_NUM = re.compile(r"^([a-z]{2,5})[-_]?(\d{3,6})(?=[-_. ]|$)", re.I)
#: The prefixes of the one ADR numbering (``0003``, ``ADR-003``, ``decision-3``).
ADR_PREFIXES = frozenset({"", "adr", "decision"})
_HEADING_OPEN = re.compile(r"#{1,6}(?=\s)")
_TITLE_NUM = re.compile(
    r"^(?:adr|add|decision|record|(?-i:[A-Z]{2,5})(?=-?\d{3}))?[\s#:_-]*0*(\d{1,6})"
    r"\s*[.:)\-–—]?\s+(.+)$",
    re.I,
)
_STATUS_WORDS = re.compile(
    r"\b(?:accepted|approved|proposed|rejected|deprecated|superseded|draft"
    r"|(?:partially\s+)?implemented)\b",
    re.I,
)
# Template guidance left in a record: "Accepted or Rejected", "[Proposed | Accepted]",
# "{proposed | rejected | ...}", "Superseded by ADRzzz" / "ADR-XXXX" / "ADR-NNNN".
_CHOICE = re.compile(
    rf"{_STATUS_WORDS.pattern}\s*(?:\bor\b|\||/)\s*(?:\w+\s*(?:,|\bor\b|\||/)\s*)*"
    rf"{_STATUS_WORDS.pattern}"
    # or a list of three and more, as templates give: "proposed, accepted, rejected"
    rf"|{_STATUS_WORDS.pattern}(?:\s*,\s*{_STATUS_WORDS.pattern}){{2,}}",
    re.I,
)
_PLACEHOLDER = re.compile(
    r"\b(?:adr|add)[-_ ]?(?:z{2,}|x{2,}|y{2,}|n{3,}|\?{2,})\b|\{[^}]*\|", re.I
)
# emphasis markers; an underscore only when it is not inside a word (snake_case stays)
_EMPHASIS = re.compile(r"[*`]+|(?<!\w)_+|_+(?!\w)")
# an inline code span (CommonMark: a run of backticks, closed by a run as long)
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def _plain_title(text: str) -> str:
    """A heading's text without its emphasis marks; inside inline code every character is
    the title's own (get10101/itchysats' 013: ``not just the `{taker,maker}_cfd::Actor```
    keeps ``_cfd``; ``Use `__init__.py` files`` keeps ``__init__``). A space each side of
    the code is padding, not the title's (CommonMark: ``` `` `tick` `` ``` is `` `tick` ``)."""
    out: list[str] = []
    at = 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_EMPHASIS.sub("", text[at : m.start()]))
        code = m.group(2)
        if len(code) > 2 and code[0] == code[-1] == " " and code.strip(" "):
            code = code[1:-1]
        out.append(code)
        at = m.end()
    out.append(_EMPHASIS.sub("", text[at:]))
    return "".join(out)


def _heading(line: str) -> tuple[int, str] | None:
    """An ATX heading's level and text (``## Status ##`` → 2, ``Status``), or None. A closing
    run of ``#`` counts only after a space (CommonMark: ``# Use C#`` is "Use C#"). Read
    without a pattern whose parts share characters: one heading holding a run of 2,000
    spaces took 47 s to match, time cubic in the run."""
    m = _HEADING_OPEN.match(line)
    if m is None:
        return None
    text = line[m.end() :].strip()
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1].isspace()):
        text = bare.rstrip()
    return len(m.group(0)), text


@dataclass
class Record:
    """What one ADR file says."""

    number: int | None = None
    title: str | None = None
    status: Status | None = None
    status_text: str = ""
    superseded_by: list[str] = field(default_factory=list)  # raw references
    supersedes: list[str] = field(default_factory=list)
    # one entry per reference, its alternatives in order (a link's target, then its text)
    successor_refs: list[tuple[str, ...]] = field(default_factory=list)
    predecessor_refs: list[tuple[str, ...]] = field(default_factory=list)
    problem: str | None = None


def file_number(name: str) -> int | None:
    """Number from a file name such as ``0003-use-nats.md``, ``ADR-003.md`` or
    ``DR002-no-charges.md``."""
    base = name.rsplit("/", 1)[-1]
    m = _DATE_NUM.match(base)
    if m:
        return int(m.group(1) + m.group(3) + m.group(4))
    m = _FILE_NUM.match(base)
    if m:
        return int(m.group(1))
    m = _PREFIXED_NUM.match(base)
    return int(m.group(2)) if m else None


def is_dated(name: str) -> bool:
    """Whether a record's file name begins with the day it was written (log4brains'
    ``20200924-x.md``): records of one day share that number by design, not by mistake."""
    return _DATE_NUM.match(name.rsplit("/", 1)[-1]) is not None


def file_prefix(name: str) -> str | None:
    """The numbering a record's file name follows, lower case: ``adr`` for ``0003-x.md``,
    ``ADR-003-x.md`` and ``decision-3.md``, else its own prefix (``dr`` for
    ``DR002-x.md``, ``rfc`` for ``RFC-0001-x.md``); None without a number."""
    base = name.rsplit("/", 1)[-1]
    if _DATE_NUM.match(base) or _FILE_NUM.match(base):
        return "adr"
    m = _PREFIXED_NUM.match(base)
    if m is None:
        return None
    prefix = m.group(1).lower()
    return "adr" if prefix in ADR_PREFIXES else prefix


def ref_number(ref: str) -> int | None:
    """A record number from a reference: a link target file name or a text like
    ``3. Use NATS``, ``ADR-0003`` or ``#3``."""
    target = ref.strip()
    if not target:
        return None
    base = target.split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    if base:
        n = file_number(base)
        if n is not None:
            return n
    m = _REF_NUM.search(target)
    if m:
        return int(next(g for g in m.groups() if g is not None))
    return None


def _strip_decoration(text: str) -> str:
    text = re.sub(r"~~.*?~~", " ", text, flags=re.S)  # struck-through (old) statuses
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    return text


def _front_matter(lines: list[str]) -> tuple[dict[str, str], int]:
    if not lines or lines[0].strip() != "---":
        return {}, 0
    data: dict[str, str] = {}
    for i in range(1, min(len(lines), 200)):
        line = lines[i]
        if line.strip() in ("---", "..."):
            return data, i + 1
        m = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$", line)
        if m:
            data[m.group(1).lower()] = m.group(2).strip().strip("'\"").strip()
    return {}, 0


#: More ``[`` and ``{`` than front matter ever needs, and few enough for either parser.
_MAX_FLOW_OPENERS = 256


def _status_block(front: list[str]) -> tuple[int, list[str]]:
    """The front matter's (last, as :func:`_front_matter` reads it) top-level ``status:``
    line and the lines continuing its value (indented or blank), with its index."""
    at = max((i for i, line in enumerate(front) if _STATUS_KEY.match(line)), default=None)
    if at is None:
        return 0, []
    value = front[at].split(":", 1)[1]
    flow = value.strip()[:1] in ("[", "{")  # (brackets in a plain or quoted value: text)
    depth = value.count("[") + value.count("{") - value.count("]") - value.count("}")
    depth = depth if flow else 0
    end = at + 1
    while end < len(front):
        line = front[end]
        # (continued: indented or blank; at the margin, a flow collection left open, or
        # the items of a list the key holds, ``status:`` then ``- accepted``, as YAML has)
        margin = line.strip() and line[0] not in " \t"
        if margin and depth <= 0 and not (line.startswith("-") and not value.strip()):
            break
        if flow:
            depth += line.count("[") + line.count("{") - line.count("]") - line.count("}")
        end += 1
    return at, front[at:end]


_STATUS_KEY = re.compile(r"^status\s*:", re.I)


def _yaml_error(front: list[str], at: int = 0) -> str | None:
    """Why front matter is no YAML (``status: "accepted`` with its quote never closed,
    ``status: [accepted``), or None; ``at`` is the index of its first line in the front
    matter. Read as a stream of parse events, never built, so aliases cannot multiply it."""
    import yaml  # (here: most records have no front matter, and PyYAML takes 15 ms to load)

    text = "\n".join(front)
    openers = text.count("[") + text.count("{")
    if openers > _MAX_FLOW_OPENERS:
        return f"{openers} '[' and '{{', more than the {_MAX_FLOW_OPENERS} read"
    try:
        # libyaml's parser where PyYAML has it: the pure-Python one takes time cubic in how
        # deep flow collections nest (``status: [[[[...``: 2,000 deep, 5 s)
        for _ in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            pass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f"line {mark.line + at + 2}: " if mark is not None else ""
        return f"{where}{problem}"
    return None


def _ref_groups(text: str, verb: str) -> list[tuple[str, ...]]:
    """References that follow ``verb`` (a regex) in ``text``, one per link (its target,
    then its text) or the bare words after it."""
    out: list[tuple[str, ...]] = []
    for m in re.finditer(rf"(?:{verb})(?:\s+by)?\s*:?\s*(.*)", text, re.I):
        tail = m.group(1)
        links = _LINK.findall(tail)
        if links:
            for label, target in links:
                out.append(tuple(ref for ref in (target, label) if ref))
        elif tail.strip():
            # "ADR031 and ADR034", "[ADR031] and [ADR034]": one reference each, when every
            # part names a number (a quoted title "ADR-025 Argo CD and Flux" stays whole)
            parts = [p.strip(" []") for p in re.split(r",|;|&|\band\b", tail.strip())]
            parts = [p for p in parts if p]
            if len(parts) > 1 and all(ref_number(p) is not None for p in parts):
                out.extend((part,) for part in parts)
            else:
                out.append((tail.strip(),))
    return out


def classify(text: str) -> Status | None:
    """The status a status text states; the strongest wins (superseded > deprecated >
    rejected > accepted > proposed), since records keep their history there."""
    # (spaces and hyphens between words as one space: the words "implemented" follows are
    # read one space before it, "Not  implemented", "not-implemented", "to-be-implemented")
    clean = re.sub(r"(?:\s|(?<=\w)-(?=\w))+", " ", _LINK.sub(" ", _strip_decoration(text)))
    without_supersedes = re.sub(rf"\b(?:{_SUPERSEDES})\b.*", " ", clean, flags=re.I)
    for status, pattern in _WORDS:
        if pattern.search(without_supersedes):
            return status
    return None


def ambiguity(text: str) -> str | None:
    """The part of a status text offering a choice of statuses or holding a template
    placeholder, or None when it states one status (emphasis aside: "`Proposed`,
    `Approved`, ..." offers a choice as much as the words bare)."""
    plain = _EMPHASIS.sub("", text)
    for m in _CHOICE.finditer(plain):
        # words of one decision in force are its progress, no choice: "Accepted /
        # Implemented", "Approved, implemented" (many logs say so)
        if {classify(w) for w in _STATUS_WORDS.findall(m.group(0))} != {"accepted"}:
            return m.group(0)[:60]
    placeholder = _PLACEHOLDER.search(plain)
    return placeholder.group(0)[:60] if placeholder else None


def parse_adr(path: str, text: str) -> Record:
    rec = Record(number=file_number(path))
    try:
        _parse(rec, text)
    except RecursionError:  # pragma: no cover - defensive
        rec.problem = "record too deeply nested to read"
    return rec


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _unfenced(lines: list[str]) -> list[str]:
    """``lines`` with those of fenced code blocks blanked (CommonMark: a run of three or
    more backticks or tildes opens one, a run of the same character at least as long
    closes it): a record showing the format it proposes (MADR's ``status: accepted`` in a
    ```` ```markdown ```` example) states no status, heading or link of its own by it."""
    out: list[str] = []
    fence: str | None = None
    for line in lines:
        m = _FENCE.match(line)
        if m and m.group(1)[0] == "`" and "`" in line[m.end() :]:
            m = None  # (```make``` is inline code: a backtick fence's info has none)
        if fence is None:
            if m:
                fence = m.group(1)
                out.append("")
            else:
                out.append(line)
            continue
        closing = m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)
        if closing and not line.strip().strip(fence[0]):
            fence = None
        out.append("")
    return out


_STATUS_HEADING = re.compile(r"^status\s*(?:[:\-–—.]\s*(.*)|\(.*\))?$", re.I)
# a line that begins with the word and links on: "Superseded: 2019-12-19 by [ADR 14](...)",
# "* Superseded by ADR [14](...)", "Superseded, see [ADR 14](...)"
_HEADER_SUCCESSOR = re.compile(rf"^(?:[-*+]\s*)?(?:{_SUPERSEDED})\b[^\[\n]*\[", re.I)


def _status_sections(body: list[str]) -> tuple[str, str]:
    """The text of the first section headed ``Status`` (``Status: Accepted``, ``Status -
    Accepted``, ``Status (2020-01-01)``, ``Status.``), and of the first headed ``Status``
    and more words (``Status and date``; ``Status Messages / Server Errors`` too, which is
    why it counts only when nothing else states a status)."""
    strict: list[str] | None = None
    loose: list[str] | None = None
    current: list[str] | None = None
    for line in body:
        stripped = line.strip()
        h = _heading(stripped)
        if h is None:
            if current is not None:
                current.append(stripped)
            continue
        current = None
        label = re.sub(r"[*_`]+", "", h[1]).strip()
        if (m := _STATUS_HEADING.match(label)) is not None:
            if strict is None:
                current = strict = [m.group(1) or ""]
        elif re.match(r"^status\b", label, re.I) and loose is None:
            current = loose = []
    strict_text = "\n".join(s for s in strict or () if s).strip()
    loose_text = "\n".join(s for s in loose or () if s).strip()
    # ("## Status codes" with "- 410 Gone: the endpoint is deprecated" states no status)
    first = re.sub(r"^[\W_]+", "", _EMPHASIS.sub("", loose_text)).split()[:1]
    if not first or classify(first[0]) is None:
        loose_text = ""
    return strict_text, loose_text


_TABLE_ROW = re.compile(r"^\|?(.*?)\|(.*)$")
_TABLE_DELIMITER = re.compile(r"^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")


def _header_table_status(body: list[str]) -> str:
    """The status a metadata table under the title states, in a row keyed ``Status``
    (nats-io/nats-architecture-and-design: ``| Metadata | Value |`` then ``| Status |
    Implemented |``); a table further down (``| Status | Meaning |`` of an API) is the
    record's subject, not its metadata, and a header row names a column, not a status,
    unless the table is a two-column one whose header row is itself the status row (many
    logs start their metadata table with ``| Status | Accepted |`` then ``|---|---|``, the
    header a Markdown table requires)."""
    seen_title = False
    for i, line in enumerate(body):
        stripped = line.strip()
        if _heading(stripped):
            if seen_title:
                break
            seen_title = True
            continue
        m = _TABLE_ROW.match(stripped)
        if m is None or _EMPHASIS.sub("", m.group(1)).strip().lower() != "status":
            continue
        following = body[i + 1].strip() if i + 1 < len(body) else ""
        if _TABLE_DELIMITER.match(following):
            cells = m.group(2).strip().rstrip("|").split("|")
            value = _EMPHASIS.sub("", cells[0]).strip()
            if len(cells) == 1 and classify(value) is not None and ambiguity(value) is None:
                return value
            continue
        return _EMPHASIS.sub("", m.group(2).split("|", 1)[0]).strip()
    return ""


def _status_line(lines: list[str]) -> str:
    """The status the first ``Status: ...`` line (``* Status:``, ``**Status:**``) states."""
    for line in lines:
        plain = re.sub(r"[*_`]+", "", line).strip()
        m = re.match(r"^(?:[-*+]\s*)?status\s*:\s*(.+)$", plain, re.I)
        if m:
            return m.group(1).strip()
    return ""


def _header_fences(raw: list[str], body: list[str]) -> list[str]:
    """The lines of the fenced blocks between a record's title and its first section
    (``body`` is ``raw`` with fenced blocks blanked): its metadata when the log keeps it in
    a code block (get10101/itchysats' ``XYZ-template.md``: ```` ``` ```` then ``Author:``,
    ``Date:``, ``Status: Active``); a fenced block further down is an example."""
    out: list[str] = []
    seen_title = False
    for line, kept in zip(raw, body, strict=True):
        if _heading(kept.strip()):
            if seen_title:
                break
            seen_title = True
        elif kept != line:
            out.append(line)
    return out


def _header_successors(body: list[str]) -> list[tuple[str, ...]]:
    """The successors a superseded record whose status names none links between its title
    (a level-1 heading) and its first section, on a line beginning "Superseded"
    (alphagov/content-publisher's 0006: ``Superseded: 2019-12-19 by [ADR 14](0014-....md)``
    above ``## Status``); a line that only mentions what was replaced names none."""
    for line in body:
        h = _heading(line.strip())
        if h:
            if h[0] == 1:
                continue  # the title
            break
        plain = _EMPHASIS.sub("", _strip_decoration(line)).strip()
        if _HEADER_SUCCESSOR.match(plain):
            return _ref_groups(plain, _SUPERSEDED)
    return []


def _parse(rec: Record, text: str) -> None:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    front, start = _front_matter(lines)
    body = _unfenced(lines[start:])
    # (only the status's own lines: another key's slip, ``deciders: @alice``, is no YAML
    # either, but leaves the status as clear as it was)
    broken = None
    if "status" in front:
        at, block = _status_block(lines[1 : start - 1])
        broken = _yaml_error(block, at)

    # title: the first heading (level 1 preferred), else front matter
    title_line = None
    for level in (1, 2):
        for line in body:
            h = _heading(line.strip())
            if h and h[0] == level and h[1]:
                title_line = h[1]
                break
        if title_line:
            break
    if title_line is None and front.get("title"):
        title_line = front["title"]
    if title_line:
        title_line = _plain_title(title_line).strip()
        m = _TITLE_NUM.match(title_line)
        if m:
            if rec.number is None:
                rec.number = int(m.group(1))
            title_line = m.group(2).strip()
        title_line = title_line.strip(" :-–—")
        rec.title = title_line or None

    # status text: front matter > a metadata table's "| Status |" row under the title >
    # "## Status" section > "Status:" line
    status_text = ""
    if front.get("status"):
        status_text = front["status"]
    if not status_text:
        status_text = _header_table_status(body)
    loose = ""  # a section headed "Status" and more words: the status when nothing else is
    if not status_text:
        status_text, loose = _status_sections(body)
    if not status_text:
        status_text = _status_line(body) or _status_line(_header_fences(lines[start:], body))
    if not status_text and loose:
        status_text = loose
    rec.status_text = status_text[:500]
    if broken is not None:
        rec.problem = f"front matter is not YAML ({broken}); its status is not read"
        return
    if not status_text:
        rec.problem = "no status found"
        return
    rec.status = classify(status_text)
    clean = _strip_decoration(status_text)
    guidance = ambiguity(clean)
    if guidance is not None:
        rec.status = None
        rec.problem = f"ambiguous status {guidance!r} (template guidance left in?); skipped"
        return
    rec.successor_refs = _ref_groups(clean, _SUPERSEDED)
    if rec.status == "superseded" and not rec.successor_refs:
        rec.successor_refs = _header_successors(body)
    rec.predecessor_refs = _ref_groups(clean, _SUPERSEDES)
    rec.superseded_by = [ref for group in rec.successor_refs for ref in group]
    rec.supersedes = [ref for group in rec.predecessor_refs for ref in group]
    if rec.status is None:
        first = status_text.splitlines()[0][:60]
        rec.problem = f"status {first!r} not understood"
