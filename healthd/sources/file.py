"""The `file` source: a timeline JSONL file, read incrementally as it grows."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from healthd.errors import ConfigError, TimelineError
from healthd.model import ChangeEvent
from healthd.sources import PullResult, register_source
from healthd.timeline import dumps_event, iter_timeline


class FileOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str


class FileSource:
    """Reads a JSONL timeline. The cursor is the byte offset read so far plus a hash of that
    prefix, so appended lines are read once and a rewritten file is read again from the top;
    it also keeps a short digest of each event read, so that after a rewrite an event read
    before is not delivered twice, and a line that reuses a read event's id with new content
    is reported with its line number (never taken silently)."""

    kind = "file"

    def __init__(self, name: str, path: str) -> None:
        self.name = name
        self.path = path

    def pull(self, cursor: str | None) -> PullResult:
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            return PullResult([], cursor, error=f"cannot read {self.path}: {exc.strerror}")
        offset, restarted = 0, False
        digests: dict[str, str] = {}
        if cursor:
            state = json.loads(cursor)
            offset = int(state["offset"])
            if isinstance(state.get("ids"), dict):
                digests = {str(k): str(v) for k, v in state["ids"].items()}
            if len(data) < offset or hashlib.sha256(data[:offset]).hexdigest() != state["sha256"]:
                offset, restarted = 0, True
        end = data.rfind(b"\n") + 1  # a line still being written is left for the next pull
        if end <= offset:
            return PullResult([], self._cursor(data, offset, digests))
        first_line = data[:offset].count(b"\n") + 1
        try:
            chunk = data[offset:end].decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:
            line = first_line + data[offset : offset + exc.start].count(b"\n")
            error = f"{self.path}, line {line}: not UTF-8 text ({exc.reason})"
            return PullResult([], cursor if not restarted else None, error=error)
        try:
            events = list(
                iter_timeline(chunk.splitlines(), origin=self.path, first_line=first_line)
            )
        except TimelineError as exc:
            return PullResult([], cursor if not restarted else None, error=str(exc))
        result = PullResult([], None)
        if restarted:
            result.skipped.append(f"{self.path} changed before the cursor; read again from the top")
        lines = _event_lines(chunk, first_line)
        again = 0
        for event in events:
            digest = _digest(event)
            known = digests.get(event.id)
            if known is None:
                digests[event.id] = digest
                result.events.append(event)
            elif known == digest:
                again += 1
            else:
                result.skipped.append(
                    f"{self.path} line {lines.get(event.id, '?')}: id {event.id!r} was read "
                    "before with other content; the rewritten line is not taken"
                )
        if again:
            result.skipped.append(f"{self.path}: {again} events read before were not taken again")
        result.cursor = self._cursor(data, end, digests)
        return result

    @staticmethod
    def _cursor(data: bytes, offset: int, digests: dict[str, str]) -> str:
        return json.dumps(
            {
                "offset": offset,
                "sha256": hashlib.sha256(data[:offset]).hexdigest(),
                "ids": digests,
            }
        )


def _digest(event: ChangeEvent) -> str:
    return hashlib.sha256(dumps_event(event).encode()).hexdigest()[:12]


def _event_lines(chunk: str, first_line: int) -> dict[str, int]:
    """Event id → its line number (for reports), from the lines already validated."""
    out: dict[str, int] = {}
    for number, raw in enumerate(chunk.splitlines(), start=first_line):
        text = raw.strip()
        if text:
            ident = json.loads(text).get("id")
            if isinstance(ident, str):
                out.setdefault(ident, number)
    return out


@register_source("file")
def file_source(name: str, options: Mapping[str, Any]) -> FileSource:
    try:
        opts = FileOptions.model_validate(dict(options))
    except ValidationError as exc:
        raise ConfigError(
            f"source {name!r}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
        ) from None
    return FileSource(name, opts.path)
