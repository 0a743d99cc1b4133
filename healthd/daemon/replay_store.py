"""A replay's state kept beside its persistent shadow, so a restart resumes without the events.

In the shadow's own SQLite database (tables ``healthd_*``), written in the transaction that
commits the shadow's batch with its checkpoint, so a kill -9 leaves both as they were at one
commit:

* ``healthd_truth_ops``: ground truth as each key's own operations (value, event time,
  assert or end, domain, reason, dependencies), appended as events arrive;
* ``healthd_truth_keys``: per key whether it is multi-valued and asserted, and its values
  with their domains; ``healthd_truth_deps``: which key depends on which;
* ``healthd_probes``: each probe's last answer and score, rewritten only when they changed;
* ``healthd_served_keys``: per probe, the keys its answer serves besides its own (the
  replay's index from a fact's key to the answers that serve it), rewritten with the answer;
* ``healthd_values``: per (key, value) whether a stage saw it current, ditto.

The counters (stage index, counts, forgetting checks due) are small and go in the checkpoint.
A restart reads the rows per key (nothing is parsed, folded or asked again), not the
events; a key's operations, which of its values stages saw current, and a probe's answer and
score are read when a new event or a read first needs them (of the probes, only the index
of served keys and when each score goes stale are read at once).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from datetime import datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

from healthd._packed import to_micros
from healthd.evaluator import Replay
from healthd.memory import Memory
from healthd.model import ChangeEvent, FactKey, RetrievedFact
from healthd.probes import ProbeSet
from healthd.scoring import ProbeScore
from healthd.truth import GroundTruth, Operation, OperationRow, StoredKey

_SCHEMA = """
CREATE TABLE IF NOT EXISTS healthd_truth_ops (
    seq INTEGER PRIMARY KEY,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    at TEXT NOT NULL,
    assert INTEGER NOT NULL,
    value TEXT NOT NULL,
    domain TEXT NOT NULL,
    end_kind TEXT,
    reason TEXT,
    depends_on TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS healthd_truth_ops_key ON healthd_truth_ops (subject, predicate);
CREATE TABLE IF NOT EXISTS healthd_truth_keys (
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    multi INTEGER NOT NULL,
    asserted INTEGER NOT NULL,
    vals TEXT NOT NULL,
    PRIMARY KEY (subject, predicate)
);
CREATE TABLE IF NOT EXISTS healthd_truth_deps (
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    dep_subject TEXT NOT NULL,
    dep_predicate TEXT NOT NULL,
    PRIMARY KEY (subject, predicate, dep_subject, dep_predicate)
);
CREATE TABLE IF NOT EXISTS healthd_probes (
    probe_id TEXT PRIMARY KEY,
    answer TEXT,
    cells TEXT,
    stale_after TEXT
);
CREATE TABLE IF NOT EXISTS healthd_served_keys (
    probe_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    PRIMARY KEY (probe_id, subject, predicate)
);
CREATE TABLE IF NOT EXISTS healthd_values (
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    value TEXT NOT NULL,
    current INTEGER NOT NULL,
    PRIMARY KEY (subject, predicate, value)
);
"""
V = TypeVar("V")

_TABLES = (
    "healthd_truth_ops",
    "healthd_truth_keys",
    "healthd_truth_deps",
    "healthd_probes",
    "healthd_served_keys",
    "healthd_values",
)


@runtime_checkable
class StateHolding(Protocol):
    """A persistent memory that keeps a caller's tables in its own database, committed with
    its writes (the reference memory)."""

    def state_db(self) -> sqlite3.Connection: ...


class ReplayStore:
    """Writes what changed in a replay since the last save; reads a replay back."""

    def __init__(self, memory: StateHolding) -> None:
        self._memory = memory
        self._keys: dict[FactKey, None] = {}  # keys given operations since the last save
        self._saved_seq = 0
        self._answers: dict[str, tuple[RetrievedFact, ...]] = {}
        self._scores: dict[str, ProbeScore] = {}
        # healthd_served_keys holds every answer's keys (else the next save rewrites it)
        self._served_complete = True
        self._was_current = _StoredValues()  # as saved, per key
        # the truth that keeps for this store the operations pushed since its last save
        self._keeping: GroundTruth | None = None
        db = memory.state_db()
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)  # one by one: executescript would commit a batch

    def reset(self) -> None:
        """Forget everything (a fresh replay into a reset shadow)."""
        db = self._memory.state_db()
        for table in _TABLES:
            db.execute(f"DELETE FROM {table}")
        self._keys.clear()
        self._saved_seq = 0
        self._answers, self._scores, self._was_current = {}, {}, _StoredValues()
        self._served_complete = True
        self._keeping = None

    def note(self, event: ChangeEvent) -> None:
        """An event was replayed: its keys have operations to save."""
        for key in event.keys:
            self._keys[key] = None

    def note_all(self, truth: GroundTruth) -> None:
        """Everything is to be saved (a replay restored some other way)."""
        self._keys.update(dict.fromkeys(truth.keys()))

    def save(self, replay: Replay) -> dict[str, Any]:
        """Write what changed since the last save into the open batch; the counters for the
        checkpoint the caller commits it with."""
        db = self._memory.state_db()
        truth = replay.truth
        ops: list[tuple[Any, ...]] = []
        keys: list[tuple[str, str, int, int, str]] = []
        deps: set[tuple[str, str, str, str]] = set()
        top = self._saved_seq
        for key in self._keys:
            values = truth.values(key)
            keys.append(
                (
                    key.subject,
                    key.predicate,
                    int(truth.multi_valued(key)),
                    int(truth.asserted(key)),
                    json.dumps(list(values.items())),
                )
            )
            # those pushed since the last save, without reading the key's whole history
            # out of truth's packed log (once truth keeps them: from the second save on)
            pushed = truth.pushed_since_kept(key) if truth is self._keeping else None
            if pushed is None:
                pushed = [op for op in truth.operations(key) if op.seq > self._saved_seq]
            for op in pushed:
                ops.append(_op_row(key, op))
                top = max(top, op.seq)
                deps.update((*key, *dep) for dep in op.depends_on)
        db.executemany("INSERT INTO healthd_truth_ops VALUES (?,?,?,?,?,?,?,?,?,?)", ops)
        db.executemany("INSERT OR REPLACE INTO healthd_truth_keys VALUES (?,?,?,?,?)", keys)
        db.executemany("INSERT OR IGNORE INTO healthd_truth_deps VALUES (?,?,?,?)", sorted(deps))
        answers, scores = replay.answers, replay.scores
        saved_answers, saved_scores = self._answers, self._scores
        # of a store's read-back maps, only the probes read back (the rest are as stored)
        answered = {
            pid for pid, a in _in_memory(answers).items() if saved_answers.get(pid) is not a
        }
        changed = answered | {
            pid for pid, sc in _in_memory(scores).items() if saved_scores.get(pid) is not sc
        }
        db.executemany(
            "INSERT OR REPLACE INTO healthd_probes VALUES (?,?,?,?)",
            [_probe_row(pid, answers.get(pid), scores.get(pid)) for pid in sorted(changed)],
        )
        self._save_served_keys(replay.answer_keys, answered)
        for pid in changed:
            if pid in answers:
                saved_answers[pid] = answers[pid]
            if pid in scores:
                saved_scores[pid] = scores[pid]
        saved = self._was_current
        moved: list[tuple[FactKey, str, bool]] = []
        if replay.mode == "incremental":
            # the keys whose looks changed since the last save, and those given operations
            # (all of them when the replay was restored some other way: note_all)
            for k in replay.looks_changed | self._keys.keys():
                seen = replay.looked_at(k)
                if seen:
                    stored = saved.get(k)
                    moved.extend((k, v, c) for v, c in seen.items() if stored.get(v) != c)
        else:
            moved = [
                (k, v, c) for (k, v), c in replay.was_current.items() if saved.get(k).get(v) != c
            ]
        db.executemany(
            "INSERT OR REPLACE INTO healthd_values VALUES (?,?,?,?)",
            [(k.subject, k.predicate, v, int(c)) for k, v, c in moved],
        )
        for k, v, c in moved:
            saved.get(k)[v] = c
        self._keys.clear()
        replay.forget_looks_changed()
        self._saved_seq = top
        truth.keep_pushed()  # every operation so far is written
        self._keeping = truth
        latest = truth.latest.isoformat() if truth.latest is not None else None
        return {**replay.counters(), "truth_seq": top, "latest": latest, "served_keys": 1}

    def _save_served_keys(
        self, answer_keys: Mapping[str, frozenset[FactKey]], answered: set[str]
    ) -> None:
        db = self._memory.state_db()
        if not self._served_complete:
            db.execute("DELETE FROM healthd_served_keys")
            answered = set(answer_keys)
            self._served_complete = True
        else:  # a probe whose keys this process has not taken keeps its stored rows
            answered = {pid for pid in answered if pid in answer_keys}
        db.executemany(
            "DELETE FROM healthd_served_keys WHERE probe_id = ?",
            [(pid,) for pid in sorted(answered)],
        )
        db.executemany(
            "INSERT INTO healthd_served_keys VALUES (?,?,?)",
            [(pid, *key) for pid in sorted(answered) for key in sorted(answer_keys[pid])],
        )

    def release(self, replay: Replay, keep: int) -> int:
        """Let the replay's truth go of the operations of all but ``keep`` keys, read back
        from the stored rows when next needed. Only once :meth:`save` stored every key's
        operations (else nothing is let go)."""
        if self._keys:
            return 0
        return replay.truth.release(keep, self._operations)

    def _operations(self, key: FactKey) -> list[OperationRow]:
        """A key's stored operations (read when truth first needs them)."""
        parse = datetime.fromisoformat
        rows = self._memory.state_db().execute(
            "SELECT at, seq, assert, value, domain, end_kind, reason, depends_on "
            "FROM healthd_truth_ops WHERE subject = ? AND predicate = ?",
            key,
        )
        out: list[OperationRow] = []
        for at, seq, assert_, value, domain, end_kind, reason, depends in rows:
            on = tuple(FactKey(s, p) for s, p in json.loads(depends)) if depends else ()
            out.append((parse(at), seq, assert_ == 1, value, domain, end_kind, reason, on))
        return out

    def load(
        self, memory: Memory, probes: ProbeSet, counters: dict[str, Any], **options: Any
    ) -> Replay:
        """The replay saved last (``counters`` from the checkpoint that committed it)."""
        db = self._memory.state_db()
        rows = db.execute(
            "SELECT subject, predicate, multi, asserted, vals FROM healthd_truth_keys"
        ).fetchall()
        # one FactKey per key, shared by every row that names it; a key's values are
        # decoded when first asked for
        fact_keys = {(s, p): FactKey(s, p) for s, p, _, _, _ in rows}
        keys: list[StoredKey] = [
            (fact_keys[s, p], m == 1, a == 1, vals) for s, p, m, a, vals in rows
        ]
        depends = [
            (_fact_key(fact_keys, s, p), _fact_key(fact_keys, ds, dp))
            for s, p, ds, dp in db.execute("SELECT * FROM healthd_truth_deps")
        ]
        latest = counters.get("latest")
        truth = GroundTruth.from_stored(
            keys,
            depends,
            int(counters["truth_seq"]),
            datetime.fromisoformat(latest) if latest else None,
            self._operations,
        )
        probe_rows = _StoredProbes(self._memory.state_db)
        lazy = "served_keys" in counters and options.get("mode", "incremental") == "incremental"
        served: dict[FactKey, set[str]] | None = None
        stale: list[tuple[int, str]] | None = None
        if lazy:
            served = {}
            for probe_id, s, p in db.execute("SELECT * FROM healthd_served_keys"):
                served.setdefault(_fact_key(fact_keys, s, p), set()).add(probe_id)
            parse = datetime.fromisoformat
            stale = [
                (to_micros(parse(at)), probe_id)
                for probe_id, at in db.execute(
                    "SELECT probe_id, stale_after FROM healthd_probes WHERE stale_after IS NOT NULL"
                )
            ]
        else:  # saved by an older healthd, or scored in full: every probe's rows at once
            probe_rows.read_all()
        # which values stages saw current: a key's rows are read when a run first touches
        # the key (most of a long history's keys are not touched again soon), once for the
        # replay and this store (the replay reads a key's before a save writes any)
        was_current = _StoredValues(self._values_of)
        replay = Replay.resume(
            memory,
            probes,
            truth,
            counters,
            was_current,
            probe_rows.answers if lazy else probe_rows.answers.data,
            probe_rows.scores if lazy else probe_rows.scores.data,
            served_keys=served,
            stale=stale,
            **options,
        )
        self._keys.clear()
        self._saved_seq = int(counters["truth_seq"])
        # as read back: what a save compares the replay's answers and scores with
        self._answers, self._scores = probe_rows.read_answers, probe_rows.read_scores
        self._served_complete = "served_keys" in counters
        self._was_current = was_current
        return replay

    def _values_of(self, key: FactKey) -> dict[str, bool]:
        rows = self._memory.state_db().execute(
            "SELECT value, current FROM healthd_values WHERE subject = ? AND predicate = ?", key
        )
        return {value: current == 1 for value, current in rows}


class _StoredProbes:
    """The probes' stored answers and scores (``healthd_probes``), each probe's row read when
    its answer or score is first asked for, or every row at once (:meth:`read_all`)."""

    def __init__(self, db: Callable[[], sqlite3.Connection]) -> None:
        self._db = db  # the memory's, asked at each read (it refuses after a failed batch)
        self._asked: set[str] = set()
        self._whole = False
        self.read_answers: dict[str, tuple[RetrievedFact, ...]] = {}  # as read back
        self.read_scores: dict[str, ProbeScore] = {}
        self.answers: _ReadBack[tuple[RetrievedFact, ...]] = _ReadBack(self)
        self.scores: _ReadBack[ProbeScore] = _ReadBack(self)

    def read(self, probe_id: str) -> None:
        if self._whole or probe_id in self._asked:
            return
        self._asked.add(probe_id)
        row = (
            self._db()
            .execute(
                "SELECT answer, cells, stale_after FROM healthd_probes WHERE probe_id = ?",
                (probe_id,),
            )
            .fetchone()
        )
        if row is not None:
            answer, cells, stale_after = row
            self._take(
                probe_id,
                None if answer is None else json.loads(answer),
                None if cells is None else json.loads(cells),
                stale_after,
            )

    def read_all(self) -> None:
        if self._whole:
            return
        self._whole = True
        rows = [
            row
            for row in self._db().execute(
                "SELECT probe_id, answer, cells, stale_after FROM healthd_probes"
            )
            if row[0] not in self._asked
        ]
        answers = iter(_decode(row[1] for row in rows if row[1] is not None))
        cells = iter(_decode(row[2] for row in rows if row[2] is not None))
        for probe_id, answer, cell, stale_after in rows:
            self._take(
                probe_id,
                None if answer is None else next(answers),
                None if cell is None else next(cells),
                stale_after,
            )

    def _take(
        self, probe_id: str, answer: list[Any] | None, cells: list[Any] | None, stale: str | None
    ) -> None:
        # a replay that has set a probe's answer or score since keeps its own
        if answer is not None:
            facts = self.read_answers[probe_id] = tuple(_retrieved(f) for f in answer)
            self.answers.data.setdefault(probe_id, facts)
        if cells is not None:
            score = self.read_scores[probe_id] = ProbeScore(
                tuple((i, n) for i, n in cells), datetime.fromisoformat(stale) if stale else None
            )
            self.scores.data.setdefault(probe_id, score)


class _ReadBack(MutableMapping[str, V]):
    """Probe id to a probe's answer or score, read back from :class:`_StoredProbes` when first
    asked for; going through every entry reads the rest first."""

    def __init__(self, rows: _StoredProbes) -> None:
        self.data: dict[str, V] = {}  # read back or set since
        self._rows = rows

    def __getitem__(self, probe_id: str) -> V:
        data = self.data
        if probe_id not in data:
            self._rows.read(probe_id)
        return data[probe_id]

    def get(self, probe_id: str, default: Any = None) -> Any:
        data = self.data
        if probe_id not in data:
            self._rows.read(probe_id)
        return data.get(probe_id, default)

    def __contains__(self, probe_id: object) -> bool:
        data = self.data
        if probe_id not in data and isinstance(probe_id, str):
            self._rows.read(probe_id)
        return probe_id in data

    def __setitem__(self, probe_id: str, value: V) -> None:
        self.data[probe_id] = value

    def __delitem__(self, probe_id: str) -> None:
        self._rows.read(probe_id)
        del self.data[probe_id]

    def __iter__(self) -> Iterator[str]:
        self._rows.read_all()
        return iter(self.data)

    def __len__(self) -> int:
        self._rows.read_all()
        return len(self.data)

    def clear(self) -> None:
        self._rows.read_all()
        self.data.clear()

    def read_all(self) -> None:
        self._rows.read_all()


def _in_memory(mapping: Mapping[str, V]) -> Mapping[str, V]:
    """What of ``mapping`` is held in memory (all of it, unless it is read back)."""
    return mapping.data if isinstance(mapping, _ReadBack) else mapping


class _StoredValues:
    """Per key, which of its values stages saw current, as stored: a key's rows are read
    when the key is first asked for, then kept (and kept in step by the caller, which
    writes into what :meth:`get` returns as it stores more)."""

    def __init__(self, read: Callable[[FactKey], dict[str, bool]] | None = None) -> None:
        self._read = read  # None: nothing is stored yet
        self._known: dict[FactKey, dict[str, bool]] = {}

    def get(self, key: FactKey) -> dict[str, bool]:
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = self._read(key) if self._read is not None else {}
        return known


def _decode(texts: Iterable[str]) -> list[Any]:
    """Each of many JSON texts, parsed in one call (a call per text costs more than its
    parse when the texts are short, as a probe's cells are)."""
    return json.loads("[" + ",".join(texts) + "]")  # type: ignore[no-any-return]


def _fact_key(known: dict[tuple[str, str], FactKey], subject: str, predicate: str) -> FactKey:
    key = known.get((subject, predicate))
    if key is None:
        key = known[subject, predicate] = FactKey(subject, predicate)
    return key


def _op_row(key: FactKey, op: Operation) -> tuple[Any, ...]:
    deps = json.dumps([[d.subject, d.predicate] for d in op.depends_on]) if op.depends_on else ""
    return (
        op.seq,
        key.subject,
        key.predicate,
        op.at.isoformat(),
        int(op.assert_),
        op.value,
        op.domain,
        op.end_kind,
        op.reason,
        deps,
    )


def _probe_row(
    probe_id: str, answer: tuple[RetrievedFact, ...] | None, score: ProbeScore | None
) -> tuple[str, str | None, str | None, str | None]:
    return (
        probe_id,
        None if answer is None else json.dumps([_fact_json(f) for f in answer]),
        None if score is None else json.dumps(score.cells),
        None if score is None or score.stale_after is None else score.stale_after.isoformat(),
    )


def _fact_json(fact: RetrievedFact) -> list[Any]:
    return [
        fact.subject,
        fact.predicate,
        fact.value,
        fact.domain,
        fact.record_id,
        fact.written_at.isoformat(),
        fact.validated_at.isoformat() if fact.validated_at else None,
        sorted(fact.flags),
    ]


def _retrieved(row: list[Any]) -> RetrievedFact:
    subject, predicate, value, domain, record_id, written, validated, flags = row
    return RetrievedFact(
        subject,
        predicate,
        value,
        domain,
        record_id,
        datetime.fromisoformat(written),
        datetime.fromisoformat(validated) if validated else None,
        frozenset(flags),
    )
