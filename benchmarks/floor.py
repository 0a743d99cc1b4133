"""An independent floor for `healthd evaluate`: the essential work per event, written with
nothing but the standard library (``sqlite3`` and ``json``; no healthd code is imported).

Per timeline line it parses the JSON and its timestamp, then:

* writes the record: a log row, and in a records table (SQLite, a private temporary file
  like healthd's) the fact's active record opened, revised (the old one ended, a new one
  opened), re-validated (its validation time moved) or ended; ending a key ends, through an
  index of dependencies, the active records of every key that depends on it, transitively;
* decides what is current: per key the value of its newest event by event time (a late
  event older than the key's newest is logged but does not change it);
* answers the touched keys' probes: one indexed select of the active records of each key
  the event touched (its own and the cascade's), compared with what is current, counting
  right and wrong answers.

Commits are batched (one per 1,000 events), as a throw-away database allows.

What it does NOT do, so healthd's extra cost over it is what those are worth: no TTL or
expiry, no supersession chains or history of intervals, no refolding of a key when a late
event lands earlier than its newest (it keeps the newest), no multi-valued keys, no
full-text index, no metrics beyond the right/wrong counts, no staleness windows or
forgetting, no report.

    python benchmarks/floor.py TIMELINE.jsonl      # prints one JSON line of counts
"""

from __future__ import annotations

import json
import sqlite3
import sys
from datetime import datetime

SCHEMA = """
CREATE TABLE log (id INTEGER PRIMARY KEY, event_id TEXT, subject TEXT, predicate TEXT,
                  at REAL, kind TEXT, value TEXT);
CREATE TABLE records (id INTEGER PRIMARY KEY, subject TEXT, predicate TEXT, value TEXT,
                      domain TEXT, created_at REAL, validated_at REAL, state TEXT);
CREATE INDEX records_live ON records(subject, predicate) WHERE state = 'active';
CREATE TABLE deps (subject TEXT, predicate TEXT, dep_subject TEXT, dep_predicate TEXT,
                   PRIMARY KEY (dep_subject, dep_predicate, subject, predicate)) WITHOUT ROWID;
"""


def _at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def run(path: str) -> dict[str, int]:
    db = sqlite3.connect("", isolation_level=None)
    db.executescript(SCHEMA)
    current: dict[tuple[str, str], tuple[float, str | None]] = {}
    right = wrong = cascaded = 0
    execute = db.execute
    db.execute("BEGIN")
    with open(path, encoding="utf-8") as lines:
        for n, line in enumerate(lines, 1):
            event = json.loads(line)
            kind = event["type"]
            fact = event["fact"]
            subject, predicate, value = fact["subject"], fact["predicate"], fact["value"]
            key = (subject, predicate)
            at = _at(event["timestamp"])
            execute(
                "INSERT INTO log (event_id, subject, predicate, at, kind, value)"
                " VALUES (?,?,?,?,?,?)",
                (event["id"], subject, predicate, at, kind, value),
            )
            touched = [key]
            newest = current.get(key)
            if newest is None or at >= newest[0]:
                current[key] = (at, None if kind == "invalidated" else value)
            if kind == "revalidated":
                execute(
                    "UPDATE records SET validated_at = ? WHERE subject = ? AND predicate = ?"
                    " AND state = 'active' AND value = ?",
                    (at, subject, predicate, value),
                )
            else:
                execute(
                    "UPDATE records SET state = 'ended' WHERE subject = ? AND predicate = ?"
                    " AND state = 'active'",
                    key,
                )
            if kind in ("added", "revised"):
                execute(
                    "INSERT INTO records (subject, predicate, value, domain, created_at,"
                    " validated_at, state) VALUES (?,?,?,?,?,?, 'active')",
                    (subject, predicate, value, fact["domain"], at, at),
                )
                for dep in event.get("depends_on") or ():
                    execute(
                        "INSERT OR IGNORE INTO deps VALUES (?,?,?,?)",
                        (subject, predicate, dep["subject"], dep["predicate"]),
                    )
            elif kind == "invalidated":
                ending = [key]
                seen = {key}
                while ending:
                    dep_key = ending.pop()
                    for dependent in execute(
                        "SELECT subject, predicate FROM deps WHERE dep_subject = ?"
                        " AND dep_predicate = ?",
                        dep_key,
                    ).fetchall():
                        if dependent in seen:
                            continue
                        seen.add(dependent)
                        ended = execute(
                            "UPDATE records SET state = 'ended' WHERE subject = ?"
                            " AND predicate = ? AND state = 'active'",
                            dependent,
                        ).rowcount
                        if ended:
                            cascaded += 1
                            current[dependent] = (at, None)
                            touched.append(dependent)
                            ending.append(dependent)
            for probe in touched:
                served = execute(
                    "SELECT value, validated_at FROM records WHERE subject = ?"
                    " AND predicate = ? AND state = 'active' ORDER BY validated_at DESC, id DESC",
                    probe,
                ).fetchall()
                truth = current[probe][1]
                if (truth is None and not served) or (served and served[0][0] == truth):
                    right += 1
                else:
                    wrong += 1
            if n % 1000 == 0:
                db.execute("COMMIT")
                db.execute("BEGIN")
    db.execute("COMMIT")
    db.close()
    return {"events": n, "keys": len(current), "right": right, "wrong": wrong, "cascaded": cascaded}


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1])))
