"""Write transactions on a connection opened with ``isolation_level=None``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType


class transaction:
    """BEGIN ... COMMIT, or ROLLBACK when the block raises, so a failed write leaves nothing
    half done. ``begin="BEGIN IMMEDIATE"`` takes the write lock up front. The error raised is
    the first one: a ROLLBACK that fails too (a full disk) does not mask it.

    A class rather than a generator: the reference memory enters one per event applied."""

    __slots__ = ("_begin", "_db")

    def __init__(self, db: sqlite3.Connection, begin: str = "BEGIN") -> None:
        self._db = db
        self._begin = begin

    def __enter__(self) -> None:
        self._db.execute(self._begin)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if kind is not None:
            _quiet(self._db, "ROLLBACK")
            return
        try:
            self._db.execute("COMMIT")
        except BaseException:
            _quiet(self._db, "ROLLBACK")
            raise


@contextmanager
def savepoint(db: sqlite3.Connection, name: str = "healthd_step") -> Iterator[None]:
    """A nested unit inside an open transaction: undone alone when the block raises."""
    db.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        _quiet(db, f"ROLLBACK TO {name}")
        _quiet(db, f"RELEASE {name}")
        raise
    db.execute(f"RELEASE {name}")


def _quiet(db: sqlite3.Connection, statement: str) -> None:
    if db.in_transaction:
        try:
            db.execute(statement)
        except sqlite3.Error:
            pass
