"""Readers: what a served item's text says about a probe's key.

A memory serves text; the assistant reads text. A reader decides, for one key and the values
the key has held in truth, which values an item asserts, which it negates or presents as
past, and (neither) that it could not read the item at all. Readers are pluggable by name
(``default`` is deterministic and needs nothing outside the package) and versioned: the
reader's label is part of the probe set's version, so a changed reader is a visible
re-baseline, never a silent drift in the metrics. Pure: no I/O here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from healthd.errors import ReaderError
from healthd.model import INVENTED, Domain, FactKey, RetrievedFact, ServedItem
from healthd.people import Person

if TYPE_CHECKING:
    from healthd.reading.aliases import PeopleTable


@dataclass(frozen=True, slots=True)
class Reading:
    """What one text says about one key: values asserted (current), values negated or
    presented as past, and ``other``: values the text asserts for the key that are not among
    those the key has held (an invented or garbled value, as the text spells it). None of the
    three: the text could not be read for the key; ``irrelevant`` besides where it speaks
    only of another subject (retrieved beside the answer, not a fact about the key), as
    opposed to a hedge, a plan or a text naming none of the values."""

    asserted: tuple[str, ...] = ()
    negated: tuple[str, ...] = ()
    other: tuple[str, ...] = ()
    irrelevant: bool = False

    @property
    def unread(self) -> bool:
        return not self.asserted and not self.negated and not self.other


@runtime_checkable
class Reader(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def label(self) -> str:
        """``name-version`` (and the model id, for a judge): what a metric label shows."""

    def read(self, text: str, key: FactKey, values: Sequence[str]) -> Reading:
        """Which of ``values`` (every value ``key`` has held) ``text`` asserts or negates."""


@dataclass(frozen=True, slots=True)
class ItemReading:
    """One served item and how it was read for a probe's key."""

    item: ServedItem
    reading: Reading
    metadata_value: str | None = None  # the value healthd's metadata on the item claims

    @property
    def mismatch(self) -> bool:
        """The item's metadata names a value its text does not assert (the text wins)."""
        return self.metadata_value is not None and self.metadata_value not in self.reading.asserted

    def read_as(self) -> dict[str, object]:
        """The JSON report's ``read_as``; ``irrelevant`` only where true (an item about
        another subject), so a report with none reads as it always did."""
        return {
            "asserted": list(self.reading.asserted),
            "negated": list(self.reading.negated),
            "unread": self.reading.unread,
            "mismatch": self.mismatch,
            "other": list(self.reading.other),
            **({"irrelevant": True} if self.reading.irrelevant else {}),
        }


# Metadata keys by which healthd's own adapters tag what they wrote (Mem0, AgentCore style).
_META_SUBJECT = ("healthd_subject", "subject")
_META_PREDICATE = ("healthd_predicate", "predicate")
_META_VALUE = ("healthd_value", "value")


def _first(metadata: Mapping[str, str], names: Sequence[str]) -> str | None:
    for name in names:
        value = metadata.get(name)
        if isinstance(value, str):
            return value
    return None


def read_item(reader: Reader, item: ServedItem, key: FactKey, values: Sequence[str]) -> ItemReading:
    """Read one served item for ``key``. An item with no text cannot be scored at all: that
    is the memory's bad output, named, not an item silently dropped."""
    if not item.text.strip():
        raise ReaderError(f"served item {item.record_id!r} has no text and no fact")
    reading = reader.read(item.text, key, values)
    claimed = None
    if (
        _first(item.metadata, _META_SUBJECT) == key.subject
        and _first(item.metadata, _META_PREDICATE) == key.predicate
    ):
        claimed = _first(item.metadata, _META_VALUE)
    return ItemReading(item, reading, claimed)


# A served item with no write time: never fresh (nothing says when it was last true).
UNKNOWN_TIME = datetime(1970, 1, 1, tzinfo=UTC)


def invented_value(text: str) -> str:
    """An invented value as a fact's value: its spacing collapsed and its case folded, so
    the same invention in two items' spelling ("Elixir", "ELIXIR") is one value."""
    return " ".join(text.split()).casefold()


def read_facts(
    reader: Reader,
    key: FactKey,
    values: Mapping[str, Domain],
    items: Sequence[ServedItem],
    *,
    domain: Domain | None = None,
) -> tuple[tuple[ItemReading, ...], tuple[RetrievedFact, ...]]:
    """Each item read for ``key`` (``values``: every value the key has held, with its
    domain), and the facts they serve: a value an item asserts, as one record of that item,
    and a value it asserts that the key has never held (``other``), as one record flagged
    :data:`~healthd.model.INVENTED`, filed under ``domain`` (the probe's; by default the
    domain of the value the key was given last): truth knows no such value, so its status is
    ``unknown``. A value an item negates or presents as past is not served as current, and
    an item read as nothing serves nothing (both are in the readings, to be shown)."""
    names = list(values)
    readings = tuple(read_item(reader, item, key, names) for item in items)
    if domain is None and names:
        domain = values[names[-1]]
    held: set[str] | None = None  # the key's values as invented ones are spelled
    facts: list[RetrievedFact] = []
    for reading in readings:
        item = reading.item
        written = item.written_at if item.written_at is not None else UNKNOWN_TIME
        for value in reading.reading.asserted:
            facts.append(
                RetrievedFact(
                    key.subject,
                    key.predicate,
                    value,
                    values[value],
                    item.record_id,
                    written,
                    item.validated_at,
                    item.flags,
                )
            )
        if not reading.reading.other or domain is None:
            continue
        if held is None:
            held = {invented_value(v) for v in names}
        invented = dict.fromkeys(invented_value(v) for v in reading.reading.other)
        flags = item.flags | {INVENTED}
        for value in invented:
            if value and value not in held:
                facts.append(
                    RetrievedFact(
                        key.subject,
                        key.predicate,
                        value,
                        domain,
                        item.record_id,
                        written,
                        item.validated_at,
                        flags,
                    )
                )
    return readings, tuple(facts)


class CachedReader:
    """A reader's readings kept, since a reader is a pure function of the text, the key and
    its values: a memory answers a re-asked probe with the same items, read once. Bounded:
    emptied when ``size`` readings are held."""

    def __init__(self, reader: Reader, size: int = 1 << 16) -> None:
        self.reader = reader
        self._size = size
        self._readings: dict[tuple[str, FactKey, tuple[str, ...]], Reading] = {}

    @property
    def name(self) -> str:
        return self.reader.name

    @property
    def version(self) -> str:
        return self.reader.version

    @property
    def label(self) -> str:
        return self.reader.label

    def read(self, text: str, key: FactKey, values: Sequence[str]) -> Reading:
        entry = (text, key, tuple(values))
        reading = self._readings.get(entry)
        if reading is None:
            if len(self._readings) >= self._size:
                self._readings.clear()
            reading = self._readings[entry] = self.reader.read(text, key, values)
        return reading


ReaderFactory = Callable[[Mapping[str, str]], Reader]
_READERS: dict[str, ReaderFactory] = {}


def register_reader(name: str) -> Callable[[ReaderFactory], ReaderFactory]:
    def decorator(factory: ReaderFactory) -> ReaderFactory:
        _READERS[name] = factory
        return factory

    return decorator


def reader_names() -> list[str]:
    _load_builtin()
    return sorted(_READERS)


def build_reader(spec: str = "default") -> Reader:
    """``name`` or ``name:option=value,...``; an unknown name or bad option is one line."""
    name, _, rest = spec.strip().partition(":")
    _load_builtin(name)
    if name not in _READERS:
        raise ReaderError(
            f"reader {spec!r}: unknown reader {name!r}; known: {', '.join(reader_names())}"
        )
    options: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        option, sep, value = part.partition("=")
        if not sep or not option.strip() or not value.strip():
            raise ReaderError(f"reader {spec!r}: option {part!r} is not name=value")
        options[option.strip()] = value.strip()
    return _READERS[name](options)


@runtime_checkable
class ReadsPeople(Protocol):
    """A reader that names people as the sources' identity data does (the default rules,
    and the semantic reader through them)."""

    def with_people(self, table: PeopleTable) -> Reader: ...


def with_people(reader: Reader, people: Iterable[Person]) -> Reader:
    """``reader`` reading a person's handle, display name and e-mail as one, from
    ``people`` (the sources' identity records, :func:`.aliases.people_table`); only the
    people whose records tie spellings together count (:func:`.aliases.naming_people`). A
    reader that takes no identity data (a judge) is returned as it is."""
    if not isinstance(reader, ReadsPeople):
        return reader
    from healthd.reading.aliases import naming_people, people_table

    return reader.with_people(naming_people(people_table(people)))


def versioned(probe_set_version: str, reader: Reader) -> str:
    """The probe set's version with the reader in it (``<hash>+default-9``): a changed reader
    changes the version, and the version says which reader it was."""
    return f"{probe_set_version}+{reader.label}"


_BUILTIN = {
    "default": "healthd.reading.default",
    "llm": "healthd.reading.llm",
    "semantic": "healthd.reading.semantic",
}


def _load_builtin(name: str | None = None) -> None:
    """Import the built-in readers (importing registers one), or only ``name``'s: a run
    with the default reader need not load an HTTP client."""
    for builtin, module in _BUILTIN.items():
        if (name is None or name == builtin) and builtin not in _READERS:
            importlib.import_module(module)
