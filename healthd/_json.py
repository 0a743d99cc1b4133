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


def loads(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadJSON(exc.msg, exc.lineno, exc.colno) from None
    except RecursionError:
        raise BadJSON("nested too deeply") from None
    except UnicodeDecodeError:  # bytes in none of the encodings JSON text may use
        raise BadJSON("not UTF-8 text") from None
    except ValueError as exc:  # an integer past the interpreter's digit limit
        raise BadJSON(f"a number too long to read ({str(exc).split(':')[0]})") from None
