"""Parsing of target switches (``name=value``) shared by the embedded memories."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from healthd.durations import parse_duration
from healthd.errors import TargetError

_TRUE = {"on", "true", "yes", "1"}
_FALSE = {"off", "false", "no", "0"}


def switch(options: Mapping[str, Any], name: str, default: bool) -> bool:
    value = options.get(name)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise TargetError(f"switch {name}={value!r}: expected on or off")


def duration(options: Mapping[str, Any], name: str, default: timedelta) -> timedelta:
    value = options.get(name)
    if value is None:
        return default
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise TargetError(f"switch {name}={value!r}: {exc}") from None


def integer(options: Mapping[str, Any], name: str, default: int, minimum: int = 1) -> int:
    value = options.get(name)
    if value is None:
        return default
    try:
        number = int(str(value))
    except ValueError:
        raise TargetError(f"switch {name}={value!r}: expected an integer") from None
    if number < minimum:
        raise TargetError(f"switch {name}={value!r}: must be at least {minimum}")
    return number


def reject_unknown(options: Mapping[str, Any], known: set[str], kind: str) -> None:
    unknown = sorted(set(options) - known)
    if unknown:
        raise TargetError(
            f"unknown switch {unknown[0]!r} for {kind}; known switches: {', '.join(sorted(known))}"
        )
