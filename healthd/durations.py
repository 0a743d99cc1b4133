"""One duration syntax for every setting, switch and option: a number with a unit (``90s``,
``15m``, ``12h``, ``30d``, ``2w``) or ISO 8601 (``P30D``, ``PT12H``, ``P1DT6H``).

A bare number is refused (it meant seconds in one place and days in another), with a hint;
so is a negative duration.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_ISO = re.compile(
    r"^\s*P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?\s*$",
    re.IGNORECASE,
)
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_HELP = "expected a duration such as 12h, 30d, 2w or P30D"


def parse_duration(value: Any) -> timedelta:
    """A :class:`timedelta` from ``12h``/``30d``/``2w``/``P30D`` (or a timedelta);
    ValueError naming what is wrong otherwise."""
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise ValueError(f"duration {value} is negative")
        return value
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{_HELP}, got {value!r}")
    text = str(value).strip()
    if text.startswith("-"):
        raise ValueError(f"duration {text!r} is negative")
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        raise ValueError(
            f"duration {text!r} has no unit; write {text}d for days, {text}h for hours "
            f"or {text}s for seconds"
        )
    try:
        unit = _UNIT.match(text)
        if unit:
            return timedelta(seconds=float(unit.group(1)) * _SECONDS[unit.group(2).lower()])
        iso = _ISO.match(text)
        if iso and text.upper() not in ("P", "PT") and not text.upper().endswith("T"):
            weeks, days, hours, minutes, seconds = (float(g) if g else 0.0 for g in iso.groups())
            return timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:
        raise ValueError(f"duration {text!r} is too long") from None
    raise ValueError(f"{_HELP}, got {value!r}")
