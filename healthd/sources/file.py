"""The `file` source: a timeline JSONL file, read incrementally as it grows."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import IO, Any

from pydantic import BaseModel, ConfigDict

from healthd._files import open_regular
from healthd.errors import TimelineError
from healthd.sources import PullResult, register_source
from healthd.sources._options import validate_options
from healthd.timeline import iter_timeline

#: Bytes hashed at each end of what was read, to tell an appended file from a rewritten one.
EDGE = 4096
#: Bytes read by one pull at most (whole lines): a large backlog is taken in slices.
SLICE = 4 << 20


class FileOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str


class FileSource:
    """Reads a JSONL timeline from the byte offset it had read to. The cursor is that offset,
    the line number there and hashes of the first and last :data:`EDGE` bytes before it, so
    its size does not grow with the file: a pull reads only what was appended, and a file
    that is shorter, or whose hashed edges changed, was rewritten and is read again from the
    top (a rewrite confined to the middle of a long file, away from both edges, is not seen).
    A pull reads at most :data:`SLICE` bytes of whole lines and says when there is more; a
    longer line is refused and stepped over once it ends.

    After a rewrite the events read before come again, each with its line in
    ``PullResult.places``: the daemon, which keeps every event it took, takes none of them
    twice and reports a line that reuses a read event's id with other content. A line that is
    not a valid event (not UTF-8 and too long included) is refused (in ``PullResult.skipped``,
    naming the file, line and field) and the lines after it are read: one bad line does not
    stop the source, and the cursor moves past it, so it is reported once."""

    kind = "file"

    def __init__(self, name: str, path: str, slice_bytes: int | None = None) -> None:
        self.name = name
        self.path = path
        self.slice = slice_bytes or SLICE

    def pull(self, cursor: str | None) -> PullResult:
        state = _state_of(cursor)
        if cursor and state is None:  # (another source's, or edited): not this file's place
            result = self._pull(None, None)
            result.skipped.insert(0, f"{self.path}: cursor not understood; read from the top")
            return result
        return self._pull(cursor, state)

    def _pull(self, cursor: str | None, state: dict[str, Any] | None) -> PullResult:
        try:
            with open_regular(self.path) as handle:
                offset, line, restarted = _resume(handle, state)
                handle.seek(offset)
                data = handle.read(self.slice + 1)
                more = len(data) > self.slice
                if more:
                    data = data[: self.slice]
                end = data.rfind(b"\n") + 1  # a line still being written waits for the next pull
                if more and end == 0:
                    del data
                    return self._past_long_line(handle, cursor, offset, line, restarted)
                first, last = _edges(handle, offset + end)
        except OSError as exc:
            return PullResult([], cursor, error=f"cannot read {self.path}: {exc.strerror}")
        refused: list[TimelineError] = []
        lines = _text_lines(data, end, line, self.path, refused)
        tail = data[end:] if not more else b""
        del data  # a first pull may read a large file: hold one copy at a time
        events = list(iter_timeline(lines, origin=self.path, first_line=line, refused=refused))
        result = PullResult(events, _cursor(first, last, offset + end, line + len(lines)))
        result.more = more
        if tail:
            result.unfinished = f"{self.path} line {line + len(lines)} has no end of line yet" + (
                " (a lone carriage return ends no line here)" if b"\r" in tail else ""
            )
        if restarted and end:
            result.skipped.append(f"{self.path} changed before the cursor; read again from the top")
        result.skipped.extend(f"line refused: {exc}" for exc in refused)
        bad = {exc.line for exc in refused}
        numbers = (n for n, raw in enumerate(lines, start=line) if raw.strip() and n not in bad)
        result.places = {
            event.id: f"{self.path} line {n}" for event, n in zip(events, numbers, strict=True)
        }
        return result

    def _past_long_line(
        self, handle: IO[bytes], cursor: str | None, offset: int, line: int, restarted: bool
    ) -> PullResult:
        """The line at ``offset`` is longer than a slice: refused and stepped over, so that
        the lines after it are read; while it has no end yet it is waited for."""
        stop = _line_end(handle, offset + self.slice)
        if stop is None:
            return PullResult([], cursor if not restarted else None)
        first, last = _edges(handle, stop)
        result = PullResult([], _cursor(first, last, stop, line + 1))
        result.more = True  # the lines after it are read by the next pull
        if restarted:
            result.skipped.append(f"{self.path} changed before the cursor; read again from the top")
        too_long = TimelineError(f"longer than {self.slice} bytes", line=line, origin=self.path)
        result.skipped.append(f"line refused: {too_long}")
        return result


def _text_lines(
    data: bytes, end: int, first_line: int, origin: str, refused: list[TimelineError]
) -> list[str]:
    """The whole lines in ``data[:end]`` as text, split at newlines alone (a JSON string may
    hold U+2028 or a form feed); a line that is not UTF-8 is refused (in ``refused``, naming
    it) and stands as a blank line, so that the lines after it keep their numbers."""
    view = memoryview(data)[:end]
    try:
        return str(view, "utf-8", "strict").split("\n")[:-1]  # decoded without a copy
    except UnicodeDecodeError:
        pass
    lines: list[str] = []
    for number, raw in enumerate(bytes(view).split(b"\n")[:-1], start=first_line):
        try:
            lines.append(str(raw, "utf-8", "strict"))
        except UnicodeDecodeError as exc:
            refused.append(
                TimelineError(f"not UTF-8 text ({exc.reason})", line=number, origin=origin)
            )
            lines.append("")
    return lines


def _line_end(handle: IO[bytes], start: int) -> int | None:
    """The offset just past the first newline at or after ``start``; None when there is none
    (the line is still being written)."""
    handle.seek(start)
    position = start
    while block := handle.read(1 << 16):
        found = block.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(block)
    return None


def _state_of(cursor: str | None) -> dict[str, Any] | None:
    """The cursor's fields, None when there is none or it is not one this source wrote."""
    if not cursor:
        return None
    try:
        state = json.loads(cursor)
    except ValueError:
        return None
    if not isinstance(state, dict):
        return None
    offset = state.get("offset")
    if type(offset) is not int or offset < 0:
        return None
    if "sha256" in state:  # (written before the bounded check: the line is counted anew)
        return state if isinstance(state["sha256"], str) else None
    line = state.get("line")
    if type(line) is not int or line < 1:
        return None
    return state if all(isinstance(state.get(name), str) for name in ("head", "tail")) else None


def _resume(handle: IO[bytes], state: dict[str, Any] | None) -> tuple[int, int, bool]:
    """Where to read from: (byte offset, its line number, whether the file was rewritten)."""
    if state is None:
        return 0, 1, False
    offset = int(state["offset"])
    handle.seek(0, 2)
    if handle.tell() < offset:
        return 0, 1, True
    if "sha256" in state:  # a cursor written before the bounded check: the whole prefix, once
        handle.seek(0)
        prefix = handle.read(offset)
        if hashlib.sha256(prefix).hexdigest() != state["sha256"]:
            return 0, 1, True
        return offset, prefix.count(b"\n") + 1, False
    first, last = _edges(handle, offset)
    if _digest(first) != state["head"] or _digest(last) != state["tail"]:
        return 0, 1, True
    return offset, int(state["line"]), False


def _edges(handle: IO[bytes], offset: int) -> tuple[bytes, bytes]:
    """The first and the last :data:`EDGE` bytes before ``offset``."""
    handle.seek(0)
    first = handle.read(min(offset, EDGE))
    start = max(0, offset - EDGE)
    handle.seek(start)
    return first, handle.read(offset - start)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _cursor(first: bytes, last: bytes, offset: int, line: int) -> str:
    return json.dumps(
        {"offset": offset, "line": line, "head": _digest(first), "tail": _digest(last)}
    )


@register_source("file")
def file_source(name: str, options: Mapping[str, Any]) -> FileSource:
    opts = validate_options(FileOptions, name, options)
    return FileSource(name, opts.path)
