"""Files healthd reads by name must be regular files. A named pipe would block the read
until a writer comes (a daemon that never listens, a `check-config` that never answers), a
device could be read forever; each is refused at once, naming the path and what it is.
(`evaluate --timeline /dev/stdin` is the one input meant to be a pipe, and does not come
here.)"""

from __future__ import annotations

import codecs
import errno
import io
import os
import stat
from typing import BinaryIO, TextIO

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFile(OSError):
    """The path names something other than a regular file; ``strerror`` says what."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"is {kind}, not a regular file", path)


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "an unknown kind of file")


def open_regular(path: str) -> BinaryIO:
    """``path`` opened for reading in binary, or OSError (:class:`NotRegularFile` unless it
    is a regular file). Opened without blocking, so that a pipe is refused, not waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        kind = _kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotRegularFile(path, kind)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_text(path: str) -> TextIO:
    """:func:`open_regular` as UTF-8 text, read as :func:`open` reads it."""
    return io.TextIOWrapper(open_regular(path), encoding="utf-8")


def read_text(path: str) -> str:
    """The whole of a regular file as UTF-8 text (OSError or UnicodeDecodeError otherwise)."""
    with open_text(path) as handle:
        return handle.read()


def check_regular(path: str) -> None:
    """OSError unless ``path`` (links followed) is a regular file: for a path handed to a
    library that opens it itself (a certificate to :mod:`ssl`)."""
    kind = _kind(os.stat(path).st_mode)
    if kind is not None:
        raise NotRegularFile(path, kind)


def undecodable_line(path: str, bound: int = 1 << 20) -> tuple[int, str] | None:
    """The first line of ``path`` that is not UTF-8, and why (read ``bound`` bytes at a
    time; lines counted as a text-mode reader counts them): a text reader decodes ahead of
    the line it hands on, so its error cannot say which line it was. None for what is no regular file: a pipe read once cannot be read
    again (opening it anew would wait for a writer)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
    except OSError:
        return None
    decoder = codecs.getincrementaldecoder("utf-8")()
    number = 1
    last = b""
    with open(path, "rb") as handle:
        while chunk := handle.readline(bound):
            if chunk.startswith(b"\n") and last.endswith(b"\r"):
                number -= 1  # a \r\n the bound cut in two ends one line
            held = len(decoder.getstate()[0])  # a character the last read cut in two
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:  # (exc.start counts the held bytes too)
                return number + _line_ends(chunk[: max(0, exc.start - held)]), exc.reason
            number += _line_ends(chunk)
            last = chunk
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            return number, exc.reason
    return None


def _line_ends(data: bytes) -> int:
    """Lines ``data`` ends as a text-mode reader counts them: at \\n, \\r\\n or a lone \\r."""
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
