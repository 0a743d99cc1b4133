"""JSON text from outside healthd decoded with every way it can fail as one error.

``json.loads`` fails in three ways besides :class:`json.JSONDecodeError`: a nesting deeper
than the interpreter's recursion limit (:class:`RecursionError`) and an integer longer than
``sys.get_int_max_str_digits()`` digits (a plain :class:`ValueError`); given bytes, also
bytes that do not decode (:class:`UnicodeDecodeError`). Callers turn the one
:class:`BadJSON` into their own error naming the file and line.
"""

from __future__ import annotations

import json
from typing import Any


class BadJSON(ValueError):
    """Text that is not JSON healthd can read. ``reason`` says why; ``lineno`` and
    ``colno`` (1-based) say where in the text, when the decoder knows."""

    def __init__(self, reason: str, lineno: int | None = None, colno: int | None = None) -> None:
        self.reason = reason
        self.lineno = lineno
        self.colno = colno
        super().__init__(reason if colno is None else f"{reason} at column {colno}")


class _NameTwice(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _unique_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise _NameTwice(name)
            seen.add(name)
    return obj


_UNIQUE = json.JSONDecoder(object_pairs_hook=_unique_names)


def loads(text: str | bytes, *, unique_names: bool = False) -> Any:
    """``text`` decoded; with ``unique_names``, an object that gives one name twice is
    refused (the standard leaves its meaning open, and Python's decoder would keep the
    last value without a word): for healthd's own formats, read strictly."""
    try:
        if unique_names:
            if isinstance(text, bytes):
                return json.loads(text, object_pairs_hook=_unique_names)
            if text.startswith("\ufeff"):  # (json.loads says so; the decoder alone does not)
                raise BadJSON("Unexpected UTF-8 BOM (decode using utf-8-sig)", 1, 1)
            return _UNIQUE.decode(text)
        return json.loads(text)
    except BadJSON:
        raise
    except _NameTwice as exc:
        raise BadJSON(f"the name {exc.name!r} is given twice in one object") from None
    except json.JSONDecodeError as exc:
        raise BadJSON(exc.msg, exc.lineno, exc.colno) from None
    except RecursionError:
        raise BadJSON("nested too deeply") from None
    except UnicodeDecodeError:  # bytes in none of the encodings JSON text may use
        raise BadJSON("not UTF-8 text") from None
    except ValueError as exc:  # an integer past the interpreter's digit limit
        raise BadJSON(f"a number too long to read ({str(exc).split(':')[0]})") from None
