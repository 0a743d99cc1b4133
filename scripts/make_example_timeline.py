"""Writes healthd/data/example_timeline.jsonl: the seed's story over eleven months.

A service rewritten (auth-service, Node to Go), a team reorganisation and a person who leaves
(Alice), a decision reversed twice (Kafka -> SQS -> Kafka), a requirement abandoned (PDF
export), a module removed whose facts must go with it (payments-v1), a late, backdated ticket
change, and revalidation sweeps (ownership monthly, the rest quarterly). One ownership fact
(legacy-reports, Alice) is never revalidated: the drift nobody modelled, which only a TTL
catches. Run: python scripts/make_example_timeline.py
"""

from __future__ import annotations

import json
import pathlib

OUT = pathlib.Path(__file__).resolve().parent.parent / "healthd" / "data" / "example_timeline.jsonl"

story: list[dict] = []


def fact(subject, predicate, value, domain):
    return {"subject": subject, "predicate": predicate, "value": value, "domain": domain}


def add(ts, source, f, depends_on=(), **meta):
    story.append(
        {
            "type": "added",
            "timestamp": ts,
            "source": source,
            "fact": f,
            "depends_on": [{"subject": s, "predicate": p} for s, p in depends_on],
            "metadata": meta,
        }
    )


def revise(ts, source, previous, current, depends_on=(), **meta):
    story.append(
        {
            "type": "revised",
            "timestamp": ts,
            "source": source,
            "previous": previous,
            "fact": current,
            "depends_on": [{"subject": s, "predicate": p} for s, p in depends_on],
            "metadata": meta,
        }
    )


def invalidate(ts, source, f, reason, **meta):
    story.append(
        {
            "type": "invalidated",
            "timestamp": ts,
            "source": source,
            "fact": f,
            "reason": reason,
            "depends_on": [],
            "metadata": meta,
        }
    )


AUTH, PV1, PV2 = "auth-service", "payments-v1", "payments-v2"
pv1 = [(PV1, "exists")]
auth = [(AUTH, "exists")]

# January: the project as the assistant first learns it.
add("2026-01-05T09:00:00Z", "git", fact(AUTH, "exists", "true", "tech"))
add("2026-01-05T09:00:00Z", "git", fact(AUTH, "language", "node", "tech"), auth)
add("2026-01-05T09:00:00Z", "git", fact(AUTH, "dependency:express", "4.18.2", "tech"), auth)
add("2026-01-05T09:00:00Z", "git", fact(PV1, "exists", "true", "tech"))
add("2026-01-05T09:00:00Z", "git", fact(PV1, "language", "java", "tech"), pv1)
add("2026-01-05T09:00:00Z", "git", fact(PV1, "dependency:postgres", "13", "tech"), pv1)
add("2026-01-06T10:00:00Z", "git", fact("billing", "owners", "@alice", "ownership"))
add("2026-01-06T10:00:00Z", "git", fact(AUTH, "owners", "@alice @dave", "ownership"), auth)
add("2026-01-06T10:00:00Z", "git", fact(PV1, "owners", "@erin", "ownership"), pv1)
add("2026-01-06T10:00:00Z", "git", fact("legacy-reports", "owners", "@alice", "ownership"))
add("2026-01-07T11:00:00Z", "jira", fact("payments", "on_call", "@alice", "ownership"))
add("2026-01-08T12:00:00Z", "adr", fact("messaging", "broker", "kafka", "decision"), adr="0003")
add("2026-01-08T12:00:00Z", "adr", fact("payments", "source_of_truth", PV1, "decision"), adr="0004")
add(
    "2026-01-12T15:00:00Z",
    "github",
    fact("checkout", "latency_budget", "p99 < 300 ms", "requirement"),
)
add(
    "2026-01-12T15:00:00Z",
    "github",
    fact("reports", "pdf_export", "monthly PDF export for finance", "requirement"),
)
add(
    "2026-01-20T08:30:00Z",
    "github",
    fact(AUTH, "sso", "SAML single sign-on for enterprise tenants", "requirement"),
    auth,
)

# February: payments-v2 appears beside v1.
add("2026-02-09T09:00:00Z", "git", fact(PV2, "exists", "true", "tech"))
add("2026-02-09T09:00:00Z", "git", fact(PV2, "language", "kotlin", "tech"), [(PV2, "exists")])
add(
    "2026-02-09T09:00:00Z", "git", fact(PV2, "dependency:postgres", "16", "tech"), [(PV2, "exists")]
)
add(
    "2026-02-10T10:00:00Z",
    "git",
    fact(PV2, "owners", "@erin @frank", "ownership"),
    [(PV2, "exists")],
)

# March: the team reorganisation. The ticket that moved billing to Bob alone (10 March) is
# found late, after the reorganisation that gave it to Bob and Carol (20 March).
revise(
    "2026-03-20T09:00:00Z",
    "git",
    fact("billing", "owners", "@alice", "ownership"),
    fact("billing", "owners", "@bob @carol", "ownership"),
)
revise(
    "2026-03-25T14:00:00Z",
    "adr",
    fact("payments", "source_of_truth", PV1, "decision"),
    fact("payments", "source_of_truth", PV2, "decision"),
    adr="0007",
)

# April: Alice leaves; Kafka gives way to SQS.
revise(
    "2026-04-02T09:00:00Z",
    "git",
    fact(AUTH, "owners", "@alice @dave", "ownership"),
    fact(AUTH, "owners", "@dave", "ownership"),
    auth,
)
revise(
    "2026-04-02T09:30:00Z",
    "jira",
    fact("payments", "on_call", "@alice", "ownership"),
    fact("payments", "on_call", "@frank", "ownership"),
)
revise(
    "2026-04-15T16:00:00Z",
    "adr",
    fact("messaging", "broker", "kafka", "decision"),
    fact("messaging", "broker", "sqs", "decision"),
    adr="0009",
)

# May: auth-service is rewritten in Go; express goes, gin comes.
revise(
    "2026-05-18T10:00:00Z",
    "git",
    fact(AUTH, "language", "node", "tech"),
    fact(AUTH, "language", "go", "tech"),
    auth,
)
invalidate(
    "2026-05-18T10:00:00Z",
    "git",
    fact(AUTH, "dependency:express", "4.18.2", "tech"),
    "dependency removed from package.json",
)
add("2026-05-18T10:00:00Z", "git", fact(AUTH, "dependency:gin", "1.10.0", "tech"), auth)

# June: PDF export is abandoned; the late ticket from March finally arrives.
invalidate(
    "2026-06-03T11:00:00Z",
    "github",
    fact("reports", "pdf_export", "monthly PDF export for finance", "requirement"),
    "closed as not planned",
)
revise(
    "2026-03-10T13:00:00Z",
    "jira",
    fact("billing", "owners", "@alice", "ownership"),
    fact("billing", "owners", "@bob", "ownership"),
    late="true",
)

# July: the latency budget tightens.
revise(
    "2026-07-07T09:00:00Z",
    "github",
    fact("checkout", "latency_budget", "p99 < 300 ms", "requirement"),
    fact("checkout", "latency_budget", "p99 < 250 ms", "requirement"),
)

# August: SQS is reverted; back to Kafka.
revise(
    "2026-08-12T15:00:00Z",
    "adr",
    fact("messaging", "broker", "sqs", "decision"),
    fact("messaging", "broker", "kafka", "decision"),
    adr="0012",
)
revise(
    "2026-08-20T09:00:00Z",
    "git",
    fact(AUTH, "dependency:gin", "1.10.0", "tech"),
    fact(AUTH, "dependency:gin", "1.11.0", "tech"),
    auth,
)

# September: payments-v1 is decommissioned; its language, dependency and owners go with it.
invalidate("2026-09-15T10:00:00Z", "git", fact(PV1, "exists", "true", "tech"), "directory removed")

# October: a new requirement and a dependency bump on v2.
add(
    "2026-10-05T09:00:00Z",
    "github",
    fact("checkout", "audit_log", "every refund is written to the audit log", "requirement"),
)
revise(
    "2026-10-20T09:00:00Z",
    "git",
    fact(PV2, "dependency:postgres", "16", "tech"),
    fact(PV2, "dependency:postgres", "17", "tech"),
    [(PV2, "exists")],
)


def current_facts(events, upto):
    """Fold the story (by event time) to the facts true at `upto`, with their dependencies."""
    held: dict[tuple[str, str], tuple[dict, list]] = {}
    removed: set[tuple[str, str]] = set()
    for ev in sorted(events, key=lambda e: e["timestamp"]):
        if ev["timestamp"] > upto:
            break
        f = ev["fact"]
        key = (f["subject"], f["predicate"])
        if ev["type"] in ("added", "revised", "revalidated"):
            held[key] = (f, ev["depends_on"])
        elif held.get(key, ({},))[0].get("value") == f["value"]:
            del held[key]
            removed.add(key)
    changed = True
    while changed:
        changed = False
        for key, (_, deps) in list(held.items()):
            if any(
                (d["subject"], d["predicate"]) in removed
                and (d["subject"], d["predicate"]) not in held
                for d in deps
            ):
                del held[key]
                removed.add(key)
                changed = True
    return held


NEVER_REVALIDATED = {("legacy-reports", "owners")}
sweeps = []
for month in range(2, 12):
    ts = f"2026-{month:02d}-28T06:00:00Z"
    quarterly = month % 3 == 2
    for key, (f, deps) in sorted(current_facts(story, ts).items()):
        if key in NEVER_REVALIDATED or (f["domain"] != "ownership" and not quarterly):
            continue
        sweeps.append(
            {
                "type": "revalidated",
                "timestamp": ts,
                "source": "revalidation",
                "fact": f,
                "depends_on": deps,
                "metadata": {},
            }
        )

events = story + sweeps
# Arrival order: by event time, except the late ticket, which arrives where it was written.
late = [e for e in events if e["metadata"].get("late")]
ordered = sorted((e for e in events if not e["metadata"].get("late")), key=lambda e: e["timestamp"])
for e in late:
    position = (
        next(i for i, o in enumerate(ordered) if o["timestamp"] >= "2026-06-03T11:00:00Z") + 1
    )
    ordered.insert(position, e)

with OUT.open("w", encoding="utf-8") as out:
    for number, event in enumerate(ordered, start=1):
        line = {"id": f"ex-{number:03d}", **event}
        if line["type"] == "invalidated":
            line = {
                k: line[k]
                for k in (
                    "id",
                    "type",
                    "timestamp",
                    "source",
                    "fact",
                    "reason",
                    "depends_on",
                    "metadata",
                )
            }
        out.write(json.dumps(line) + "\n")
print(f"wrote {len(ordered)} events to {OUT}")
