"""The state file: one SQLite database holding what a restart needs.

* ``events``: every event pulled so far, in the order the targets apply them (``seq``), each
  stored once per (source, id) so a source that reads the same history again cannot make a
  target replay or count it twice;
* ``probe_keys``: every key the events have held (a :class:`~healthd.probes.KeyCatalog`),
  written with the events, so a restart builds the probe set without reading every event;
* ``sources``: each source's cursor, event count and last status;
* ``people``: each source's identity records as of its last pull that gave them (a
  Backstage User's profile, CODEOWNERS' handles and e-mails), from which the reader's people
  table is built, so a restart reads as the run before it did;
* ``targets``: per target the fingerprint of its configuration, how many events of the log
  it has applied, the last results and its run counters (the replay's own state is kept
  beside a persistent shadow, :mod:`healthd.daemon.replay_store`; ``snapshot`` no longer
  holds a replay: it keeps the day's LLM tokens for ``max_llm_tokens_per_day``), and a
  ``dirty`` flag set *before* a persistent shadow is written and cleared in the same
  transaction that records the run, so an interrupted run is detected on restart (the shadow
  is then reset and everything replayed).

Every run is recorded in one transaction, with the rollback journal and ``synchronous=FULL``,
so the file is always either before or after a run.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from healthd._sqlite import transaction
from healthd.errors import HealthdError
from healthd.logging import get_logger
from healthd.model import ChangeEvent, Domain
from healthd.people import Person
from healthd.probes import KeyCatalog
from healthd.timeline import dumps_event, iter_timeline

SCHEMA_VERSION = "1"
log = get_logger("healthd.state")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    source TEXT NOT NULL,
    event_id TEXT NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (source, event_id)
);
CREATE INDEX IF NOT EXISTS events_by_id ON events (event_id);
CREATE TABLE IF NOT EXISTS probe_keys (
    seq INTEGER PRIMARY KEY,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    domain TEXT NOT NULL,
    multi INTEGER NOT NULL,
    UNIQUE (subject, predicate)
);
CREATE TABLE IF NOT EXISTS sources (
    name TEXT PRIMARY KEY,
    cursor TEXT,
    events_total INTEGER NOT NULL DEFAULT 0,
    up INTEGER,
    last_error TEXT
);
CREATE TABLE IF NOT EXISTS targets (
    name TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    dirty INTEGER NOT NULL DEFAULT 0,
    applied INTEGER NOT NULL DEFAULT 0,
    snapshot TEXT,
    results TEXT,
    runs_success INTEGER NOT NULL DEFAULT 0,
    runs_failure INTEGER NOT NULL DEFAULT 0,
    events_replayed INTEGER NOT NULL DEFAULT 0,
    last_run REAL,
    last_success REAL,
    last_result TEXT,
    last_error TEXT
);
CREATE TABLE IF NOT EXISTS people (
    source TEXT PRIMARY KEY,
    records TEXT NOT NULL
);
"""


_TABLES = {"meta", "events", "probe_keys", "sources", "targets", "people"}
_CHUNK = 500  # ids per lookup query
#: SQLite's answers for a file whose pages or header are not a database any more.
CORRUPT = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})


class StateError(HealthdError):
    """The state file cannot be opened or is not a healthd state file."""


@dataclass
class SourceRow:
    name: str
    cursor: str | None = None
    events_total: int = 0
    up: int | None = None
    last_error: str | None = None


@dataclass
class TargetRow:
    name: str
    fingerprint: str = ""
    dirty: bool = False
    applied: int = 0
    snapshot: dict[str, Any] | None = None
    results: dict[str, Any] | None = None
    runs_success: int = 0
    runs_failure: int = 0
    events_replayed: int = 0
    last_run: float | None = None
    last_success: float | None = None
    last_result: str | None = None
    last_error: str | None = None


@dataclass
class RunRecord:
    """What one run changes, written in one transaction."""

    events: list[tuple[str, ChangeEvent]] = field(default_factory=list)
    sources: list[SourceRow] = field(default_factory=list)
    targets: list[TargetRow] = field(default_factory=list)


@dataclass
class Stored:
    """What a runner starts from, read from the state file at once: the events' count (the
    events themselves are read when a replay needs them), every key they hold, and each
    source's and target's row."""

    event_count: int
    sources: dict[str, SourceRow]
    catalog: KeyCatalog
    targets: dict[str, TargetRow]
    people: dict[str, list[Person]] = field(default_factory=dict)


def state_path_problem(path: str) -> str | None:
    """Why a state file could not be opened or created at ``path`` (None when it can),
    found without writing anything: `check-config` says it as `run` would."""
    if path == ":memory:":
        return None
    problem = file_path_problem(path)
    if problem is None and os.path.exists(path):
        return _held_problem(path)
    return problem


def file_path_problem(path: str) -> str | None:
    """Why an SQLite file could not be opened or created at ``path``, its directories made
    (None when it can), found without writing anything."""
    if os.path.isdir(path):
        return "is a directory"
    if path.endswith(("/", os.sep)):
        return "names a directory (it ends with '/'): give the file's own name"
    if os.path.exists(path):
        if not os.path.isfile(path):
            return "not a regular file"
        if os.access(path, os.R_OK) and _read_only(path):
            return "on a read-only file system"
        if not os.access(path, os.R_OK | os.W_OK):
            return "permission denied"
        # SQLite writes its journal (or write-ahead log) beside the file, in its directory
        folder = os.path.dirname(os.path.realpath(path))
        if not os.access(folder, os.W_OK | os.X_OK):
            return f"cannot write beside it: permission denied in {folder}"
        return None
    ancestor = Path(path).resolve().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is not a directory"
    if _read_only(ancestor):
        return f"cannot create it: {ancestor} is on a read-only file system"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"cannot create it: permission denied in {ancestor}"
    return None


def _read_only(path: str | Path) -> bool:
    """Whether ``path`` is on a file system mounted read-only, which no permission lifts."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _held_problem(path: str) -> str | None:
    """Why the file at ``path`` is no healthd state (None for one, or an empty file), read
    without writing anything (the database opened read-only)."""
    if os.path.getsize(path) == 0:
        return None
    try:
        db = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return f"cannot read it: {exc}"
    try:
        return _tables_problem(db)
    except sqlite3.OperationalError:
        return None  # busy (a daemon writing it) or not openable: opening it will say
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorname", None) == "SQLITE_CORRUPT":
            return (
                f"corrupt ({exc}): restore it from a backup, or move it aside to start a new state"
            )
        return f"not an SQLite database ({exc})"
    finally:
        db.close()


def _tables_problem(db: sqlite3.Connection) -> str | None:
    """Why the database ``db`` is not a healthd state: another application's tables, or
    another schema version."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    foreign = sorted(tables - _TABLES)
    if foreign:
        return (
            f"not a healthd state file (it holds other tables: {', '.join(foreign[:5])}); "
            "point state_path at a new file"
        )
    if "meta" in tables:
        row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is not None and row[0] != SCHEMA_VERSION:
            return f"state schema {row[0]}, expected {SCHEMA_VERSION}"
    return None


class StateStore:
    def __init__(self, path: str, *, created: bool = False) -> None:
        """``created``: the file is empty because the daemon's lock just made it (no warning)."""
        self.path = path
        self._lock = threading.Lock()
        self._inode: tuple[int, int] | None = None
        problem = state_path_problem(path)
        if problem:
            raise StateError(f"{path}: cannot open state file: {problem}")
        try:
            if path != ":memory:":
                Path(path).resolve().parent.mkdir(parents=True, exist_ok=True)
                if not created and os.path.exists(path) and os.path.getsize(path) == 0:
                    log.warning("state file is empty: starting from a new state", state=path)
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            problem = _tables_problem(self._db)
            if problem:
                raise StateError(f"{path}: {problem}")
            self._db.execute("PRAGMA journal_mode=DELETE")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            if path != ":memory:":
                st = os.stat(path)
                self._inode = (st.st_dev, st.st_ino)
        except (sqlite3.Error, OSError) as exc:
            raise StateError(f"{path}: cannot open state file: {exc}") from exc

    # -- reading --------------------------------------------------------------------------

    def stored(self) -> Stored:
        """Everything a runner starts from (see :class:`Stored`)."""
        with self._reading():
            return Stored(
                self.event_count(),
                self.sources(),
                self.key_catalog(),
                self.targets(),
                self.people(),
            )

    def events(self) -> list[tuple[str, ChangeEvent]]:
        with self._reading():
            rows = self._db.execute("SELECT source, body FROM events ORDER BY seq").fetchall()
        if not rows:
            return []
        origin = f"{self.path} (events)"
        # one line at a time: two sources may use the same event id
        return [(source, next(iter_timeline([body], origin=origin))) for source, body in rows]

    def event_count(self) -> int:
        row = self._db.execute("SELECT count(*) FROM events").fetchone()
        return int(row[0])

    def iter_events(self, start: int = 0, stop: int | None = None) -> Iterator[ChangeEvent]:
        """The stored events from the ``start``-th to the ``stop``-th (from 0, ``stop``
        excluded), in order, read a chunk at a time."""
        origin = f"{self.path} (events)"
        left = -1 if stop is None else max(0, stop - start)
        if left == 0:
            return
        with self._reading():
            rows = self._db.execute(
                "SELECT seq, body FROM events ORDER BY seq LIMIT ? OFFSET ?",
                (_chunk(left), start),
            ).fetchall()
        while rows:
            # a chunk at a time, so repeated names and dependencies are kept once
            yield from iter_timeline(
                [body for _, body in rows],
                origin=origin,
                first_line=rows[0][0],  # an error names the stored event's seq
                unique_ids=False,
            )
            if left > 0:
                left -= len(rows)
                if left == 0:
                    return
            with self._reading():
                rows = self._db.execute(
                    "SELECT seq, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                    (rows[-1][0], _chunk(left)),
                ).fetchall()

    def event_id_at(self, position: int, stored: int | None = None) -> str | None:
        """The id of the ``position``-th stored event (from 1), None past the end;
        ``stored``: how many events are stored, when the caller knows.

        healthd numbers events 1, 2, ... as it stores them and removes none, so in a file
        whose numbers run from 1 to the count the ``position``-th is the one numbered
        ``position``: an index lookup, where counting rows up to it read the whole table
        (80 ms at 1M events, at every restart). Any other file is counted through."""
        db = self._db
        with self._reading():
            first = db.execute("SELECT min(seq) FROM events").fetchone()[0]
            last = db.execute("SELECT max(seq) FROM events").fetchone()[0]
            if first == 1 and last == (self.event_count() if stored is None else stored):
                row = db.execute(
                    "SELECT event_id FROM events WHERE seq = ?", (position,)
                ).fetchone()
            else:
                row = db.execute(
                    "SELECT event_id FROM events ORDER BY seq LIMIT 1 OFFSET ?", (position - 1,)
                ).fetchone()
        return str(row[0]) if row else None

    def stored_bodies(self, source: str, ids: Iterable[str]) -> dict[str, str]:
        """The stored body of each of ``ids`` the source delivered before (a unique index
        lookup: no id set is kept in memory)."""
        ids = list(ids)
        out: dict[str, str] = {}
        for i in range(0, len(ids), _CHUNK):
            part = ids[i : i + _CHUNK]
            marks = ",".join("?" * len(part))
            with self._reading():
                out.update(
                    self._db.execute(
                        "SELECT event_id, body FROM events "
                        f"WHERE source = ? AND event_id IN ({marks})",
                        (source, *part),
                    ).fetchall()
                )
        return out

    def stored_elsewhere(self, source: str, ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """Of ``ids``, each one another source delivered before: that source and the body
        stored (looked up by the id's index)."""
        ids = list(ids)
        out: dict[str, tuple[str, str]] = {}
        for i in range(0, len(ids), _CHUNK):
            part = ids[i : i + _CHUNK]
            marks = ",".join("?" * len(part))
            with self._reading():
                rows = self._db.execute(
                    "SELECT event_id, source, body FROM events INDEXED BY events_by_id "
                    f"WHERE event_id IN ({marks}) AND source != ? ORDER BY seq",
                    (*part, source),
                ).fetchall()
            for event_id, other, body in rows:
                out.setdefault(event_id, (other, body))
        return out

    def key_catalog(self) -> KeyCatalog:
        """Every key the stored events have held; built once from the events for a state
        file written before the catalog was kept."""
        done = self._db.execute("SELECT value FROM meta WHERE key = 'probe_keys'").fetchone()
        if done is None:
            catalog = KeyCatalog(self.iter_events())
            with self._writing():
                self._upsert_keys(catalog.rows(catalog.keys))
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('probe_keys', '1')")
            return catalog
        rows: list[tuple[str, str, Domain, bool]] = self._db.execute(
            "SELECT subject, predicate, domain, multi FROM probe_keys ORDER BY seq"
        ).fetchall()
        return KeyCatalog.from_rows(rows)

    def sources(self) -> dict[str, SourceRow]:
        rows = self._db.execute(
            "SELECT name, cursor, events_total, up, last_error FROM sources"
        ).fetchall()
        return {r[0]: SourceRow(*r) for r in rows}

    def people(self) -> dict[str, list[Person]]:
        """Each source's identity records, as its last pull that gave them did."""
        out: dict[str, list[Person]] = {}
        for source, records in self._db.execute("SELECT source, records FROM people"):
            out[source] = [
                Person(r["handle"], tuple(r["names"]), tuple(r["emails"]))
                for r in json.loads(records)
            ]
        return out

    def targets(self) -> dict[str, TargetRow]:
        rows = self._db.execute(
            "SELECT name, fingerprint, dirty, applied, snapshot, results, runs_success, "
            "runs_failure, events_replayed, last_run, last_success, last_result, last_error "
            "FROM targets"
        ).fetchall()
        out = {}
        for r in rows:
            out[r[0]] = TargetRow(
                r[0],
                r[1],
                bool(r[2]),
                r[3],
                json.loads(r[4]) if r[4] else None,
                json.loads(r[5]) if r[5] else None,
                *r[6:],
            )
        return out

    # -- writing --------------------------------------------------------------------------

    def record_events(
        self,
        events: list[tuple[str, ChangeEvent]],
        sources: list[SourceRow],
        keys: Sequence[tuple[str, str, Domain, bool]] = (),
        people: Mapping[str, Sequence[Person]] | None = None,
    ) -> None:
        """Store newly pulled events, the source cursors that follow them, the keys they
        added to the catalog and the identity records the sources gave (each source's
        replacing its earlier ones), together."""
        with self._writing():
            self._insert_events(events)
            self._upsert_sources(sources)
            self._upsert_keys(keys)
            self._db.executemany(
                "INSERT OR REPLACE INTO people (source, records) VALUES (?, ?)",
                [
                    (source, json.dumps([asdict(p) for p in records], sort_keys=True))
                    for source, records in (people or {}).items()
                ],
            )

    def _upsert_keys(self, keys: Iterable[tuple[str, str, Domain, bool]]) -> None:
        self._db.executemany(
            "INSERT INTO probe_keys (subject, predicate, domain, multi) VALUES (?,?,?,?) "
            "ON CONFLICT(subject, predicate) DO UPDATE SET domain = excluded.domain, "
            "multi = excluded.multi",
            [(s, p, d, int(m)) for s, p, d, m in keys],
        )

    def set_dirty(self, names: Iterable[str], fingerprints: dict[str, str]) -> None:
        """Mark targets whose persistent shadow is about to be written (committed first)."""
        names = list(names)
        if not names:
            return
        with self._writing():
            for name in names:
                self._db.execute(
                    "INSERT INTO targets (name, fingerprint, dirty) VALUES (?, ?, 1) "
                    "ON CONFLICT(name) DO UPDATE SET dirty = 1",
                    (name, fingerprints[name]),
                )

    def _insert_events(self, events: list[tuple[str, ChangeEvent]]) -> None:
        self._db.executemany(
            "INSERT OR IGNORE INTO events (source, event_id, body) VALUES (?, ?, ?)",
            ((source, event.id, dumps_event(event)) for source, event in events),
        )

    def _upsert_sources(self, sources: list[SourceRow]) -> None:
        for s in sources:
            self._db.execute(
                "INSERT INTO sources (name, cursor, events_total, up, last_error) "
                "VALUES (?,?,?,?,?) ON CONFLICT(name) DO UPDATE SET cursor=excluded.cursor,"
                " events_total=excluded.events_total, up=excluded.up, "
                "last_error=excluded.last_error",
                (s.name, s.cursor, s.events_total, s.up, s.last_error),
            )

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """A read of the state file; a failure becomes a :class:`StateError` naming the file
        (a corrupt one so said), so that it is never taken for a corrupt shadow."""
        try:
            yield
        except sqlite3.Error as exc:
            if _undecodable(exc):
                raise self._corrupt("a stored value is unreadable: not UTF-8 text") from exc
            if getattr(exc, "sqlite_errorname", None) not in CORRUPT:
                raise StateError(f"{self.path}: cannot read the state file: {exc}") from exc
            raise self._corrupt(str(exc)) from exc
        except (ValueError, KeyError, TypeError) as exc:
            # SQLite checks its pages, not what a row holds: a stored value gone bad is
            # read back as it is, and only reading it tells
            raise self._corrupt(
                f"a stored value is unreadable: {type(exc).__name__}: {exc}"
            ) from exc

    def _corrupt(self, why: str) -> StateError:
        return StateError(
            f"{self.path}: the state file is corrupt ({why}): restore it from a backup, "
            "or move it aside to start a new state"
        )

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One write transaction; any failure becomes a :class:`StateError` naming the file
        and the first error (a ROLLBACK failing after it does not mask it)."""
        with self._lock:
            self._check_same_file()
            try:
                with transaction(self._db, "BEGIN IMMEDIATE"):
                    yield
            except (sqlite3.Error, OSError) as exc:
                raise StateError(f"{self.path}: cannot write the state file: {exc}") from exc

    def _check_same_file(self) -> None:
        if self._inode is None:
            return
        try:
            st = os.stat(self.path)
        except OSError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self._inode:
            raise StateError(
                f"{self.path}: the state file was deleted or replaced while healthd ran; "
                "restart healthd to start from the file now there"
            )

    def run_history(self) -> list[dict[str, Any]]:
        """The recent runs the page at / lists, as :meth:`save_run_history` left them
        (oldest first); none when unreadable, which is said once."""
        with self._reading():
            try:
                row = self._db.execute("SELECT value FROM meta WHERE key='run_history'").fetchone()
            except sqlite3.Error as exc:
                if not _undecodable(exc):
                    raise
                row = ("",)  # bytes gone bad: unreadable, as bad JSON is
        if row is None:
            return []
        try:
            runs = json.loads(row[0])
        except ValueError:
            runs = None
        if not isinstance(runs, list):
            log.warning(
                "the state file's run history is unreadable; it starts anew", state=self.path
            )
            return []
        return [run for run in runs if isinstance(run, dict)]

    def save_run_history(self, runs: Sequence[Mapping[str, Any]]) -> None:
        with self._writing():
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('run_history', ?)", (json.dumps(list(runs)),)
            )

    def record_run(self, record: RunRecord) -> None:
        with self._writing():
            self._insert_events(record.events)
            self._upsert_sources(record.sources)
            for t in record.targets:
                self._db.execute(
                    "INSERT OR REPLACE INTO targets (name, fingerprint, dirty, applied, snapshot,"
                    " results, runs_success, runs_failure, events_replayed, last_run, "
                    "last_success, last_result, last_error) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        t.name,
                        t.fingerprint,
                        int(t.dirty),
                        t.applied,
                        json.dumps(t.snapshot) if t.snapshot is not None else None,
                        json.dumps(t.results) if t.results is not None else None,
                        t.runs_success,
                        t.runs_failure,
                        t.events_replayed,
                        t.last_run,
                        t.last_success,
                        t.last_result,
                        t.last_error,
                    ),
                )

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _undecodable(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is Python's refusal of a stored text that is no UTF-8 (SQLite checks
    its pages, not what a row holds: a value gone bad on disk is read back as it is). Its
    message quotes the whole value, which may be megabytes."""
    return getattr(exc, "sqlite_errorname", None) is None and str(exc).startswith(
        "Could not decode to UTF-8"
    )


def _chunk(left: int) -> int:
    return 1000 if left < 0 else min(left, 1000)
