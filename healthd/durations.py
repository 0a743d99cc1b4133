"""Durations as people write them in configs and target switches: ``30d``, ``12h``, ``90``."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "": 86400}
_HELP = "expected a duration such as 30d, 12h or 90 (days)"


def parse_duration(value: Any) -> timedelta:
    """``30d``, ``12h``, ``90`` (days), a number of days, or a timedelta; ValueError else."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError(_HELP)
    try:
        if isinstance(value, (int, float)):
            return timedelta(days=value)
        match = _DURATION.match(str(value))
        if not match:
            raise ValueError(f"{_HELP}, got {value!r}")
        return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
    except OverflowError:
        raise ValueError(f"duration {value!r} is too long") from None
