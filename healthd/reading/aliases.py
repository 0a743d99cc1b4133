"""How texts name what a key is about: alias rules as data, read by :mod:`._match`.

``PACKAGES``: the usual names of a dependency beside its key's name (a module path, a
package name), lower case. A module path is also named by its last one or two segments, a
Go module's major-version suffix dropped (``github.com/jackc/pgx/v5``: ``pgx/v5``,
``jackc/pgx``, ``pgx``), an npm scope by the package after it (``@aws-sdk/client-s3``:
``client-s3``, ``aws-sdk/client-s3``); those are derived, not listed.

``GENERIC``: words that stand where a subject would but name none ("the user", "the team",
"it"): a clause whose only candidate subject is one of them is not about another subject.

``OWNER_NOUNS``: the nouns that follow a name to make a subject of it ("the search
service", "the inventory DB").

``Person`` and :func:`people_table`: the ways texts name a person, from the sources'
identity data (a CODEOWNERS ``@handle`` or e-mail, a GitHub login, a Backstage User's name
with its ``profile.displayName`` and ``profile.email``): records that share a handle or an
e-mail are one person (a shared display name is not: it names none of a key's values it
would name two of), so "Kim Lee (@klee) owns checkout" and "kim.lee@acme.io owns checkout" name a
key's value ``klee`` or ``@klee``. An e-mail is also named by its local part as a name
("kim.lee" as "Kim Lee"), and GitHub's noreply address by its login
(``583231+octocat@users.noreply.github.com`` is ``@octocat``); derived, not listed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping

from healthd.people import Person

PACKAGES: dict[str, tuple[str, ...]] = {
    "postgres": ("postgresql", "pg", "psql", "postgre"),
    "postgresql": ("postgres", "pg", "psql"),
    "node": ("node.js", "nodejs"),
    "react": ("reactjs", "react.js"),
    "github.com/stretchr/testify": ("testify",),
    "github.com/spf13/cobra": ("cobra",),
    "github.com/jackc/pgx/v5": ("pgx", "pgx/v5"),
    "@aws-sdk/client-s3": ("client-s3", "aws sdk s3 client", "s3 client", "aws-sdk s3"),
    "django": ("django",),
}

GENERIC = frozenset(
    [
        "i",
        "we",
        "you",
        "he",
        "she",
        "it",
        "they",
        "this",
        "that",
        "these",
        "those",
        "there",
        "who",
        "what",
        "user",
        "users",
        "the-user",
        "team",
        "our-team",
        "the-team",
        "people",
        "everyone",
        "someone",
        "nobody",
        "project",
        "the-project",
        "company",
        "org",
        "service",
        "the-service",
        "app",
        "the-app",
        "system",
        "repo",
        "codebase",
        "stack",
        "everything",
        "nothing",
        "one",
        "which",
        "whom",
        "whose",
        "where",
    ]
)

OWNER_NOUNS = (
    "service",
    "services",
    "api",
    "svc",
    "db",
    "database",
    "worker",
    "repo",
    "repository",
    "app",
    "pipeline",
    "job",
    "jobs",
    "site",
    "portal",
    "tool",
    "layer",
    "module",
    "team",
    "exporter",
    "scheduler",
    "limiter",
    "ui",
    "cli",
    "frontend",
    "backend",
    "cluster",
)


#: Each person's spellings, lower case, a handle without its ``@``.
PeopleTable = tuple[tuple[str, ...], ...]

_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def spelling(name: str) -> str:
    """How a table keys a spelling: lower case, a handle's ``@`` dropped, spaces single.
    The dot "İ" lowers to beside its "i" is dropped: texts write "i" (or "İ", which a
    pattern ignoring case reads as "i")."""
    name = " ".join(name.split()).lower().replace("i\u0307", "i")
    return name if _EMAIL.fullmatch(name) else name.lstrip("@")


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[\s._-]+", name) if w]


#: Scripts that write a full name without a space between its parts: Han, kana, Hangul.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _full_name(name: str) -> bool:
    """A name of two words or more ("Kim Lee"), or of two characters or more of a script
    that writes none apart ("王小明", "김민수"): not a first name alone ("Will")."""
    words = _words(name)
    return len(words) > 1 or (len(words) == 1 and len(_UNSPACED.findall(words[0])) > 1)


def email_name(email: str) -> str:
    """An e-mail's local part as a name: ``kim.lee@acme.io`` is "kim lee"; "" for one that
    is a single word (``klee@acme.io`` is named by the handle ``klee`` already)."""
    local = email.split("@", 1)[0]
    words = [w for w in re.split(r"[._+-]+", local) if w and not w.isdigit()]
    return " ".join(words).lower() if len(words) > 1 else ""


#: GitHub's noreply address of a login: ``ID+login@users.noreply.github.com``, before July
#: 2017 ``login@users.noreply.github.com`` (a bot's login ends ``[bot]``).
_NOREPLY = re.compile(
    r"(?:\d+\+)?([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\[bot\])?)@users\.noreply\.github\.com"
)


def noreply_login(email: str) -> str:
    """The GitHub login a noreply address is (``583231+octocat@users.noreply.github.com``:
    ``octocat``), else ""."""
    found = _NOREPLY.fullmatch(spelling(email))
    return found.group(1) if found else ""


def people_table(people: Iterable[Person]) -> PeopleTable:
    """The people in ``people``, records sharing a handle or an e-mail merged into one (a
    Backstage User ``klee`` with e-mail ``kim.lee@acme.io`` and a CODEOWNERS owner of that
    e-mail are one person); each person's spellings sorted. A name (a display name, an
    e-mail's local part) identifies nobody: two Users "John Smith" stay two people, each
    with the name (the reader reads it for neither where a key holds both: one person of
    two sources, a Backstage User and a Jira accountId that hides its e-mail, is still
    named by it where the key holds them alone); a one-word name ("Will", "A"; not
    "王小明", its script writing no space between family and given name) is no spelling of
    a person, as a first name is not."""
    groups: dict[int, tuple[set[str], set[str]]] = {}  # (handles and e-mails, names)
    group_of: dict[str, int] = {}  # a handle or an e-mail → its group
    for number, person in enumerate(people):
        ids = {spelling(n) for n in (person.handle, *person.emails) if n}
        ids |= {noreply_login(e) for e in person.emails} - {""}
        names = {spelling(n) for n in person.names if _full_name(n)}
        names |= {email_name(e) for e in person.emails if email_name(e)}
        if not ids and not names:
            continue
        for joined in {group_of[i] for i in ids if i in group_of}:
            more_ids, more_names = groups.pop(joined)
            ids |= more_ids
            names |= more_names
        groups[number] = (ids, names)
        group_of.update(dict.fromkeys(ids, number))
    return tuple(sorted(tuple(sorted(ids | names)) for ids, names in groups.values()))


#: A Backstage entity reference to a User, as the catalog writes an owner that is not a
#: Group: ``user:klee``, ``user:default/klee`` (``[kind:][namespace/]name``).
_USER_REF = re.compile(r"user:(?:([\w.-]+)/)?([\w.-]+)", re.IGNORECASE)


#: Each spelling of a people table → the people (groups) it is a spelling of.
PeopleIndex = Mapping[str, tuple[tuple[str, ...], ...]]


def people_index(table: PeopleTable) -> PeopleIndex:
    """``table`` looked up by spelling (what :func:`person_aliases` reads)."""
    index: dict[str, tuple[tuple[str, ...], ...]] = {}
    for group in table:
        for each in group:
            index[each] = (*index.get(each, ()), group)
    return index


def person_aliases(value: str, index: PeopleIndex) -> tuple[str, ...]:
    """The other spellings of the person ``value`` names (a handle, login, e-mail or a
    Backstage ``user:`` reference), longest first; an e-mail's local part as a name even
    when the table does not know it."""
    key = spelling(value)
    user_ref = _USER_REF.fullmatch(key)
    handle = ""  # a User's handle: its name, ``ns/name`` outside the default namespace
    if user_ref:
        namespace, name = user_ref.group(1) or "default", user_ref.group(2)
        handle = name if namespace == "default" else f"{namespace}/{name}"
    found: set[str] = set()
    for spelt in {key, handle} - {""}:
        for group in index.get(spelt, ()):
            found.update(group)
    if user_ref and found:
        found |= {handle, f"user:{namespace}/{name}"}  # "klee owns it"
    if _EMAIL.fullmatch(key) and email_name(key):
        found.add(email_name(key))
    if noreply_login(key):
        found.add(noreply_login(key))
    found.discard(key)
    return tuple(sorted(found, key=lambda a: (-len(a), a)))


def naming_people(table: PeopleTable) -> PeopleTable:
    """The people of ``table`` whose spellings name them beyond what is derived anyway: a
    lone handle or login, or an e-mail with only its local part as a name, adds nothing to
    what a text is read for, and is left out (so the reader, and its label, change only when
    the sources tie a handle to a name or an e-mail)."""
    kept = []
    for group in table:
        emails = [s for s in group if _EMAIL.fullmatch(s)]
        derived = set(emails) | {email_name(e) for e in emails if email_name(e)}
        if len(group) > 1 and not (len(emails) == 1 and set(group) <= derived):
            kept.append(group)
    return tuple(kept)


def people_digest(table: PeopleTable) -> str:
    """A short digest of ``table``: what a reader's label carries, so a run that reads with
    other identity data is a visible re-baseline."""
    text = json.dumps([list(g) for g in table], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]
