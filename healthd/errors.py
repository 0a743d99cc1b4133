"""The one exception tree healthd raises; library errors are converted at the boundary."""

from __future__ import annotations

import reprlib
from typing import Any


class HealthdError(Exception):
    """Base of every error healthd raises on purpose."""


MAX_MESSAGE = 500


def shorten(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out: an error quotes
    a bad value, never all of a huge one."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


_QUOTE = reprlib.Repr()  # (keyword arguments only from Python 3.12)
_QUOTE.maxlevel = 3
_QUOTE.maxtuple = _QUOTE.maxlist = _QUOTE.maxdict = _QUOTE.maxset = _QUOTE.maxfrozenset = 4
_QUOTE.maxstring = _QUOTE.maxother = 80
_QUOTE.maxlong = 40


def quote(value: object) -> str:
    """``value``'s repr for a message, bounded however big or deep the value is: a parsed
    document's value can be a YAML alias bomb, whose full repr would take hours and GiB,
    and even a plain one would make a line nobody reads."""
    return _QUOTE.repr(value)


class TimelineError(HealthdError):
    """A timeline (JSONL or a source's output) is malformed."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
        origin: str | None = None,
    ) -> None:
        self.line = line
        self.field = field
        self.origin = origin
        where = []
        if origin:
            where.append(origin)
        if line is not None:
            where.append(f"line {line}")
        if field:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        message = shorten(message)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class ProbeFileError(HealthdError):
    """A probe file is malformed."""


class TargetError(HealthdError):
    """A target specification is invalid (unknown kind, bad switch, not shadow)."""


class ShadowViolation(TargetError):
    """An adapter was asked to write to a scope that is not declared shadow."""


class MemoryAdapterError(HealthdError):
    """A memory adapter failed while applying or answering."""


class SourceError(HealthdError):
    """A source failed to produce its events."""


class ConfigError(HealthdError):
    """Configuration is invalid."""


class ReaderError(HealthdError):
    """A reader cannot read what a memory served (an item with no text and no fact, a judge
    that is down or answers garbage) or a labelled set is malformed."""


class ReportShapeError(HealthdError):
    """A saved JSON report does not have the shape `healthd evaluate --format json` writes."""


def first_problem(exc: Any) -> tuple[str, str]:
    """A pydantic ``ValidationError``'s first error as (where, message): where is the dotted
    path of the field ("" for the whole), the message without pydantic's "Value error, "."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return where, str(error["msg"]).removeprefix("Value error, ")
