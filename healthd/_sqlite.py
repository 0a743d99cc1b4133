"""Write transactions on a connection opened with ``isolation_level=None``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def transaction(db: sqlite3.Connection, begin: str = "BEGIN") -> Iterator[None]:
    """BEGIN ... COMMIT, or ROLLBACK when the block raises, so a failed write leaves nothing
    half done. ``begin="BEGIN IMMEDIATE"`` takes the write lock up front. The error raised is
    the first one: a ROLLBACK that fails too (a full disk) does not mask it."""
    db.execute(begin)
    try:
        yield
    except BaseException:
        _quiet(db, "ROLLBACK")
        raise
    try:
        db.execute("COMMIT")
    except BaseException:
        _quiet(db, "ROLLBACK")
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
