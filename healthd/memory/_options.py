"""Parsing of target switches (``name=value``) shared by the embedded memories."""

from __future__ import annotations

import os
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


def batch_option(options: Mapping[str, Any]) -> int:
    """``batch_events``: writes a memory processes asynchronously sent before they are
    waited for, once (and scored as one stage); 1 to 10000."""
    batch = integer(options, "batch_events", 1)
    if batch > 10_000:
        raise TargetError(f"switch batch_events={batch}: at most 10000")
    return batch


SWEEPS = ("subject", "each", "off")


def sweeps_option(options: Mapping[str, Any]) -> str:
    """``sweeps``: how a memory whose writes call an LLM is told a revalidation sweep
    (:class:`healthd.memory.SweepBatching`); ``subject`` by default."""
    value = str(options.get("sweeps", SWEEPS[0]))
    if value not in SWEEPS:
        raise TargetError(f"switch sweeps={value!r}: expected one of {', '.join(SWEEPS)}")
    return value


class UnknownSwitch(TargetError):
    """A switch the kind does not take; the message lists the kind's own."""


def reject_unknown(options: Mapping[str, Any], known: set[str], kind: str) -> None:
    unknown = sorted(set(options) - known)
    if unknown:
        raise UnknownSwitch(
            f"unknown switch {unknown[0]!r} for {kind}; known switches: {', '.join(sorted(known))}"
        )


def url_option(options: Mapping[str, Any], name: str, default: str, where: str) -> str:
    """The http(s) URL in ``options[name]``, or in the environment variable that
    ``options[name + "_env"]`` names (a hosted API's address kept out of the file)."""
    url = str(options.get(name, default))
    if f"{name}_env" in options:
        if name in options:
            raise TargetError(f"{where}: give {name} or {name}_env, not both")
        variable = str(options[f"{name}_env"])
        url = os.environ.get(variable, "")
        if not url:
            raise TargetError(f"{where} {name}_env: environment variable {variable} is not set")
    if not url.startswith(("http://", "https://")):
        raise TargetError(f"{where} {name}={url!r}: expected an http(s) URL")
    return url
