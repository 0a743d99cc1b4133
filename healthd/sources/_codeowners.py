"""CODEOWNERS: pattern → sorted owners. Pure; never raises on any text.

GitHub reads the first of ``.github/CODEOWNERS``, ``CODEOWNERS``, ``docs/CODEOWNERS``; a
later line for the same pattern wins; a pattern with no owners leaves it unowned (no fact);
a line holding a token that is no owner (``@org/team,``, ``team``, ``!@user``) or a pattern
with a ``[ ]`` range (which GitHub documents it does not read, and reports as an error) is
skipped whole, as GitHub documents it skips a line of invalid syntax. GitLab section headers
(``[Section]``, ``^[Optional]``) are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from healthd.errors import quote
from healthd.people import Person

#: Where GitHub looks, in its order of precedence.
LOCATIONS: tuple[str, ...] = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")

_OWNER = re.compile(r"^(@[A-Za-z0-9][\w.-]*(/[\w.-]+)?|[^@\s]+@[^@\s]+\.[^@\s]+)$")
_SECTION = re.compile(r"^\^?\[[^\]]*\]")


def _split(line: str) -> list[str]:
    """Whitespace-separated tokens, honouring backslash escapes (``\\ `` and ``\\#``)."""
    if "\\" not in line and "#" not in line:
        return line.split()
    tokens: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line):
            cur.append(line[i + 1])
            i += 2
            continue
        if ch == "#" and not cur:  # a comment starts a token: rest of the line is comment
            break
        if ch.isspace():
            if cur:
                tokens.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
        i += 1
    if cur:
        tokens.append("".join(cur))
    return tokens


def _ranged(line: str) -> bool:
    """Whether the line's pattern, as written, holds a character range (``*.[ch]``): a
    bracket not escaped. ``\\[org\\]`` (a Next.js route directory) is a literal name, which
    GitHub reads; it asks for the escape when a line holds a bare one."""
    i = 0
    while i < len(line) and not line[i].isspace():
        if line[i] == "\\":
            i += 2
            continue
        if line[i] in "[]":
            return True
        i += 1
    return False


def parse_codeowners(text: str, rejected: list[tuple[int, str]] | None = None) -> dict[str, str]:
    """{pattern: "owner1 owner2"} (owners sorted, case kept, duplicates in any case dropped:
    a login, a team and an e-mail are one account whatever their case). A line
    with a token that is not an owner (``@org/team,``, ``team``, ``!@user``) or a pattern
    with a ``[ ]`` range is skipped, as GitHub skips it (an earlier line for its pattern
    stands); each such token is added to ``rejected`` as (line number, what is wrong with
    it) when given."""
    rules: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#") or _SECTION.match(line):
            continue
        tokens = _split(line)
        if not tokens:
            continue
        pattern, rest = tokens[0], tokens[1:]
        invalid = [t for t in rest if not _OWNER.match(t)]
        ranged = _ranged(line)
        if invalid or ranged:
            if rejected is not None:
                if ranged:
                    what = "holds a [ ] range, which GitHub does not read"
                    rejected.append((number, f"pattern {quote(pattern)} {what}"))
                rejected.extend(
                    (number, f"owner {quote(t)} is not @user, @org/team or an email")
                    for t in invalid
                )
            continue
        owners = sorted({owner.lower(): owner for owner in reversed(rest)}.values())
        rules.pop(pattern, None)  # keep the file order of the winning line
        if owners:
            rules[pattern] = " ".join(owners)
    return rules


def same_owners(one: str, other: str) -> bool:
    """Whether two owner values name the same owners, in whatever case each is written."""
    return sorted(one.lower().split()) == sorted(other.lower().split())


def owner_people(rules: Mapping[str, str]) -> list[Person]:
    """Each owner of ``rules`` (:func:`parse_codeowners`) as identity data for the reader: a
    ``@handle`` as a handle, an e-mail as an e-mail (a team ``@org/team`` names no person)."""
    owners = {owner for value in rules.values() for owner in value.split()}
    return [
        Person(emails=(owner,)) if not owner.startswith("@") else Person(owner)
        for owner in sorted(owners)
        if "/" not in owner
    ]
