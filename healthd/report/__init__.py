"""The HTML report: a self-contained file from a JSON report, and the daemon's live page.

``view`` builds the page model (pure), ``html`` renders it, ``live`` serves it from the
daemon; this module is the file edge: reading a saved report and writing the HTML.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from healthd import _json
from healthd._files import open_regular, read_text
from healthd.errors import HealthdError, ReportShapeError
from healthd.model import ChangeEvent
from healthd.report.html import document_pieces, render_document
from healthd.report.shape import check_report
from healthd.report.view import page_model
from healthd.scoring import DEFAULT_WINDOWS


def report_pieces(
    report: Mapping[str, Any],
    *,
    events: Sequence[ChangeEvent] = (),
) -> list[str]:
    """:func:`render_report` as the pieces of its text, for :func:`write_html`."""
    return document_pieces(page_model(report, events=events, title="healthd report"))


def render_report(
    report: Mapping[str, Any],
    *,
    events: Sequence[ChangeEvent] = (),
    multi_valued: Collection[tuple[str, str]] | None = None,
    windows: Mapping[str, timedelta] = DEFAULT_WINDOWS,
    target_options: Mapping[str, Mapping[str, Any]] | None = None,
    title: str = "healthd report",
) -> str:
    """The self-contained HTML of a JSON report. ``target_options`` (by target name) say
    which forgetting mechanisms each target switched off; without them, target names
    written ``kind:switch=value`` do."""
    model = page_model(
        report,
        events=events,
        multi_valued=multi_valued,
        windows=windows,
        target_options=target_options,
        title=title,
    )
    return render_document(model)


#: A report that is not JSON is read whole again up to this size, to say on which line.
_WHOLE_FOR_ERRORS = 64 * 1024 * 1024


def load_report(path: str) -> dict[str, Any]:
    """A saved `healthd evaluate --format json` report, checked against the documented shape,
    read in bounded memory: the stages the charts do not draw are checked and dropped
    (:mod:`healthd.report.stream`)."""
    from healthd.report.stream import StreamError, read_report

    try:
        return read_report(path, open_regular)
    except OSError as exc:
        raise HealthdError(f"{path}: cannot read the report: {exc.strerror}") from None
    except ReportShapeError as exc:
        raise ReportShapeError(f"{path}: {exc}") from None
    except StreamError as exc:
        try:
            small = os.path.getsize(path) <= _WHOLE_FOR_ERRORS
        except OSError:
            small = False
        if not small or exc.reason == "nested too deeply":
            raise ReportShapeError(f"{path}: not JSON: {exc.reason}") from None
    return _load_whole(path)  # to say where it is not JSON (or read what ijson would not)


def _load_whole(path: str) -> dict[str, Any]:
    try:
        value = _json.loads(read_text(path))
    except OSError as exc:
        raise HealthdError(f"{path}: cannot read the report: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ReportShapeError(f"{path}: not UTF-8 text") from None
    except _json.BadJSON as exc:
        where = f"line {exc.lineno}, column {exc.colno}: " if exc.lineno is not None else ""
        raise ReportShapeError(f"{path}: {where}not JSON: {exc.reason}") from None
    try:
        return check_report(value)
    except ReportShapeError as exc:
        raise ReportShapeError(f"{path}: {exc}") from None


def _not_a_file(path: str) -> bool:
    """Whether ``path`` (links followed, /proc's too) is there and no regular file."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def check_writable(path: str) -> None:
    """Fail before any work when the HTML report could not be written to ``path``."""
    target = os.path.realpath(path)  # (a link is written through)
    directory = os.path.dirname(target)
    if os.path.isdir(path):
        raise HealthdError(f"{path}: cannot write the HTML report: is a directory")
    if _not_a_file(path):
        if not os.access(path, os.W_OK):  # a device or a pipe, written to as it is
            raise HealthdError(f"{path}: cannot write the HTML report: permission denied")
        return
    if not os.path.isdir(directory):
        raise HealthdError(f"{path}: cannot write the HTML report: no directory {directory}")
    if not os.access(directory, os.W_OK):
        raise HealthdError(f"{path}: cannot write the HTML report: permission denied")


def write_html(path: str, text: str | Iterable[str]) -> None:
    """Write ``text`` (or its pieces, one after another) through a temporary file beside
    ``path``, so a failed write leaves no half page. A symbolic link is written through (its
    file replaced, the link kept), and what is no regular file (``/dev/stdout``, a pipe) is
    written to as it is, never replaced by a file."""
    check_writable(path)
    pieces = [text] if isinstance(text, str) else text
    # (/dev/stdout on a pipe: its real path, pipe:[N], is no file name to write beside)
    direct = _not_a_file(path)
    target = path if direct else os.path.realpath(path)
    written = target if direct else f"{target}.tmp-{os.getpid()}"
    try:
        with open(written, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.writelines(pieces)
        if not direct:
            os.replace(written, target)
    except OSError as exc:
        if not direct:
            try:
                os.unlink(written)
            except OSError:
                pass
        raise HealthdError(f"{path}: cannot write the HTML report: {exc.strerror}") from None
