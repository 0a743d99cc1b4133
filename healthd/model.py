"""The domain model: facts, change events, probes and answers. Pure data, no I/O."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, TypeVar

from healthd.errors import TimelineError

Domain = Literal["tech", "ownership", "decision", "requirement"]
DOMAINS: tuple[Domain, ...] = ("tech", "ownership", "decision", "requirement")

EventType = Literal["added", "revised", "invalidated", "revalidated"]
EVENT_TYPES: tuple[EventType, ...] = ("added", "revised", "invalidated", "revalidated")

Status = Literal["current", "superseded", "invalidated", "unknown"]

#: Flags a memory may put on a retrieved fact.
HISTORICAL = "historical"
SOFT_EXPIRED = "soft_expired"
#: Put by healthd on a served record written under another retrieval fingerprint.
RETRIEVAL_CHANGED = "retrieval_changed"
#: Put by healthd on a value read from a served item's text that its key has never held
#: (the reader's ``other``): a fact the memory invented, scored as one that is not current.
INVENTED = "invented"

#: Event metadata key by which a source declares a key multi-valued.
CARDINALITY = "cardinality"
#: Bumped whenever a change gives what a replay stored other numbers or other probe ids than
#: a replay from scratch would (truth's semantics, probe ids, scoring): a daemon holding such
#: a replay resets its shadows and replays its events once.
MEASUREMENT_REVISION = 3
MULTI = "multi"

_EMPTY: Mapping[str, str] = MappingProxyType({})


class FactKey(NamedTuple):
    """What a fact is about: one question has one key."""

    subject: str
    predicate: str

    def __str__(self) -> str:
        return f"{self.subject} {self.predicate}"


#: ``FactKey(subject, predicate)`` without the Python frame of a named tuple's ``__new__``
#: (a key is built several times an event; a third less time each).
_new_key = tuple.__new__

_Frozen = TypeVar("_Frozen")


class _Factory:
    """The default of an argument whose default value a factory makes on each call."""

    def __repr__(self) -> str:
        return "<factory>"  # (as dataclass shows it)


_FACTORY: Any = _Factory()


def stored_by_slot(cls: type[_Frozen]) -> type[_Frozen]:
    """``cls``, a frozen dataclass with slots, with an ``__init__`` taking the same
    arguments and storing each through its slot's own descriptor. The one dataclass writes
    stores through ``object.__setattr__``, which looks each field's name up again on every
    call: a fact is made in 40% less time this way, and there are several an event."""
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY}
    params, body = [], []
    for each in fields(cls):  # type: ignore[arg-type]
        name = each.name
        namespace[f"_set_{name}"] = vars(cls)[name].__set__
        if each.default is not MISSING:
            namespace[f"_default_{name}"] = each.default
            params.append(f"{name}=_default_{name}")
        elif each.default_factory is not MISSING:
            namespace[f"_make_{name}"] = each.default_factory
            params.append(f"{name}=_FACTORY")
            body.append(f"    if {name} is _FACTORY:\n        {name} = _make_{name}()")
        else:
            params.append(name)
        body.append(f"    _set_{name}(self, {name})")
    if issubclass(cls, _KeyKept):
        namespace.update(_set_key=vars(_KeyKept)["key"].__set__, _new_key=_new_key, FactKey=FactKey)
        body.append("    _set_key(self, _new_key(FactKey, (subject, predicate)))")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body), namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = vars(cls)["__init__"].__annotations__
    setattr(cls, "__init__", init)  # noqa: B010 (a class's method, which mypy would refuse)
    return cls


class _KeyKept:
    """The key of a fact or a probe, made with it (:func:`stored_by_slot`) and kept in a
    slot outside the dataclass's fields: a fact's key is read several times an event, a
    probe's at each score, and a slot is read without the call a property makes."""

    __slots__ = ("key",)
    key: FactKey
    subject: str
    predicate: str

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # a copy or an unpickled one is made by __init__ too, so it has its key
        return type(self), tuple(getattr(self, each.name) for each in fields(self))  # type: ignore[arg-type]


@stored_by_slot
@dataclass(frozen=True, slots=True)
class Fact(_KeyKept):
    subject: str
    predicate: str
    value: str
    domain: Domain


@stored_by_slot
@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One change in the world: when it became true, not when it was found."""

    id: str
    type: EventType
    timestamp: datetime
    source: str
    fact: Fact
    previous: Fact | None = None
    reason: str | None = None
    depends_on: tuple[FactKey, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        if self.type not in EVENT_TYPES:
            raise TimelineError(
                f"unknown type {self.type!r} (expected one of {', '.join(EVENT_TYPES)})",
                origin=f"event {self.id!r}",
                field="type",
            )
        if self.type == "revised" and self.previous is None:
            raise TimelineError(
                "missing (required on a revised event)",
                origin=f"event {self.id!r}",
                field="previous",
            )
        if self.type != "revised" and self.previous is not None:
            raise TimelineError(
                f"only a revised event has a previous fact, this one is {self.type!r}",
                origin=f"event {self.id!r}",
                field="previous",
            )

    @property
    def multi_valued(self) -> bool:
        return self.metadata.get(CARDINALITY) == MULTI

    @property
    def keys(self) -> tuple[FactKey, ...]:
        """Every key this event touches directly (a revision may move a fact to a new key)."""
        key, previous = self.fact.key, self.previous
        if previous is not None and (previous.subject, previous.predicate) != key:
            return (previous.key, key)
        return (key,)


def is_sweep(event: ChangeEvent) -> bool:
    """A revalidation a source stamps on its own schedule, not a change seen in the world."""
    return event.type == "revalidated" and event.metadata.get("revalidation") == "sweep"


#: A code point of the surrogate range: alone in a str it is no Unicode text (a UTF-8
#: encoder refuses it). A JSON escape such as ``"\\udcff"`` makes one, and so does a path git
#: gives in bytes that are not UTF-8 (decoded with ``surrogateescape``).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte surrogateescape kept: shown as Python shows bytes
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def repaired(text: str) -> str:
    """``text`` with each lone surrogate written out as an escape: ``caf\\udce9`` (the
    Latin-1 byte 0xE9 of a name git gave) becomes the text ``caf\\xe9``, ``\\ud800`` the text
    ``\\ud800``. Two names that differ stay two names."""
    return text if text.isascii() else _LONE_SURROGATE.sub(_escaped, text)


def not_text(event: ChangeEvent) -> tuple[str, str] | None:
    """The field, and what is wrong, when one of ``event``'s strings (metadata included)
    holds a lone surrogate; None when every string is text."""
    found = _first_lone_surrogate(event)
    if found is None:
        return None
    name, _, char = found
    return name, (
        f"holds a lone surrogate ({char!r}), which is not Unicode text: "
        "a UTF-8 store cannot keep it"
    )


def _first_lone_surrogate(event: ChangeEvent) -> tuple[str, str, str] | None:
    """The first field holding a lone surrogate: its name, its text and the surrogate."""
    for name, text in _non_ascii(event):
        found = _LONE_SURROGATE.search(text)
        if found is not None:
            return name, text, found.group()
    return None


def with_strings(event: ChangeEvent, change: Callable[[str], str]) -> ChangeEvent:
    """``event`` with ``change`` applied to each of its strings: id, source, both facts'
    subject, predicate and value, reason, dependencies, metadata keys and values."""

    def changed(fact: Fact) -> Fact:
        return Fact(change(fact.subject), change(fact.predicate), change(fact.value), fact.domain)

    return ChangeEvent(
        id=change(event.id),
        type=event.type,
        timestamp=event.timestamp,
        source=change(event.source),
        fact=changed(event.fact),
        previous=None if event.previous is None else changed(event.previous),
        reason=None if event.reason is None else change(event.reason),
        depends_on=tuple(FactKey(change(d.subject), change(d.predicate)) for d in event.depends_on),
        metadata={change(k): change(v) for k, v in event.metadata.items()},
    )


def as_text(event: ChangeEvent) -> tuple[ChangeEvent, str | None]:
    """``event`` with its strings :func:`repaired` (ids, facts, reason, depends_on,
    metadata), and what was repaired first ("fact.subject 'caf\\udce9'"), None when nothing
    was. The same text is repaired the same way in every event, so the events of one fact
    still pair up, and two texts stay two: what a source read from bytes that are not UTF-8
    is kept under a name that is text."""
    found = _first_lone_surrogate(event)
    if found is None:
        return event, None
    return with_strings(event, repaired), f"{found[0]} {found[1]!r}"


def not_text_note(replaced: str) -> str:
    """The skipped-input line for what :func:`as_text` replaced: one per distinct text, so a
    fact observed again (a revalidation sweep) is not reported again."""
    return (
        f"{replaced} is not Unicode text (a name git gives in bytes that are not UTF-8, or an "
        "escape such as \\udcff): read with each lone surrogate written as its escape"
    )


def _non_ascii(event: ChangeEvent) -> Iterator[tuple[str, str]]:
    """Each string of ``event`` that is not ASCII (only such a one can hold a surrogate),
    named by its field; nothing, at the cost of a scan of each, for most events."""
    fact, previous = event.fact, event.previous
    if (
        event.id.isascii()
        and event.source.isascii()
        and fact.subject.isascii()
        and fact.predicate.isascii()
        and fact.value.isascii()
        and (previous is None or _ascii_fact(previous))
        and (event.reason is None or event.reason.isascii())
        and all(dep.subject.isascii() and dep.predicate.isascii() for dep in event.depends_on)
        and all(k.isascii() and v.isascii() for k, v in event.metadata.items())
    ):
        return
    strings = [("id", event.id), ("source", event.source)]
    for name, each in (("fact", fact), ("previous", previous)):
        if each is not None:
            strings += [
                (f"{name}.subject", each.subject),
                (f"{name}.predicate", each.predicate),
                (f"{name}.value", each.value),
            ]
    if event.reason is not None:
        strings.append(("reason", event.reason))
    for i, dep in enumerate(event.depends_on):
        strings += [
            (f"depends_on[{i}].subject", dep.subject),
            (f"depends_on[{i}].predicate", dep.predicate),
        ]
    for k, v in event.metadata.items():
        strings += [("metadata", k), (f"metadata.{k}", v)]
    yield from ((name, text) for name, text in strings if not text.isascii())


def _ascii_fact(fact: Fact) -> bool:
    return fact.subject.isascii() and fact.predicate.isascii() and fact.value.isascii()


@stored_by_slot
@dataclass(frozen=True, slots=True)
class Probe(_KeyKept):
    """A natural-language question about one key."""

    id: str
    question: str
    subject: str
    predicate: str
    domain: Domain
    multi_valued: bool = False
    origin: Literal["generated", "file"] = "generated"


@stored_by_slot
@dataclass(frozen=True, slots=True)
class RetrievedFact:
    """A fact a memory returned, with the record's own bookkeeping."""

    subject: str
    predicate: str
    value: str
    domain: Domain
    record_id: str
    written_at: datetime
    validated_at: datetime | None = None
    flags: frozenset[str] = frozenset()

    @property
    def key(self) -> FactKey:
        return _new_key(FactKey, (self.subject, self.predicate))

    @property
    def fact(self) -> Fact:
        return Fact(self.subject, self.predicate, self.value, self.domain)

    @property
    def last_validated(self) -> datetime:
        return self.validated_at if self.validated_at is not None else self.written_at

    @property
    def historical(self) -> bool:
        return HISTORICAL in self.flags


@stored_by_slot
@dataclass(frozen=True, slots=True)
class ServedItem:
    """What a memory served for a probe, as the assistant would read it: its text, with the
    record's bookkeeping where the memory keeps it. A reader turns it into facts."""

    text: str
    record_id: str
    written_at: datetime | None = None
    validated_at: datetime | None = None
    metadata: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    flags: frozenset[str] = frozenset()


@stored_by_slot
@dataclass(frozen=True, slots=True)
class Answer:
    """A memory's answer: structured facts (a memory that keeps them), served items to be
    read (a memory that serves text), or both."""

    probe_id: str
    facts: tuple[RetrievedFact, ...] = ()
    items: tuple[ServedItem, ...] = ()
