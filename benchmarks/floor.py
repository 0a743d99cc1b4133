"""An independent floor for `healthd evaluate --target reference`: the essential work per
event, and the same final metrics, written with nothing but the standard library
(``sqlite3``, ``json``, ``bisect``; no healthd code is imported).

Per timeline line it parses the JSON and its timestamp, then:

* logs the event (a row in a private temporary SQLite file, like healthd's);
* decides what is current: each key keeps its operations in event-time order (arrival
  order breaks ties) and folds them into intervals of held values: an assertion opens its
  value (or re-validates it if held), replacing the value held (keys are single-valued); an
  end closes its value; an interval whose opening assertion names ``depends_on`` keys ends
  at the first instant after it at which one of them was left with no value. An operation
  landing after every other one of its key is folded in alone; a late one folds the key
  again from the start, and a key whose removal instants change has its dependents folded
  again;
* writes the records: the key's held values as active rows (value, validation time, soft
  expiry and purge at the memory's TTL and grace), ended when no longer held;
* answers the probes of the keys it folded (one indexed select of the key's active,
  unpurged rows), and scores forgetting: a value that stopped being current at stage j and
  is not current again at stage j + 3 is forgotten if the key's answer then omits it.

At the end it answers every asserted key's probe at the newest event time and computes
healthd's six metrics from the answers and the fold (DESIGN.md's definitions), per domain.
healthd's reference memory folds and forgets by the same rules, so its final metrics must be
these; ``bench_scale.py --check`` compares them.

Commits are batched (one per 1,000 events), as a throw-away database allows.

What it does NOT do, so healthd's extra cost over it is what those are worth: no
multi-valued keys, no dependency cycles, no metadata filters or full-text index, no
supersession chains or history of ended records, no staleness heap (the final metrics are
computed once, not per stage), no report.

    python benchmarks/floor.py TIMELINE.jsonl      # prints one JSON line: counts, metrics
"""

from __future__ import annotations

import bisect
import json
import sqlite3
import sys
from datetime import UTC, datetime, timedelta

DAY = 86_400_000_000  # microseconds
MICROSECOND = timedelta(microseconds=1)
WINDOW = {"ownership": 30 * DAY, "tech": 90 * DAY, "decision": 180 * DAY, "requirement": 365 * DAY}
# the reference memory's default TTLs (equal to the staleness windows), in seconds as it
# keeps them: its expiry instants are float seconds, compared as floats
TTL = {domain: window / 1_000_000 for domain, window in WINDOW.items()}
GRACE = 1.0  # purged at TTL * (1 + GRACE) after the last validation
FORGET_AFTER = 3  # stages
TOP_K = 5
DOMAINS = ("tech", "ownership", "decision", "requirement")

SCHEMA = """
CREATE TABLE log (id INTEGER PRIMARY KEY, event_id TEXT, subject TEXT, predicate TEXT,
                  at INTEGER, kind TEXT, value TEXT);
CREATE TABLE records (id INTEGER PRIMARY KEY, subject TEXT, predicate TEXT, value TEXT,
                      domain TEXT, created_at INTEGER, validated_at INTEGER,
                      expires_at REAL, purge_at REAL, state TEXT);
CREATE INDEX records_live ON records(subject, predicate) WHERE state = 'active';
"""
ANSWER = (
    "SELECT value, domain, validated_at, expires_at FROM records WHERE subject = ?"
    " AND predicate = ? AND state = 'active' AND purge_at > ?"
    " ORDER BY expires_at <= ?, validated_at DESC, id DESC LIMIT ?"
)

# an interval: [start, end, value, domain, validated, validating domain, cut]
START, END, VALUE, DOMAIN, VALIDATED, VDOMAIN, CUT = range(7)


class Key:
    __slots__ = ("asserted", "cut_until", "held", "intervals", "last", "last_of", "ops", "removals")

    def __init__(self) -> None:
        self.ops: list[tuple] = []  # (at, seq, asserts, value, domain, depends_on)
        self.intervals: list[list] = []
        self.held: dict[str, list] = {}
        self.last_of: dict[str, list] = {}  # each value's latest interval
        self.last: tuple[int, int] | None = None
        self.cut_until: int | None = None
        self.removals: list[int] = []
        self.asserted = False

    def resumable(self, at: int, seq: int) -> bool:
        return (self.last is None or self.last < (at, seq)) and (
            self.cut_until is None or self.cut_until <= at
        )


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _at(text: str) -> int:
    """Microseconds since the epoch, exactly."""
    return (datetime.fromisoformat(text.replace("Z", "+00:00")) - EPOCH) // MICROSECOND


class Floor:
    def __init__(self) -> None:
        self.db = sqlite3.connect("", isolation_level=None)
        self.db.execute("PRAGMA journal_mode=MEMORY")
        self.db.executescript(SCHEMA)
        self.keys: dict[tuple[str, str], Key] = {}
        self.dependents: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self.probe_domain: dict[tuple[str, str], str] = {}  # the domain a key was first seen with
        self.was_current: dict[tuple[tuple[str, str], str], bool] = {}
        self.live: dict[tuple[str, str], set[str]] = {}
        self.due: dict[int, list[tuple[tuple[str, str], str, str]]] = {}
        self.forget = {d: [0, 0] for d in ("all", *DOMAINS)}  # due, forgotten
        self.latest = 0
        self.seq = 0
        self.right = self.wrong = 0

    # -- folding --------------------------------------------------------------------------

    def _first_cut(self, deps: tuple, at: int) -> int | None:
        cut = None
        for dep in deps:
            state = self.keys.get(dep)
            removals = state.removals if state is not None else ()
            index = bisect.bisect_right(removals, at)
            if index < len(removals) and (cut is None or removals[index] < cut):
                cut = removals[index]
        return cut

    def _step(self, key: Key, op: tuple) -> None:
        at, seq, asserts, value, domain, deps = op
        key.last = (at, seq)
        held = key.held
        for other, interval in list(held.items()):
            if interval[CUT] is not None and interval[CUT] <= at:
                interval[END] = interval[CUT]
                del held[other]
        if asserts:
            interval = held.get(value)
            if interval is not None:
                if at > interval[VALIDATED]:
                    interval[VALIDATED], interval[VDOMAIN] = at, domain
                return
            for interval in held.values():
                interval[END] = at
            held.clear()
            interval = [
                at,
                None,
                value,
                domain,
                at,
                domain,
                self._first_cut(deps, at) if deps else None,
            ]
            held[value] = interval
            key.intervals.append(interval)
            key.last_of[value] = interval
        elif value in held:
            held.pop(value)[END] = at

    def _close(self, key: Key) -> None:
        for value, interval in list(key.held.items()):
            cut = interval[CUT]
            if cut is not None:
                interval[END] = cut
                del key.held[value]
                if key.cut_until is None or cut > key.cut_until:
                    key.cut_until = cut

    @staticmethod
    def _removals(intervals: list[list]) -> list[int]:
        """Ends of the key's covered spans (intervals are in order of start)."""
        out: list[int] = []
        span_end = None
        for interval in intervals:
            if span_end is not None and interval[START] > span_end:
                out.append(span_end)
                span_end = None
            if interval[END] is None:
                return out
            if span_end is None or interval[END] > span_end:
                span_end = interval[END]
        if span_end is not None:
            out.append(span_end)
        return out

    def _fold(self, name: tuple[str, str], fresh: list[tuple] | None) -> bool:
        """Fold ``fresh`` operations in (None: the whole log again); True when the key's
        removal instants changed."""
        key = self.keys[name]
        was_held = bool(key.held)
        if fresh is not None:
            for op in fresh:
                self._step(key, op)
            self._close(key)
            if was_held and key.held:
                return False
        else:
            key.intervals, key.held, key.last_of = [], {}, {}
            key.last = key.cut_until = None
            for op in key.ops:
                self._step(key, op)
            self._close(key)
        removals = self._removals(key.intervals)
        if removals == key.removals:
            return False
        key.removals = removals
        return True

    # -- records --------------------------------------------------------------------------

    def _write(self, name: tuple[str, str], before: dict[str, int], created: int) -> None:
        execute = self.db.execute
        held = self.keys[name].held
        for value in before.keys() - held.keys():
            execute(
                "UPDATE records SET state = 'ended' WHERE subject = ? AND predicate = ?"
                " AND value = ? AND state = 'active'",
                (*name, value),
            )
        for value, interval in held.items():
            validated = interval[VALIDATED]
            if before.get(value) == validated:
                continue
            ttl = TTL[interval[VDOMAIN]]
            seconds = validated / 1_000_000
            row = (validated, seconds + ttl, seconds + ttl * (1.0 + GRACE))
            if value in before:
                execute(
                    "UPDATE records SET validated_at = ?, expires_at = ?, purge_at = ?"
                    " WHERE subject = ? AND predicate = ? AND value = ? AND state = 'active'",
                    (*row, *name, value),
                )
            else:
                execute(
                    "INSERT INTO records (subject, predicate, value, domain, created_at,"
                    " validated_at, expires_at, purge_at, state)"
                    " VALUES (?,?,?,?,?,?,?,?, 'active')",
                    (*name, value, interval[DOMAIN], created, *row),
                )

    def answer(self, name: tuple[str, str], now: int) -> list[tuple]:
        seconds = now / 1_000_000
        return self.db.execute(ANSWER, (*name, seconds, seconds, TOP_K)).fetchall()

    # -- one event ------------------------------------------------------------------------

    def apply(self, event: dict, stage: int) -> None:
        kind = event["type"]
        fact = event["fact"]
        at = _at(event["timestamp"])
        self.latest = max(self.latest, at)
        name = (fact["subject"], fact["predicate"])
        self.db.execute(
            "INSERT INTO log (event_id, subject, predicate, at, kind, value) VALUES (?,?,?,?,?,?)",
            (event["id"], *name, at, kind, fact["value"]),
        )
        deps = tuple((d["subject"], d["predicate"]) for d in event.get("depends_on") or ())
        ops: list[tuple[tuple[str, str], tuple]] = []
        named: list[tuple[tuple[str, str], str]] = []
        previous = event.get("previous")
        if previous is not None:
            before_name = (previous["subject"], previous["predicate"])
            self.probe_domain.setdefault(before_name, previous["domain"])
            named.append((before_name, previous["value"]))
            self.seq += 1
            ops.append(
                (before_name, (at, self.seq, False, previous["value"], previous["domain"], ()))
            )
        self.probe_domain.setdefault(name, fact["domain"])
        named.append((name, fact["value"]))
        self.seq += 1
        asserts = kind != "invalidated"
        ops.append(
            (name, (at, self.seq, asserts, fact["value"], fact["domain"], deps if asserts else ()))
        )
        fresh: dict[tuple[str, str], list[tuple] | None] = {}
        for key_name, op in ops:
            key = self.keys.get(key_name)
            if key is None:
                key = self.keys[key_name] = Key()
            key.asserted = key.asserted or op[2]
            appended = not key.ops or key.ops[-1][:2] <= op[:2]
            if appended:
                key.ops.append(op)
            else:
                bisect.insort(key.ops, op, key=lambda o: (o[0], o[1]))
            for dep in op[5]:
                self.dependents.setdefault(dep, set()).add(key_name)
            if key_name in fresh:
                pending = fresh[key_name]
                if pending is not None:
                    if appended:
                        pending.append(op)
                    else:
                        fresh[key_name] = None
            else:  # fold only what is new, if it all lands after what was folded
                fresh[key_name] = [op] if appended and key.resumable(at, op[1]) else None
        # fold the event's keys, then the dependents of every key whose removals changed
        touched: list[tuple[str, str]] = []
        queue = list(fresh)
        before = {k: {v: i[VALIDATED] for v, i in self.keys[k].held.items()} for k in queue}
        while queue:
            key_name = queue.pop(0)
            if key_name not in before:
                before[key_name] = {v: i[VALIDATED] for v, i in self.keys[key_name].held.items()}
            touched.append(key_name)
            if self._fold(key_name, fresh.pop(key_name, None)):
                for dependent in sorted(self.dependents.get(key_name, ())):
                    if dependent in self.keys and dependent not in queue:
                        queue.append(dependent)
        for key_name in dict.fromkeys(touched):
            self._write(key_name, before[key_name], at)
        self._score(dict.fromkeys(touched), named, stage)

    def _score(self, touched: dict, named: list, stage: int) -> None:
        now = self.latest
        for name in touched:
            key = self.keys[name]
            candidates = set(key.held) | self.live.get(name, set())
            candidates.update(v for n, v in named if n == name)
            for value in candidates:
                interval = key.last_of.get(value)
                if interval is None:
                    continue  # never asserted: unknown
                if value in key.held:
                    self.was_current[name, value] = True
                    self.live.setdefault(name, set()).add(value)
                elif self.was_current.get((name, value), True):
                    self.was_current[name, value] = False
                    self.live.get(name, set()).discard(value)
                    self.due.setdefault(stage + FORGET_AFTER, []).append(
                        (name, value, interval[DOMAIN])
                    )
            if key.asserted:
                served = self.answer(name, now)
                top = served[0][0] if served else None
                if top in key.held or (top is None and not key.held):
                    self.right += 1
                else:
                    self.wrong += 1
        for name, value, domain in self.due.pop(stage, ()):
            if value in self.keys[name].held:
                continue  # current again
            returned = any(row[0] == value for row in self.answer(name, now))
            for bucket in ("all", domain):
                self.forget[bucket][0] += 1
                self.forget[bucket][1] += not returned

    # -- the final stage ------------------------------------------------------------------

    def metrics(self) -> dict[str, dict]:
        now = self.latest
        fields = ("pool", "fresh", "consistent", "expected", "covered", "probes", "contaminated",
                  "conflicts")  # fmt: skip
        counts = {b: dict.fromkeys(fields, 0) for b in ("all", *DOMAINS)}

        def add(domain: str, field: str) -> None:
            counts["all"][field] += 1
            counts[domain][field] += 1

        for name, key in self.keys.items():
            if not key.asserted:
                continue
            served = self.answer(name, now)
            contaminated = False
            for value, domain, validated, _ in served:
                add(domain, "pool")
                if now <= validated + WINDOW[domain]:
                    add(domain, "fresh")
                if value in key.held:
                    add(domain, "consistent")
                elif value in key.last_of:
                    contaminated = True
            values = {row[0] for row in served}
            for value, interval in key.held.items():
                add(interval[DOMAIN], "expected")
                if value in values:
                    add(interval[DOMAIN], "covered")
            domain = self.probe_domain[name]
            add(domain, "probes")
            if contaminated:
                add(domain, "contaminated")
            if len(values) > 1:
                add(domain, "conflicts")

        def ratio(a: int, b: int) -> float | None:
            return a / b if b else None

        return {
            bucket: {
                "freshness": ratio(c["fresh"], c["pool"]),
                "consistency": ratio(c["consistent"], c["pool"]),
                "coverage": ratio(c["covered"], c["expected"]),
                "forgetting": ratio(self.forget[bucket][1], self.forget[bucket][0]),
                "contamination": ratio(c["contaminated"], c["probes"]),
                "conflicts": c["conflicts"],
            }
            for bucket, c in counts.items()
        }


def run(path: str) -> dict:
    floor = Floor()
    db = floor.db
    db.execute("BEGIN")
    n = 0
    with open(path, encoding="utf-8") as lines:
        for n, line in enumerate(lines, 1):
            floor.apply(json.loads(line), n)
            if n % 1000 == 0:
                db.execute("COMMIT")
                db.execute("BEGIN")
    metrics = floor.metrics()
    db.execute("COMMIT")
    db.close()
    return {
        "events": n,
        "keys": len(floor.keys),
        "right": floor.right,
        "wrong": floor.wrong,
        "metrics": metrics,
    }


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1])))
