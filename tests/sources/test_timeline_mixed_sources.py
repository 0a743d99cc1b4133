"""`healthd timeline --config` over a file source and a ticket source: one merged timeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

from _ticket_payloads import (  # noqa: F401
    FakeGitHub,
    _module_server,
    api_server,
    assigned,
    gh_issue,
    labeled,
    renamed,
)

from healthd.model import ChangeEvent, Fact
from healthd.timeline import dumps_event


def at(day: int, hour: int) -> datetime:
    return datetime(2024, 1, day, hour, tzinfo=UTC)


def test_a_file_and_a_github_source_print_one_timeline_ordered_by_event_time(
    api_server,  # noqa: F811
    tmp_path,
):
    gh = FakeGitHub(api_server)
    gh.add(
        gh_issue(
            7,
            "Refunds within 3 days",
            labels=("requirement", "area/billing"),
            assignees=("bob",),
            created_at="2024-01-01T10:00:00Z",
            updated_at="2024-01-04T10:00:00Z",
        ),
        [
            labeled(701, "2024-01-01T10:00:00Z", "requirement"),
            labeled(702, "2024-01-01T10:00:00Z", "area/billing"),
            assigned(703, "2024-01-02T10:00:00Z", "bob"),
            renamed(704, "2024-01-04T10:00:00Z", "Refunds within 5 days", "Refunds within 3 days"),
        ],
    )
    timeline = tmp_path / "timeline.jsonl"
    node = Fact("auth", "language", "node", "tech")
    go = Fact("auth", "language", "go", "tech")
    timeline.write_text(
        dumps_event(ChangeEvent("f1", "added", at(1, 12), "file", node))
        + "\n"
        + dumps_event(ChangeEvent("f2", "revised", at(3, 9), "file", go, previous=node))
        + "\n"
    )
    config = tmp_path / "healthd.toml"
    config.write_text(f'''
[sources.timeline]
kind = "file"
path = "{timeline}"

[sources.tickets]
kind = "github"
repo = "acme/payments"
base_url = "{gh.base_url}"
token_env = ""
''')
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "timeline", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["timestamp"] for e in events] == sorted(e["timestamp"] for e in events)
    assert {e["source"] for e in events} == {
        "file",
        "tickets",
    }  # the file keeps its own source field
    assert [e["id"] for e in events if e["source"] == "file"] == ["f1", "f2"]
    ticket_facts = {
        (e["type"], e["fact"]["subject"], e["fact"]["predicate"], e["fact"]["value"])
        for e in events
        if e["source"] == "tickets"
    }
    assert ("added", "acme/payments#7", "requirement", "Refunds within 5 days") in ticket_facts
    assert ("revised", "acme/payments#7", "requirement", "Refunds within 3 days") in ticket_facts
    assert ("added", "billing", "owners", "bob") in ticket_facts
    # the file's events sit between the ticket's: merged, not concatenated
    sources = [e["source"] for e in events]
    assert sources.index("file") > 0 and sources[-1] == "tickets"


def test_two_sources_giving_one_id_print_a_timeline_that_reads_back_and_say_it_once(tmp_path):
    """Ids are the sources' own: two files may both say ``ev-1``. What `healthd timeline`
    prints is read back by `healthd evaluate --timeline`, which refuses an id twice, and a
    memory applies an event once per id: the first is kept, the other named, both sources
    with it, on one warning line."""
    from healthd.timeline import read_timeline

    auth = ChangeEvent("ev-1", "added", at(1, 12), "a", Fact("auth", "language", "go", "tech"))
    billing = ChangeEvent(
        "ev-1", "added", at(2, 12), "b", Fact("billing", "language", "java", "tech")
    )
    ledger = ChangeEvent("ev-2", "added", at(3, 12), "b", Fact("ledger", "language", "go", "tech"))
    (tmp_path / "a.jsonl").write_text(dumps_event(auth) + "\n")
    (tmp_path / "b.jsonl").write_text(dumps_event(billing) + "\n" + dumps_event(ledger) + "\n")
    config = tmp_path / "healthd.toml"
    config.write_text(
        "".join(
            f'[sources.{name}]\nkind = "file"\npath = "{tmp_path / name}.jsonl"\n\n'
            for name in ("a", "b")
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "timeline", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    printed = tmp_path / "printed.jsonl"
    printed.write_text(done.stdout)
    assert [(e.id, e.fact.subject) for e in read_timeline(str(printed))] == [
        ("ev-1", "auth"),
        ("ev-2", "ledger"),
    ]
    warned = [line for line in done.stderr.splitlines() if "'ev-1'" in line]
    assert len(warned) == 1
    assert "source 'a'" in warned[0] and "source 'b'" in warned[0] and "billing" in warned[0]
