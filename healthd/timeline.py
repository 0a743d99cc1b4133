"""Timeline JSONL: the interchange format every source produces and `healthd timeline` prints.

Reading is strict: a bad line raises :class:`TimelineError` naming the line and the field;
nothing is skipped silently. A line longer than ``max_line`` characters (default 1 MiB) and
an event dated further in the future than ``not_after`` are refused the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from healthd.errors import TimelineError
from healthd.model import DOMAINS, EVENT_TYPES, ChangeEvent, Fact, FactKey

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
DEFAULT_MAX_LINE = 1 << 20
DEFAULT_FUTURE_SKEW = timedelta(days=1)


def format_timestamp(ts: datetime) -> str:
    """UTC ISO 8601 with a trailing Z, microseconds only when present."""
    utc = ts.astimezone(UTC)
    text = utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def parse_timestamp(
    value: object, *, field: str = "timestamp", line: int | None = None, origin: str | None = None
) -> datetime:
    if not isinstance(value, str) or not value:
        raise TimelineError(
            "expected an ISO 8601 timestamp string", line=line, field=field, origin=origin
        )
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        ts = datetime.fromisoformat(text)
    except ValueError:
        raise TimelineError(
            f"not an ISO 8601 timestamp: {value!r}", line=line, field=field, origin=origin
        ) from None
    if ts.tzinfo is None:
        raise TimelineError(
            f"timestamp {value!r} has no timezone (add Z or an offset)",
            line=line,
            field=field,
            origin=origin,
        )
    return ts.astimezone(UTC)


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


def write_timeline(events: Iterable[ChangeEvent], out: TextIO) -> int:
    count = 0
    for event in events:
        out.write(dumps_event(event))
        out.write("\n")
        count += 1
    return count


class _Ctx:
    __slots__ = ("line", "origin")

    def __init__(self, line: int | None, origin: str | None) -> None:
        self.line = line
        self.origin = origin

    def fail(self, message: str, field: str | None = None) -> TimelineError:
        return TimelineError(message, line=self.line, field=field, origin=self.origin)


def _string(obj: dict[str, Any], name: str, ctx: _Ctx, path: str) -> str:
    if name not in obj:
        raise ctx.fail("missing", f"{path}{name}")
    value = obj[name]
    if not isinstance(value, str) or not value.strip():
        raise ctx.fail(f"expected a non-empty string, got {value!r}", f"{path}{name}")
    return value


def _fact(obj: object, ctx: _Ctx, path: str) -> Fact:
    if not isinstance(obj, dict):
        raise ctx.fail(f"expected an object, got {type(obj).__name__}", path)
    extra = set(obj) - set(_FACT_FIELDS)
    if extra:
        raise ctx.fail(f"unknown field(s) {sorted(extra)}", path)
    subject, predicate, value, domain = (_string(obj, n, ctx, path + ".") for n in _FACT_FIELDS)
    if domain not in DOMAINS:
        raise ctx.fail(
            f"unknown domain {domain!r}; expected one of {', '.join(DOMAINS)}", f"{path}.domain"
        )
    return Fact(subject, predicate, value, domain)


def event_from_dict(
    obj: object, *, line: int | None = None, origin: str | None = None
) -> ChangeEvent:
    """Validate one decoded JSON object as a ChangeEvent."""
    ctx = _Ctx(line, origin)
    if not isinstance(obj, dict):
        raise ctx.fail(f"expected a JSON object, got {type(obj).__name__}")
    extra = set(obj) - _EVENT_FIELDS
    if extra:
        raise ctx.fail(f"unknown field(s) {sorted(extra)}")
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
    fact = _fact(obj["fact"], ctx, "fact")
    previous = None
    if kind == "revised":
        if "previous" not in obj:
            raise ctx.fail("missing (required on a revised event)", "previous")
        previous = _fact(obj["previous"], ctx, "previous")
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
    deps: list[FactKey] = []
    for i, dep in enumerate(raw_deps):
        path = f"depends_on[{i}]"
        if not isinstance(dep, dict):
            raise ctx.fail("expected an object with subject and predicate", path)
        extra = set(dep) - {"subject", "predicate"}
        if extra:
            raise ctx.fail(f"unknown field(s) {sorted(extra)}", path)
        deps.append(
            FactKey(
                _string(dep, "subject", ctx, path + "."), _string(dep, "predicate", ctx, path + ".")
            )
        )
    raw_meta = obj.get("metadata", {})
    if raw_meta is None:
        raw_meta = {}
    if not isinstance(raw_meta, dict):
        raise ctx.fail("expected an object of string pairs", "metadata")
    for k, v in raw_meta.items():
        if not isinstance(v, str):
            raise ctx.fail(f"expected a string value, got {v!r}", f"metadata.{k}")
    return ChangeEvent(
        id=event_id,
        type=kind,
        timestamp=timestamp,
        source=source,
        fact=fact,
        previous=previous,
        reason=reason,
        depends_on=tuple(deps),
        metadata=dict(raw_meta),
    )


def iter_timeline(
    lines: Iterable[str],
    *,
    origin: str | None = None,
    first_line: int = 1,
    max_line: int = DEFAULT_MAX_LINE,
    not_after: datetime | None = None,
) -> Iterator[ChangeEvent]:
    """Parse JSONL lines in arrival order; blank lines are allowed, duplicate ids are not.
    ``not_after``: the latest event time accepted (now plus the allowed clock skew)."""
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=first_line):
        if len(raw) > max_line:
            raise TimelineError(
                f"line is longer than the limit of {max_line} characters",
                line=number,
                origin=origin,
            )
        text = raw.strip()
        if not text:
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TimelineError(
                f"invalid JSON: {exc.msg} at column {exc.colno}", line=number, origin=origin
            ) from None
        except RecursionError:
            raise TimelineError(
                "invalid JSON: nested too deeply", line=number, origin=origin
            ) from None
        event = event_from_dict(obj, line=number, origin=origin)
        if not_after is not None and event.timestamp > not_after:
            raise TimelineError(
                f"{format_timestamp(event.timestamp)} is in the future, later than "
                f"{format_timestamp(not_after)} (now plus the allowed clock skew)",
                line=number,
                field="timestamp",
                origin=origin,
            )
        if event.id in seen:
            raise TimelineError(
                f"duplicate id {event.id!r} (first on line {seen[event.id]})",
                line=number,
                field="id",
                origin=origin,
            )
        seen[event.id] = number
        yield event


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
    try:
        with open(path, encoding="utf-8") as handle:
            return list(
                iter_timeline(
                    _bounded_lines(handle, max_line),
                    origin=path,
                    max_line=max_line,
                    not_after=not_after,
                )
            )
    except OSError as exc:
        raise TimelineError(f"cannot read timeline: {exc.strerror}", origin=path) from None
    except UnicodeDecodeError as exc:
        raise TimelineError(f"not UTF-8 text: {exc.reason}", origin=path) from None


def loads_timeline(text: str, *, origin: str | None = None) -> list[ChangeEvent]:
    return list(iter_timeline(text.splitlines(), origin=origin))
