"""The default reader: deterministic, rule-based, nothing outside the package (its rules:
:mod:`._default_rules`, and the people's spellings, :mod:`.aliases`, imported when first
needed, so a replay whose memory serves no text to read does not compile their expressions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

from healthd.model import FactKey
from healthd.reading import Reading, register_reader

if TYPE_CHECKING:
    from healthd.reading.aliases import PeopleIndex, PeopleTable

NAME = "default"
VERSION = "9"


@dataclass(frozen=True)
class DefaultReader:
    name: str = NAME
    version: str = VERSION
    # How the sources name people (:func:`.aliases.people_table`): a value ``@klee`` is
    # also named "Kim Lee" or "kim.lee@acme.io" where the sources say so.
    people: PeopleTable = ()

    @property
    def label(self) -> str:
        """``default-9``; with people, their digest: ``default-9:people=<12 hex>``."""
        if not self.people:
            return f"{self.name}-{self.version}"
        from healthd.reading.aliases import people_digest

        return f"{self.name}-{self.version}:people={people_digest(self.people)}"

    @cached_property
    def _people_index(self) -> PeopleIndex:
        from healthd.reading.aliases import people_index

        return people_index(self.people)

    def with_people(self, table: PeopleTable) -> DefaultReader:
        """This reader naming people as ``table`` does (:func:`healthd.reading.with_people`)."""
        return replace(self, people=table)

    def read(self, text: str, key: FactKey, values: Sequence[str]) -> Reading:
        from healthd.reading._default_rules import read

        return read(text, key, values, self._people_index)


@register_reader(NAME)
def default_reader(options: Mapping[str, str]) -> DefaultReader:
    if options:
        from healthd.errors import ReaderError

        raise ReaderError(f"reader 'default' takes no options, got {sorted(options)}")
    return DefaultReader()
