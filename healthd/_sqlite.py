"""One write transaction on a connection opened with ``isolation_level=None``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def transaction(db: sqlite3.Connection, begin: str = "BEGIN") -> Iterator[None]:
    """BEGIN ... COMMIT, or ROLLBACK when the block raises, so a failed write leaves nothing
    half done. ``begin="BEGIN IMMEDIATE"`` takes the write lock up front."""
    db.execute(begin)
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
