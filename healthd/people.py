"""A source's identity record (:class:`Person`), apart from :mod:`healthd.reading` (where
:mod:`healthd.reading.aliases` makes people tables of them) so that a source that gives
people (a `git` source's CODEOWNERS) is pulled without importing the readers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Person:
    """One source's identity record: a handle or login (with or without ``@``), the names
    it gives (a display name) and the e-mails."""

    handle: str = ""
    names: tuple[str, ...] = ()
    emails: tuple[str, ...] = ()
