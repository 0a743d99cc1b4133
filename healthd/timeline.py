"""Timeline JSONL: the interchange format every source produces and `healthd timeline` prints.

Reading is strict: a bad line raises :class:`TimelineError` naming the line and the field;
nothing is skipped silently. A line longer than ``max_line`` characters (default 1 MiB) and
an event dated further in the future than ``not_after`` are refused the same way.
"""

from __future__ import annotations

import json
import marshal
import operator
import re
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO, TextIO

from healthd import _json
from healthd._files import undecodable_line
from healthd._packed import from_micros, to_micros
from healthd.errors import HealthdError, TimelineError
from healthd.model import (
    DOMAINS,
    EVENT_TYPES,
    ChangeEvent,
    Domain,
    Fact,
    FactKey,
    as_text,
    not_text,
    not_text_note,
    with_strings,
)

_EVENT_FIELDS = {
    "id",
    "type",
    "timestamp",
    "source",
    "fact",
    "previous",
    "reason",
    "depends_on",
    "metadata",
}
_FACT_FIELDS = ("subject", "predicate", "value", "domain")
_FACT_FIELD_SET = frozenset(_FACT_FIELDS)
_FACT_VALUES = operator.itemgetter(*_FACT_FIELDS)
_KEY_FIELDS = frozenset({"subject", "predicate"})
_KEY_VALUES = operator.itemgetter("subject", "predicate")
_DOMAIN_NAMED: dict[str, Domain] = {domain: domain for domain in DOMAINS}
DEFAULT_MAX_LINE = 1 << 20
DEFAULT_FUTURE_SKEW = timedelta(days=1)


def format_timestamp(ts: datetime) -> str:
    """UTC ISO 8601 with a trailing Z, microseconds only when present."""
    utc = ts.astimezone(UTC)
    text = utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds")
    return text.replace("+00:00", "Z")


#: The seconds of a time of day given as 60: a leap second (RFC 3339, section 5.7).
_LEAP_SECOND = re.compile(r"[Tt ]\d\d:?\d\d:?(60)(?=[.,+\-]|$)")


def _last_second_utc(ts: datetime) -> bool:
    """Whether ``ts`` (its second 60 read as 59) is 23:59:59 UTC, where a leap second is."""
    try:
        utc = ts.astimezone(UTC)
    except OverflowError:
        return False
    return (utc.hour, utc.minute, utc.second) == (23, 59, 59)


def parse_timestamp(
    value: object, *, field: str = "timestamp", line: int | None = None, origin: str | None = None
) -> datetime:
    """An ISO 8601 timestamp with its offset, in UTC. A leap second (``23:59:60Z``, which
    RFC 3339 allows and Python's datetime cannot hold) is read as the last instant datetime
    holds before the next day, 23:59:59.999999, whatever its fraction: after every instant of
    23:59:59, so its place in the timeline's order is kept (read as 23:59:59, as Java's
    ``Instant.parse`` reads it, it came before an event at 23:59:59.5)."""
    if type(value) is str and value.endswith("Z"):
        # the usual form, read as it stands (datetime reads a Z since Python 3.11); one it
        # refuses (a leap second among them) is read below, for what to say of it
        try:
            return datetime.fromisoformat(value).astimezone(UTC)
        except (ValueError, OverflowError):
            pass
    if not isinstance(value, str) or not value:
        raise TimelineError(
            "expected an ISO 8601 timestamp string", line=line, field=field, origin=origin
        )
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    leap = _LEAP_SECOND.search(text)
    if leap is not None:  # (Python's datetime has no second 60)
        text = f"{text[: leap.start(1)]}59{text[leap.end(1) :]}"
    try:
        ts = datetime.fromisoformat(text)
    except ValueError:
        raise TimelineError(
            f"not an ISO 8601 timestamp: {value!r}", line=line, field=field, origin=origin
        ) from None
    if leap is not None and ts.tzinfo is not None and not _last_second_utc(ts):
        raise TimelineError(
            f"timestamp {value!r} has second 60, a leap second, which is only ever 23:59:60 UTC",
            line=line,
            field=field,
            origin=origin,
        )
    if leap is not None:
        ts = ts.replace(microsecond=999_999)
    if ts.tzinfo is None:
        raise TimelineError(
            f"timestamp {value!r} has no timezone (add Z or an offset)",
            line=line,
            field=field,
            origin=origin,
        )
    try:
        return ts.astimezone(UTC)
    except OverflowError:
        raise TimelineError(
            f"timestamp {value!r} is out of range once converted to UTC",
            line=line,
            field=field,
            origin=origin,
        ) from None


def fact_to_dict(fact: Fact) -> dict[str, str]:
    return {
        "subject": fact.subject,
        "predicate": fact.predicate,
        "value": fact.value,
        "domain": fact.domain,
    }


def event_to_dict(event: ChangeEvent) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": event.id,
        "type": event.type,
        "timestamp": format_timestamp(event.timestamp),
        "source": event.source,
    }
    if event.previous is not None:
        out["previous"] = fact_to_dict(event.previous)
    out["fact"] = fact_to_dict(event.fact)
    if event.reason is not None:
        out["reason"] = event.reason
    out["depends_on"] = [{"subject": k.subject, "predicate": k.predicate} for k in event.depends_on]
    out["metadata"] = dict(event.metadata)
    return out


def dumps_event(event: ChangeEvent) -> str:
    return json.dumps(event_to_dict(event), ensure_ascii=False, separators=(", ", ": "))


#: What each string of an event is cut to when its line would be too long for the reader:
#: a dozen such strings, each escaped at worst (six characters a character), still fit.
_CUT_STRING = 1 << 14


def admitted(
    events: Iterable[ChangeEvent], skipped: list[str], not_after: datetime
) -> list[ChangeEvent]:
    """What of a pull's ``events`` enters the timeline, each as a line can hold it
    (:func:`fitted`): one dated after ``not_after`` (a clock's error; now plus
    max_future_skew) is refused and the others are read on; a string that is not Unicode
    text is escaped. Each is said in ``skipped``, once per distinct line (a fact observed
    again, in a revalidation sweep, is not said again)."""
    said = set(skipped)
    kept = []

    def say(line: str) -> None:
        if line not in said:
            said.add(line)
            skipped.append(line)

    for event in events:
        if event.timestamp > not_after:
            say(
                f"event {event.id!r} refused: timestamp {format_timestamp(event.timestamp)} "
                f"is later than {format_timestamp(not_after)} (now plus max_future_skew)"
            )
            continue
        event, replaced = as_text(event)
        if replaced is not None:
            say(not_text_note(replaced))
        held, cut = fitted(event)
        if cut is not None:
            say(cut)
        if held is not None:
            kept.append(held)
    return kept


def fitted(
    event: ChangeEvent, max_line: int = DEFAULT_MAX_LINE
) -> tuple[ChangeEvent | None, str | None]:
    """``event`` as a timeline line can hold it, and what was cut (None: nothing).

    The reader refuses a line over ``max_line`` characters, so an event a source made of a
    huge text (a heading of a megabyte) could be written but never read again: a daemon
    that stored it could not replay its own events. Such an event keeps its first
    :data:`_CUT_STRING` characters of each string, cut the same way in every event, so the
    events of one fact still pair up; one still too long (thousands of dependencies) is
    refused: None, as is one with a name or value the reader refuses as empty."""
    blank = _blank_field(event)
    if blank is not None:
        return None, f"event {event.id[:80]!r} refused: {blank} is empty"
    fact, previous = event.fact, event.previous
    size = len(event.id) + len(event.source) + len(event.reason or "")
    size += len(fact.subject) + len(fact.predicate) + len(fact.value)
    if previous is not None:
        size += len(previous.subject) + len(previous.predicate) + len(previous.value)
    size += sum(len(k) + len(v) for k, v in event.metadata.items())
    size += sum(len(d.subject) + len(d.predicate) for d in event.depends_on)
    # (a bound: each character escaped at worst, and the line's own names and punctuation)
    if 6 * size + 64 * (len(event.depends_on) + len(event.metadata)) + 1024 < max_line:
        return event, None
    length = len(dumps_event(event))
    if length <= max_line:
        return event, None

    def cut(text: str) -> str:
        if len(text) <= _CUT_STRING:
            return text
        return f"{text[:_CUT_STRING]}… ({len(text) - _CUT_STRING} more characters)"

    shorter = with_strings(event, cut)
    if len(dumps_event(shorter)) > max_line:
        return None, (
            f"event {cut(event.id)[:80]!r} refused: its line would be {length:,} characters, "
            f"over the {max_line:,} a timeline line holds"
        )
    longest = max(
        (event.id, fact.subject, fact.value, event.reason or "", *event.metadata.values()),
        key=len,
    )
    return shorter, (
        f"a text of {len(longest):,} characters ({longest[:40]!r}…) makes a line longer than the {max_line:,} characters a timeline line holds: "
        f"each such text is cut to its first {_CUT_STRING:,} characters"
    )


def _blank_field(event: ChangeEvent) -> str | None:
    """The first field of ``event`` the reader requires text in that is empty or blank."""
    for name, text in (("id", event.id), ("source", event.source)):
        if not text or text.isspace():
            return name
    for where, fact in (("fact", event.fact), ("previous", event.previous)):
        if fact is None:
            continue
        for name, text in (("subject", fact.subject), ("predicate", fact.predicate)):
            if not text or text.isspace():
                return f"{where}.{name}"
        if not fact.value or fact.value.isspace():
            return f"{where}.value"
    for i, dep in enumerate(event.depends_on):
        for name, text in (("subject", dep.subject), ("predicate", dep.predicate)):
            if not text or text.isspace():
                return f"depends_on[{i}].{name}"
    return None


def write_timeline(events: Iterable[ChangeEvent], out: TextIO) -> int:
    count = 0
    for event in events:
        out.write(dumps_event(event))
        out.write("\n")
        count += 1
    return count


class _Shared:
    """Equal values read from different lines, kept once. A long timeline names a few
    subjects, predicates, values, domains and dependencies over and over, and truth and the
    memories keep what each event gave them: one copy of each instead of one per line."""

    __slots__ = ("deps", "facts", "keys", "strings")

    def __init__(self) -> None:
        self.strings: dict[str, str] = {}
        self.keys: dict[FactKey, FactKey] = {}
        self.deps: dict[tuple[FactKey, ...], tuple[FactKey, ...]] = {}
        # each fact checked, by its four fields: a revalidation or a revision's previous
        # fact repeats one read before (two thirds of a project's facts)
        self.facts: dict[tuple[str, ...], Fact] = {}

    def keep_fact(self, fields: tuple[str, ...], fact: Fact) -> Fact:
        """``fact``, kept as the one object for ``fields`` while fewer than
        :data:`_FACTS_KEPT` are."""
        if len(self.facts) < _FACTS_KEPT:
            self.facts[fields] = fact
        return fact

    def string(self, text: str) -> str:
        # interned, so equal names read by separate readers (the daemon's chunks) are one
        # object too; an interned string is freed like any other once nothing holds it
        known = self.strings.get(text)
        return known if known is not None else self.strings.setdefault(text, sys.intern(text))


class _Ctx:
    __slots__ = ("line", "origin")

    def __init__(self, line: int | None, origin: str | None) -> None:
        self.line = line
        self.origin = origin

    def fail(self, message: str, field: str | None = None) -> TimelineError:
        return TimelineError(message, line=self.line, field=field, origin=self.origin)


def _string(obj: dict[str, Any], name: str, ctx: _Ctx, path: str) -> str:
    """``obj[name]``, a string with something besides whitespace; ``path``: where ``obj``
    is, for the error ("" at the top, else a prefix the name is joined to with a dot)."""
    value = obj.get(name, _MISSING)
    # `not value.isspace()`: `value.strip()` without building the stripped copy
    if type(value) is str and value and not value.isspace():
        return value
    field = f"{path}.{name}" if path else name
    if value is _MISSING:
        raise ctx.fail("missing", field)
    if not isinstance(value, str) or not value.strip():
        raise ctx.fail(f"expected a non-empty string, got {value!r}", field)
    return value  # a subclass of str


_MISSING: Any = object()


def _fact(obj: object, ctx: _Ctx, path: str, shared: _Shared) -> Fact:
    if not isinstance(obj, dict):
        raise ctx.fail(f"expected an object, got {type(obj).__name__}", path)
    if not _FACT_FIELD_SET.issuperset(obj):
        raise ctx.fail(f"unknown field(s) {sorted(set(obj) - _FACT_FIELD_SET)}", path)
    fields = _FACT_VALUES(obj) if len(obj) == len(_FACT_FIELDS) else None
    if fields is not None:
        try:
            known = shared.facts.get(fields)
        except TypeError:  # a field no string is (refused below)
            known = None
        if known is not None:
            return known
    subject = _string(obj, "subject", ctx, path)
    predicate = _string(obj, "predicate", ctx, path)
    value = _string(obj, "value", ctx, path)
    name = _string(obj, "domain", ctx, path)
    domain = _DOMAIN_NAMED.get(name)
    if domain is None:
        raise ctx.fail(
            f"unknown domain {name!r}; expected one of {', '.join(DOMAINS)}", f"{path}.domain"
        )
    string = shared.string
    fact = Fact(string(subject), string(predicate), string(value), domain)
    if fields is None:
        return fact
    return shared.keep_fact((fact.subject, fact.predicate, fact.value, domain), fact)


_FACTS_KEPT = 1 << 16  # distinct facts a reading keeps checked (about 10 MiB at most)


def event_from_dict(
    obj: object, *, line: int | None = None, origin: str | None = None
) -> ChangeEvent:
    """Validate one decoded JSON object as a ChangeEvent."""
    return _event_from_dict(obj, _Ctx(line, origin), _Shared())


def _event_from_dict(
    obj: object, ctx: _Ctx, shared: _Shared, *, ascii_only: bool = False
) -> ChangeEvent:
    """``ascii_only``: ``obj`` was decoded from JSON text that is ASCII and holds no ``\\u``
    escape, so each of its strings is ASCII and none can hold a lone surrogate."""
    line, origin = ctx.line, ctx.origin
    if not isinstance(obj, dict):
        raise ctx.fail(f"expected a JSON object, got {type(obj).__name__}")
    if not _EVENT_FIELDS.issuperset(obj):
        raise ctx.fail(f"unknown field(s) {sorted(set(obj) - _EVENT_FIELDS)}")
    event_id = _string(obj, "id", ctx, "")
    kind = _string(obj, "type", ctx, "")
    if kind not in EVENT_TYPES:
        raise ctx.fail(f"unknown type {kind!r}; expected one of {', '.join(EVENT_TYPES)}", "type")
    if "timestamp" not in obj:
        raise ctx.fail("missing", "timestamp")
    timestamp = parse_timestamp(obj["timestamp"], line=line, origin=origin)
    source = _string(obj, "source", ctx, "")
    if "fact" not in obj:
        raise ctx.fail("missing", "fact")
    fact = _fact(obj["fact"], ctx, "fact", shared)
    previous = None
    if kind == "revised":
        if "previous" not in obj:
            raise ctx.fail("missing (required on a revised event)", "previous")
        previous = _fact(obj["previous"], ctx, "previous", shared)
    elif obj.get("previous") is not None:
        raise ctx.fail(
            f"only a revised event has a previous fact, this one is {kind!r}", "previous"
        )
    reason = obj.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ctx.fail(f"expected a string, got {reason!r}", "reason")
    raw_deps = obj.get("depends_on", [])
    if raw_deps is None:
        raw_deps = []
    if not isinstance(raw_deps, list):
        raise ctx.fail("expected a list of {subject, predicate} objects", "depends_on")
    depends_on = _depends_on(raw_deps, ctx, shared)
    raw_meta = obj.get("metadata", {})
    if raw_meta is None:
        raw_meta = {}
    if not isinstance(raw_meta, dict):
        raise ctx.fail("expected an object of string pairs", "metadata")
    for k, v in raw_meta.items():
        if not isinstance(v, str):
            raise ctx.fail(f"expected a string value, got {v!r}", f"metadata.{k}")
    reason = None if reason is None else shared.string(reason)
    # (by position: a class called with keywords has them packed in a dict and matched
    # again, which takes half as long again as building the event)
    event = ChangeEvent(
        event_id, kind, timestamp, source, fact, previous, reason, depends_on, dict(raw_meta)
    )
    problem = None if ascii_only else not_text(event)
    if problem is not None:
        raise ctx.fail(problem[1], problem[0])
    return event


def _depends_on(raw: list[Any], ctx: _Ctx, shared: _Shared) -> tuple[FactKey, ...]:
    """The keys a ``depends_on`` list names, as the one tuple every event naming them shares."""
    if not raw:
        return ()
    known = _known_deps(raw, shared)
    if known is not None:
        return known
    deps: list[FactKey] = []
    for i, dep in enumerate(raw):
        path = f"depends_on[{i}]"
        if not isinstance(dep, dict):
            raise ctx.fail("expected an object with subject and predicate", path)
        if not _KEY_FIELDS.issuperset(dep):
            raise ctx.fail(f"unknown field(s) {sorted(set(dep) - _KEY_FIELDS)}", path)
        key = FactKey(
            shared.string(_string(dep, "subject", ctx, path)),
            shared.string(_string(dep, "predicate", ctx, path)),
        )
        deps.append(shared.keys.setdefault(key, key))
    keys = tuple(deps)
    return shared.deps.setdefault(keys, keys)


def _known_deps(raw: list[Any], shared: _Shared) -> tuple[FactKey, ...] | None:
    """The shared tuple of a list an earlier event gave (checked then: its (subject,
    predicate) pairs equal, and hash as, the keys); None for any other list."""
    try:
        pairs = tuple([_KEY_VALUES(dep) for dep in raw if len(dep) == len(_KEY_FIELDS)])
        return shared.deps.get(pairs) if len(pairs) == len(raw) else None
    except (TypeError, KeyError):  # an entry that is no such object: refused when checked
        return None


def iter_timeline(
    lines: Iterable[str],
    *,
    origin: str | None = None,
    first_line: int = 1,
    max_line: int = DEFAULT_MAX_LINE,
    not_after: datetime | None = None,
    unique_ids: bool = True,
    refused: list[TimelineError] | None = None,
) -> Iterator[ChangeEvent]:
    """Parse JSONL lines in arrival order; blank lines are allowed, duplicate ids are not.
    ``not_after``: the latest event time accepted (now plus the allowed clock skew).
    ``unique_ids=False`` skips the duplicate check (and the memory of every id it takes), for
    lines already read once with it. With ``refused``, a bad line is appended there (as the
    error naming it) and the reading goes on; without, it raises."""
    seen: dict[str, int] = {}
    shared = _Shared()
    ctx = _Ctx(None, origin)  # (its line set before each is read)
    for number, raw in enumerate(lines, start=first_line):
        try:
            ctx.line = number
            event = _line_event(raw, ctx, max_line, not_after, shared)
            if event is None:
                continue
            if unique_ids:
                if event.id in seen:
                    raise TimelineError(
                        f"duplicate id {event.id!r} (first on line {seen[event.id]})",
                        line=number,
                        field="id",
                        origin=origin,
                    )
                seen[event.id] = number
        except TimelineError as exc:
            if refused is None:
                raise
            refused.append(exc)
            continue
        yield event


def _line_event(
    raw: str, ctx: _Ctx, max_line: int, not_after: datetime | None, shared: _Shared
) -> ChangeEvent | None:
    """The event on one line (None for a blank line); TimelineError naming what is wrong."""
    number, origin = ctx.line, ctx.origin
    if len(raw) > max_line:
        raise TimelineError(
            f"line is longer than the limit of {max_line} characters", line=number, origin=origin
        )
    text = raw.strip()
    if not text:
        return None
    try:
        obj = _json.loads(text, unique_names=True)
    except _json.BadJSON as exc:
        raise TimelineError(f"invalid JSON: {exc}", line=number, origin=origin) from None
    ascii_only = text.isascii() and "\\u" not in text
    event = _event_from_dict(obj, ctx, shared, ascii_only=ascii_only)
    if not_after is not None and event.timestamp > not_after:
        raise TimelineError(
            f"{format_timestamp(event.timestamp)} is in the future, later than "
            f"{format_timestamp(not_after)} (now plus the allowed clock skew)",
            line=number,
            field="timestamp",
            origin=origin,
        )
    return event


def _bounded_lines(handle: TextIO, max_line: int) -> Iterator[str]:
    """The lines of ``handle``; a line longer than ``max_line`` is yielded cut one character
    past the limit (so the reader refuses it) without ever being held whole."""
    while True:
        line = handle.readline(max_line + 2)
        if not line:
            return
        yield line.rstrip("\n") if line.endswith("\n") else line


def read_timeline(
    path: str, *, max_line: int = DEFAULT_MAX_LINE, not_after: datetime | None = None
) -> list[ChangeEvent]:
    return list(stream_timeline(path, max_line=max_line, not_after=not_after))


def stream_timeline(
    path: str,
    *,
    max_line: int = DEFAULT_MAX_LINE,
    not_after: datetime | None = None,
) -> Iterator[ChangeEvent]:
    """:func:`read_timeline` one event at a time."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = _bounded_lines(handle, max_line)
            yield from iter_timeline(lines, origin=path, max_line=max_line, not_after=not_after)
    except OSError as exc:
        raise TimelineError(f"cannot read timeline: {exc.strerror}", origin=path) from None
    except UnicodeDecodeError as exc:
        line, reason = undecodable_line(path, max_line + 2) or (None, exc.reason)
        raise TimelineError(f"not UTF-8 text: {reason}", line=line, origin=path) from None


_Compact = tuple[Any, ...]


def _compact(event: ChangeEvent) -> _Compact:
    """An event as plain values that :mod:`marshal` writes and reads back much faster than
    the JSON line is parsed and checked again; the time as integer microseconds, exactly."""
    fact, previous = event.fact, event.previous
    return (
        event.id,
        event.type,
        to_micros(event.timestamp),
        event.source,
        (fact.subject, fact.predicate, fact.value, fact.domain),
        None
        if previous is None
        else (previous.subject, previous.predicate, previous.value, previous.domain),
        event.reason,
        tuple((key.subject, key.predicate) for key in event.depends_on),
        tuple(event.metadata.items()),
    )


def _uncompact(row: _Compact, shared: _Shared) -> ChangeEvent:
    """The event :func:`_compact` made ``row`` of. The names, values and reasons it shares
    with other events were interned when first read (:class:`_Shared`), and :mod:`marshal`
    gives an interned string back as that very object: they are taken as they come."""
    event_id, kind, micros, source, fact, previous, reason, raw_deps, metadata = row
    deps: tuple[FactKey, ...] = ()
    if raw_deps:
        # The (subject, predicate) pairs equal, and hash as, the keys they name: one lookup
        # finds the shared list, and each distinct list is decoded once, not once an event.
        deps = shared.deps.get(raw_deps) or _shared_deps(raw_deps, shared)
    facts = shared.facts
    held = facts.get(fact) or _shared_fact(fact, shared)
    previous_fact = (
        None if previous is None else facts.get(previous) or _shared_fact(previous, shared)
    )
    timestamp = from_micros(micros)
    # (by position, as in _event_from_dict)
    return ChangeEvent(
        event_id, kind, timestamp, source, held, previous_fact, reason, deps, dict(metadata)
    )


def _shared_fact(fields: tuple[Any, ...], shared: _Shared) -> Fact:
    """A fact read back from a copy, as the one object every event holding it shares."""
    return shared.keep_fact(fields, Fact(*fields))


def _shared_deps(pairs: tuple[tuple[str, str], ...], shared: _Shared) -> tuple[FactKey, ...]:
    """A dependency list read back from a copy, as the one object every event shares."""
    string = shared.string
    keys = tuple(
        shared.keys.setdefault(key, key)
        for key in (FactKey(string(s), string(p)) for s, p in pairs)
    )
    return shared.deps.setdefault(keys, keys)


_COPY_BLOCK = 256  # events per marshal record in a timeline copy
_BLOCK_SIZE_BYTES = 8  # each record's length before it: the block is read in one call


class TimelineCopy:
    """A timeline file read once, checked as :func:`read_timeline` checks it, into a private
    copy that can then be replayed any number of times without holding every event in
    memory. Later readings see the events the first one checked, even if the file changes
    meanwhile or is a pipe. The copy holds each event as parsed (a compact binary record),
    so a replay does not parse and check the JSON again; blocks of records are written and
    read at once, each after its length, since marshal reading a file object calls its
    read method for every value (about 10 µs an event, against 1 from bytes)."""

    def __init__(
        self,
        path: str,
        copy: BinaryIO,
        *,
        max_line: int = DEFAULT_MAX_LINE,
        not_after: datetime | None = None,
    ) -> None:
        self.path = path
        self._copy = copy
        self._max_line = max_line
        self._not_after = not_after
        self._count: int | None = None

    def read(self) -> Iterator[ChangeEvent]:
        """The first reading, from the file."""
        if self._count is not None:
            raise RuntimeError("a timeline copy is read from its file once")
        count = 0
        block: list[_Compact] = []
        for event in stream_timeline(self.path, max_line=self._max_line, not_after=self._not_after):
            block.append(_compact(event))
            if len(block) == _COPY_BLOCK:
                self._write(block)
                block = []
            count += 1
            yield event
        if block:
            self._write(block)
        self._copy.flush()
        self._count = count

    def _write(self, block: list[_Compact]) -> None:
        data = marshal.dumps(block)
        try:
            self._copy.write(len(data).to_bytes(_BLOCK_SIZE_BYTES, "little"))
            self._copy.write(data)
        except OSError as exc:
            raise HealthdError(f"cannot keep a copy of the timeline: {exc.strerror}") from None

    def __len__(self) -> int:
        if self._count is None:
            raise RuntimeError("a timeline copy has no length before it is read")
        return self._count

    def __iter__(self) -> Iterator[ChangeEvent]:
        """A later reading, from the copy: the same events in the same order (one reading
        at a time: they share the copy's position)."""
        if self._count is None:
            raise RuntimeError("a timeline copy is replayed after it is read")
        self._copy.seek(0)
        return self._replay(self._count)

    def _replay(self, count: int) -> Iterator[ChangeEvent]:
        shared = _Shared()
        loads, read = marshal.loads, self._copy.read
        for _ in range(0, count, _COPY_BLOCK):
            size = int.from_bytes(read(_BLOCK_SIZE_BYTES), "little")
            for row in loads(read(size)):
                yield _uncompact(row, shared)


def loads_timeline(text: str, *, origin: str | None = None) -> list[ChangeEvent]:
    """The events of a timeline's text, its lines ended as :func:`read_timeline` ends them
    (\\n, \\r\\n or \\r): not at U+2028, U+0085 or the other breaks ``str.splitlines`` knows,
    which a JSON string may hold unescaped (:func:`dumps_event` writes them so)."""
    return list(iter_timeline(_LINE_END.split(text), origin=origin))


_LINE_END = re.compile(r"\r\n|\r|\n")
