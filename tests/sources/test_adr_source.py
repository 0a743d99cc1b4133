"""The `adr` source: decision records' status history, from repositories built with
Debian's `adr` tool and by hand (MADR, messy real-world records)."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime

import pytest
from git_faults import cutting_git

from healthd.errors import ConfigError
from healthd.sources import build_source
from healthd.timeline import dumps_event, loads_timeline


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def adr_source(repo, **options):
    options = {
        "path": str(repo.path),
        "revalidate_clock": "head",
        "revalidate_interval": "P3650D",
        **options,
    }
    return build_source("adr", "decisions", options)


def pull(source, cursor=None, **kw):
    result = source.pull(cursor, **kw)
    assert result.error is None, result.error
    return result


def set_status(repo, path: str, old: str, new: str) -> None:
    text = repo.read(path)
    assert old in text
    repo.write({path: text.replace(old, new, 1)})


def nygard(number: int, title: str, status: str) -> str:
    return (
        f"# {number}. {title}\n\nDate: 2024-01-01\n\n## Status\n\n{status}\n\n"
        "## Context\n\nWhy.\n\n## Decision\n\nWhat.\n\n## Consequences\n\nSo.\n"
    )


# --------------------------------------------------------------------------- adr-tools


@pytest.fixture
def kafka_chain(repo, needs_adr):
    """adr init; 2 Use Kafka; 3 supersedes 2 (RabbitMQ); 4 supersedes 3 (NATS)."""
    repo.adr("init", when="2024-01-01")
    repo.commit("2024-01-01", message="adr init")
    repo.adr("new", "Use", "Kafka", "for", "messaging", when="2024-02-01")
    repo.commit("2024-02-01")
    repo.adr("new", "-s", "2", "Use RabbitMQ for messaging", when="2024-03-01")
    repo.commit("2024-03-01")
    repo.adr("new", "-s", "3", "Use NATS for messaging", when="2024-04-01")
    repo.commit("2024-04-01")
    return repo


def test_a_supersession_chain_of_three_records_is_two_revisions(kafka_chain, brief):
    events = pull(adr_source(kafka_chain)).events
    assert brief(events) == [
        ("2024-01-01", "added", "adr:1 decision=Record architecture decisions"),
        ("2024-02-01", "added", "adr:2 decision=Use Kafka for messaging"),
        (
            "2024-03-01",
            "revised",
            "adr:2 decision=Use Kafka for messaging -> adr:3 decision=Use RabbitMQ for messaging",
        ),
        (
            "2024-04-01",
            "revised",
            "adr:3 decision=Use RabbitMQ for messaging -> adr:4 decision=Use NATS for messaging",
        ),
    ]
    assert {ev.fact.domain for ev in events} == {"decision"}
    assert events[3].metadata["adr_file"] == "doc/adr/0004-use-nats-for-messaging.md"
    assert events[3].metadata["commit"] == kafka_chain.head()


def test_a_deprecated_decision_is_invalidated_with_a_reason(kafka_chain, brief):
    set_status(
        kafka_chain,
        "doc/adr/0001-record-architecture-decisions.md",
        "\nAccepted\n",
        "\nDeprecated\n",
    )
    kafka_chain.commit("2024-05-01")
    events = pull(adr_source(kafka_chain)).events
    assert brief(events)[-1] == (
        "2024-05-01",
        "invalidated",
        "adr:1 decision=Record architecture decisions",
    )
    assert events[-1].reason == "ADR 1 deprecated"
    assert events[-1].metadata["status"] == "deprecated"


def test_a_proposal_emits_nothing_until_accepted_and_a_rejection_of_it_nothing(
    repo, needs_adr, brief
):
    repo.adr("init", when="2024-01-01")
    repo.adr("new", "Use GraphQL", when="2024-01-01")
    set_status(repo, "doc/adr/0002-use-graphql.md", "\nAccepted\n", "\nProposed\n")
    repo.adr("new", "Use gRPC", when="2024-01-01")
    set_status(repo, "doc/adr/0003-use-grpc.md", "\nAccepted\n", "\nProposed\n")
    repo.commit("2024-01-01")
    set_status(repo, "doc/adr/0002-use-graphql.md", "\nProposed\n", "\nAccepted\n")
    set_status(repo, "doc/adr/0003-use-grpc.md", "\nProposed\n", "\nRejected\n")
    repo.commit("2024-02-15")
    assert brief(pull(adr_source(repo)).events) == [
        ("2024-01-01", "added", "adr:1 decision=Record architecture decisions"),
        ("2024-02-15", "added", "adr:2 decision=Use GraphQL"),
    ]


def test_re_extraction_gives_identical_ids_and_an_incremental_run_only_new_events(
    kafka_chain, brief
):
    source = adr_source(kafka_chain)
    first = pull(source)
    again = pull(adr_source(kafka_chain))
    assert [dumps_event(e) for e in first.events] == [dumps_event(e) for e in again.events]
    assert loads_timeline("\n".join(dumps_event(e) for e in first.events))
    kafka_chain.adr("new", "Use Postgres", when="2024-06-01")
    kafka_chain.commit("2024-06-01")
    set_status(kafka_chain, "doc/adr/0005-use-postgres.md", "\nAccepted\n", "\nDeprecated\n")
    kafka_chain.commit("2024-07-01")
    new = pull(source, first.cursor)
    assert brief(new.events) == [
        ("2024-06-01", "added", "adr:5 decision=Use Postgres"),
        ("2024-07-01", "invalidated", "adr:5 decision=Use Postgres"),
    ]
    full = pull(adr_source(kafka_chain)).events
    assert [e.id for e in full[-2:]] == [e.id for e in new.events]
    assert pull(source, new.cursor).events == []


def test_the_adr_directory_comes_from_dot_adr_dir(repo, needs_adr, brief):
    repo.adr("init", "architecture/decisions", when="2024-01-01")
    repo.write({"docs/adr/0001-decoy.md": nygard(1, "Decoy", "Accepted")})
    repo.commit("2024-01-01")
    events = pull(adr_source(repo)).events
    assert brief(events) == [
        ("2024-01-01", "added", "adr:1 decision=Record architecture decisions")
    ]
    assert json.loads(pull(adr_source(repo)).cursor)["dir"] == "architecture/decisions"


def test_revalidation_re_observes_decisions_still_in_force(kafka_chain, brief):
    source = adr_source(kafka_chain, revalidate_interval="P90D")
    result = pull(source, now=utc("2024-06-01"))
    # adr:1 was last seen on 2024-01-01 (over 90 days); adr:4 on 2024-04-01 (fresh)
    assert brief(result.events)[4:] == [
        ("2024-06-01", "revalidated", "adr:1 decision=Record architecture decisions")
    ]
    assert pull(source, result.cursor, now=utc("2024-06-02")).events == []


# --------------------------------------------------------------------------- by hand


MADR_OLD = """---
status: accepted
date: 2024-01-10
deciders: alice, bob
---
# Use PostgreSQL for persistence

## Context and Problem Statement
"""


def test_madr_front_matter_and_status_lines(repo, brief):
    repo.commit(
        "2024-01-10",
        {
            "docs/decisions/0001-use-postgresql.md": MADR_OLD,
            "docs/decisions/0002-use-redis-cache.md": "# Use Redis as cache\n\n* Status: proposed\n* Deciders: team\n",
            "docs/decisions/README.md": "# Decisions\n",
            "docs/decisions/adr-template.md": "# {short title}\n\n* Status: {proposed}\n",
        },
    )
    repo.commit(
        "2024-02-10",
        {
            "docs/decisions/0002-use-redis-cache.md": "# Use Redis as cache\n\n- Status: accepted\n- Deciders: team\n"
        },
    )
    repo.commit(
        "2024-03-10",
        {
            "docs/decisions/0003-use-cockroachdb.md": '---\nstatus: "accepted"\n---\n# Use CockroachDB for persistence\n',
            "docs/decisions/0001-use-postgresql.md": MADR_OLD.replace(
                "status: accepted", "status: superseded by [ADR-0003](0003-use-cockroachdb.md)"
            ),
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-10", "added", "adr:1 decision=Use PostgreSQL for persistence"),
        ("2024-02-10", "added", "adr:2 decision=Use Redis as cache"),
        (
            "2024-03-10",
            "revised",
            "adr:1 decision=Use PostgreSQL for persistence -> "
            "adr:3 decision=Use CockroachDB for persistence",
        ),
    ]
    assert result.skipped == []  # README and the MADR template are not records


def test_an_implemented_record_is_a_decision_from_the_day_it_says_so(repo, brief):
    """nats-io/nats-architecture-and-design: Proposed, then Approved or Implemented (or
    Partially Implemented), then Deprecated; a record implemented is a decision in force."""
    path = "adr/0009-consumer-pause.md"
    repo.commit("2024-01-01", {path: nygard(9, "Consumer pause", "Proposed")})
    repo.commit("2024-02-01", {path: nygard(9, "Consumer pause", "Partially Implemented")})
    repo.commit("2024-03-01", {path: nygard(9, "Consumer pause", "Implemented")})
    repo.commit("2024-04-01", {path: nygard(9, "Consumer pause", "Deprecated")})
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-02-01", "added", "adr:9 decision=Consumer pause"),
        ("2024-04-01", "invalidated", "adr:9 decision=Consumer pause"),
    ]
    assert result.events[0].metadata["status"] == "accepted"
    assert result.skipped == []


def nats(title: str, status: str, body: str = "") -> str:
    """A record as nats-io/nats-architecture-and-design writes them: its status in a
    metadata table under the title."""
    return (
        f"# {title}\n\n|Metadata|Value|\n|--------|-----|\n|Date    |2021-06-30|\n"
        f"|Author  |@ripienaar|\n|Status  |{status}|\n|Tags    |jetstream, client|\n\n"
        f"## Context\n\nWhy.\n\n## Design\n\n{body}\n"
    )


def test_a_status_in_a_metadata_table_under_the_title_is_the_records_status(repo, brief):
    # ADR-8's API has a "### Status" section of its own, below the metadata
    kv_api = "### Status\n\nThis is the status of the KV as a whole\n"
    repo.commit(
        "2021-06-30",
        {
            "adr/ADR-1.md": nats("JetStream JSON API Design", "Approved"),
            "adr/ADR-8.md": nats("JetStream based Key-Value Stores", "Proposed", kv_api),
        },
    )
    repo.commit(
        "2021-12-15",
        {"adr/ADR-8.md": nats("JetStream based Key-Value Stores", "Implemented", kv_api)},
    )
    repo.commit("2023-01-01", {"adr/ADR-1.md": nats("JetStream JSON API Design", "Deprecated")})
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2021-06-30", "added", "adr:1 decision=JetStream JSON API Design"),
        ("2021-12-15", "added", "adr:8 decision=JetStream based Key-Value Stores"),
        ("2023-01-01", "invalidated", "adr:1 decision=JetStream JSON API Design"),
    ]
    assert result.skipped == []


def test_a_table_below_the_title_block_or_a_column_named_status_states_no_status(repo, brief):
    api_table = "| Status | Meaning |\n|---|---|\n| 410 | Deprecated endpoint |\n"
    repo.commit(
        "2024-01-01",
        {
            "doc/adr/0002-error-codes.md": nygard(2, "Error codes", "Accepted").replace(
                "What.", api_table
            ),
            "doc/adr/0003-review-log.md": (
                "# 3. Review log\n\n| Status | Date |\n|---|---|\n| Rejected | 2024-01-01 |\n\n"
                "## Status\n\nAccepted\n"
            ),
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:2 decision=Error codes"),
        ("2024-01-01", "added", "adr:3 decision=Review log"),
    ]


def test_a_metadata_table_whose_header_row_is_its_status_row_states_the_status(repo, brief):
    """Many logs begin the metadata table under the title with its Status row, the header
    row a Markdown table needs: ``| Status | Accepted |`` then ``|---|---|``, ``| Date |
    ... |``. That row is the record's status; a header naming columns is none."""
    table = "# ADR-{n} — {title}\n\n| Status | {status} |\n|---|---|\n| Date | 2024-01-01 |\n\n## Context\n\nWhy.\n"
    path = "docs/adr/ADR-003-nestjs.md"
    repo.commit("2024-01-01", {path: table.format(n="003", title="Use NestJS", status="Accepted")})
    repo.commit(
        "2024-02-01", {path: table.format(n="003", title="Use NestJS", status="Deprecated")}
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:3 decision=Use NestJS"),
        ("2024-02-01", "invalidated", "adr:3 decision=Use NestJS"),
    ]
    assert result.skipped == []


def fenced_header(number: int, title: str, status: str, body: str = "Why.") -> str:
    """A record as get10101/itchysats' docs/adr/XYZ-template.md has it: its metadata in a
    code block under the title."""
    return (
        f"# ADR {number:03d} - {title}\n\n```\nAuthor: @someone\nDate: 29/12/2021\n"
        f"Status: {status}\n```\n\n## Context\n\n{body}\n"
    )


def test_a_status_in_a_code_block_under_the_title_is_the_records_status(repo, brief):
    # 001 shows, further down, how a superseded record would say so: an example, no status
    example = "In such a case, change the status to:\n\n```\nStatus: Superseded by ADR XYZ.\n```\n"
    repo.commit(
        "2022-01-06",
        {
            "docs/adr/001-use-adrs.md": fenced_header(1, "Use ADRs", "Active", example),
            "docs/adr/004-actors.md": fenced_header(4, "Actors", "Active"),
        },
    )
    repo.commit(
        "2022-02-01",
        {
            "docs/adr/004-actors.md": fenced_header(4, "Actors", "Superseded by ADR 014"),
            "docs/adr/014-actor-supervision.md": fenced_header(14, "Actor supervision", "Active"),
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2022-01-06", "added", "adr:1 decision=Use ADRs"),
        ("2022-01-06", "added", "adr:4 decision=Actors"),
        ("2022-02-01", "revised", "adr:4 decision=Actors -> adr:14 decision=Actor supervision"),
    ]
    assert result.skipped == []


def test_a_title_keeps_what_its_inline_code_says(repo, brief):
    title = "Allow all actors to load and hydrate a CFD, not just the `{taker,maker}_cfd::Actor`"
    repo.commit(
        "2022-01-06",
        {"docs/adr/013-all-actors-can-hydrate-cfd.md": fenced_header(13, title, "Active")},
    )
    assert brief(pull(adr_source(repo)).events) == [
        (
            "2022-01-06",
            "added",
            "adr:13 decision=Allow all actors to load and hydrate a CFD, not just the "
            "{taker,maker}_cfd::Actor",
        )
    ]


@pytest.mark.parametrize(
    "broken",
    [
        'status: "superseded by ADR-0002',  # its quote never closed
        "status: [superseded by ADR-0002",
        "status: superseded by ADR-0002\n  deciders: alice",  # indented into the value
    ],
)
def test_front_matter_that_is_no_yaml_is_named_and_keeps_the_decision(repo, brief, broken):
    path = "docs/decisions/0001-use-postgresql.md"
    repo.commit("2024-01-10", {path: MADR_OLD})
    repo.commit(
        "2024-02-10",
        {
            path: MADR_OLD.replace("status: accepted", broken),
            "docs/decisions/0002-use-cockroachdb.md": '---\nstatus: "accepted"\n---\n# Use CockroachDB\n',
        },
    )
    repo.commit("2024-03-10", {path: MADR_OLD.replace("accepted", "superseded by ADR-0002")})
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-10", "added", "adr:1 decision=Use PostgreSQL for persistence"),
        ("2024-02-10", "added", "adr:2 decision=Use CockroachDB"),
        (
            "2024-03-10",
            "revised",
            "adr:1 decision=Use PostgreSQL for persistence -> adr:2 decision=Use CockroachDB",
        ),
    ]
    said = [line for line in result.skipped if line.startswith(f"{path}: front matter is not YAML")]
    assert len(said) == 1 and said[0].endswith("its decision kept"), result.skipped


@pytest.mark.parametrize(
    "slip",
    [
        "deciders: @alice, @bob",  # a GitHub handle: '@' starts no YAML value
        "title: ADR: use PostgreSQL",  # a second ': ' in a plain value
        "informed: [everyone",
    ],
)
def test_front_matter_another_key_of_which_is_no_yaml_still_states_its_status(repo, brief, slip):
    """f790739 stopped reading the status of front matter that is no YAML; a slip in
    another key left a plain ``status: accepted`` unread (its decision never added)."""
    path = "docs/decisions/0001-use-postgresql.md"
    repo.commit(
        "2024-01-10", {path: MADR_OLD.replace("status: accepted", f"status: accepted\n{slip}")}
    )
    repo.commit(
        "2024-02-10", {path: MADR_OLD.replace("status: accepted", f"status: rejected\n{slip}")}
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-10", "added", "adr:1 decision=Use PostgreSQL for persistence"),
        ("2024-02-10", "invalidated", "adr:1 decision=Use PostgreSQL for persistence"),
    ]


@pytest.mark.parametrize(
    "status",
    [
        "status: [accepted,\ndeprecated]",  # a flow list continued at the margin
        "status: {state: accepted,\nsince: 2024}",
    ],
)
def test_front_matter_whose_status_continues_at_the_margin_is_yaml(repo, brief, status):
    """f026236 checked the status's own lines, taken as the status line and the indented
    ones after it: a flow collection continued at the margin, valid YAML, was cut and
    named no YAML, its decision never added."""
    path = "docs/decisions/0001-use-postgresql.md"
    repo.commit("2024-01-10", {path: MADR_OLD.replace("status: accepted", status)})
    result = pull(adr_source(repo))
    assert not any("not YAML" in line for line in result.skipped), result.skipped


def log4brains(title: str, status: str) -> str:
    """A record as thomvaill/log4brains writes them (its docs/adr/template.md, MADR 2)."""
    return f"# {title}\n\n- Status: {status}\n- Date: 2020-09-26\n\n## Context and Problem Statement\n\nWhy.\n"


def test_a_log_of_records_named_by_their_day_is_read(repo, brief):
    """thomvaill/log4brains' docs/adr: ``YYYYMMDD-slug.md``, two records of one day, links
    by slug."""
    slug_id = "20201016-use-the-adr-slug-as-its-unique-id"
    repo.commit(
        "2020-09-26",
        {
            "docs/adr/index.md": "# Architecture knowledge base\n",
            "docs/adr/template.md": log4brains(
                "[short title of solved problem]", "[draft | proposed]"
            ),
            "docs/adr/20200924-use-madr.md": log4brains("Use MADR", "accepted"),
            "docs/adr/20200925-use-a-monorepo.md": log4brains("Use a monorepo", "accepted"),
            "docs/adr/20200925-use-prettier.md": log4brains("Use Prettier", "accepted"),
            "docs/adr/20200926-use-the-adr-number.md": log4brains("Use the ADR number", "accepted"),
        },
    )
    repo.commit(
        "2020-10-16",
        {
            "docs/adr/20200926-use-the-adr-number.md": log4brains(
                "Use the ADR number", f"superseded by [{slug_id}]({slug_id}.md)"
            ),
            f"docs/adr/{slug_id}.md": log4brains("Use the ADR slug", "accepted"),
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2020-09-26", "added", "adr:20200924 decision=Use MADR"),
        ("2020-09-26", "added", "adr:20200925 decision=Use a monorepo"),
        ("2020-09-26", "added", "adr:20200925:20200925-use-prettier decision=Use Prettier"),
        ("2020-09-26", "added", "adr:20200926 decision=Use the ADR number"),
        (
            "2020-10-16",
            "revised",
            "adr:20200926 decision=Use the ADR number -> adr:20201016 decision=Use the ADR slug",
        ),
    ]
    assert result.skipped == []  # two records of one day is no duplicate number


def test_front_matter_nesting_thousands_deep_is_named_in_time(repo, brief):
    path = "docs/decisions/0001-use-postgresql.md"
    repo.commit("2024-01-10", {path: MADR_OLD})
    repo.commit("2024-02-10", {path: MADR_OLD.replace("status: accepted", "status: " + "[" * 3000)})
    started = time.monotonic()
    result = pull(adr_source(repo))
    assert time.monotonic() - started < 5
    assert brief(result.events) == [
        ("2024-01-10", "added", "adr:1 decision=Use PostgreSQL for persistence")
    ]
    assert any(line.startswith(f"{path}: front matter is not YAML") for line in result.skipped)


def test_a_decision_put_on_hold_is_no_longer_in_force(repo, brief):
    """adr/madr's own docs/decisions/0003-provide-own-madr-tools.md says ``status: on
    hold``; a status the log uses for a decision set aside ends it, as Proposed would."""
    path = "docs/decisions/0001-use-postgresql.md"
    repo.commit("2024-01-10", {path: MADR_OLD})
    repo.commit("2024-02-10", {path: MADR_OLD.replace("status: accepted", "status: on hold")})
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-10", "added", "adr:1 decision=Use PostgreSQL for persistence"),
        ("2024-02-10", "invalidated", "adr:1 decision=Use PostgreSQL for persistence"),
    ]
    assert result.skipped == []


@pytest.mark.parametrize("spelling", ["Superseded", "Superceded"])
def test_hand_written_supersession_in_both_spellings(repo, brief, spelling):
    repo.commit("2024-01-01", {"doc/adr/0007-use-rest.md": nygard(7, "Use REST", "Accepted")})
    repo.commit(
        "2024-02-01",
        {
            "doc/adr/0007-use-rest.md": nygard(
                7, "Use REST", f"{spelling} by ADR-0008 (see below)"
            ),
            "doc/adr/0008-use-grpc.md": nygard(8, "Use gRPC", "**Accepted** ✅"),
        },
    )
    assert brief(pull(adr_source(repo)).events) == [
        ("2024-01-01", "added", "adr:7 decision=Use REST"),
        ("2024-02-01", "revised", "adr:7 decision=Use REST -> adr:8 decision=Use gRPC"),
    ]


def test_supersedes_written_only_on_the_new_record_is_enough(repo, brief):
    repo.commit("2024-01-01", {"doc/adr/0001-a.md": nygard(1, "Use A", "Accepted")})
    repo.commit(
        "2024-02-01",
        {"doc/adr/0002-b.md": nygard(2, "Use B", "Accepted\n\nSupercedes [1. Use A](0001-a.md)")},
    )
    assert brief(pull(adr_source(repo)).events) == [
        ("2024-01-01", "added", "adr:1 decision=Use A"),
        ("2024-02-01", "revised", "adr:1 decision=Use A -> adr:2 decision=Use B"),
    ]


def test_messy_records_are_skipped_with_counted_reasons_never_a_crash(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "doc/adr/0001-ok.md": "# ADR 1: Use Linux\n\nStatus: ~~Proposed~~ Accepted\n",
            "doc/adr/0002-first.md": nygard(2, "First of two", "Accepted"),
            "doc/adr/0002-second.md": nygard(2, "Second of two", "Accepted"),
            "doc/adr/0003-odd.md": nygard(3, "Odd", "Frobnicated"),
            "doc/adr/notes.md": "just some notes\n",
            "doc/adr/0004-gone.md": nygard(4, "Use Mongo", "Accepted"),
            "doc/adr/0005-bin.md": "\x00\xff\xfe garbage",
        },
    )
    repo.commit(
        "2024-02-01",
        {
            "doc/adr/0004-gone.md": nygard(
                4, "Use Mongo", "Superseded by [9. Missing](0009-missing.md)"
            )
        },
    )
    repo.commit("2024-03-01", {"doc/adr/0002-first.md": None})
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:1 decision=Use Linux"),
        ("2024-01-01", "added", "adr:2 decision=First of two"),
        ("2024-01-01", "added", "adr:2:0002-second decision=Second of two"),
        ("2024-01-01", "added", "adr:4 decision=Use Mongo"),
        ("2024-02-01", "invalidated", "adr:4 decision=Use Mongo"),
        ("2024-03-01", "invalidated", "adr:2 decision=First of two"),
        # the one record numbered 2 now is ADR 2
        (
            "2024-03-01",
            "revised",
            "adr:2:0002-second decision=Second of two -> adr:2 decision=Second of two",
        ),
    ]
    assert result.events[4].reason.startswith("ADR 4 superseded")
    assert result.events[5].reason == "ADR 2 deleted"
    skipped = "\n".join(result.skipped)
    assert "duplicate number 2" in skipped
    assert "0003-odd.md: status 'Frobnicated' not understood" in skipped
    assert "notes.md: no record number" in skipped
    assert "0009-missing.md" in skipped
    assert "0005-bin.md" in skipped


@pytest.mark.parametrize(
    "unreadable",
    [
        nygard(1, "Use A", "Akzeptiert"),  # translated
        nygard(1, "Use A", "Accepted or Rejected"),  # a template pasted over it
        "# 1. Use A\n\n## Context\n\nThe status section went missing.\n",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe",  # an image saved over it
    ],
)
def test_a_status_that_cannot_be_read_keeps_the_decision_and_says_so(repo, brief, unreadable):
    path = "doc/adr/0001-use-a.md"
    repo.commit("2024-01-01", {path: nygard(1, "Use A", "Accepted")})
    repo.commit("2024-02-01", {path: unreadable})
    repo.commit("2024-03-01", {path: nygard(1, "Use A", "Accepted")})
    repo.commit("2024-04-01", {path: nygard(1, "Use A", "Proposed")})
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:1 decision=Use A"),
        ("2024-04-01", "invalidated", "adr:1 decision=Use A"),  # a status it can read
    ]
    assert result.events[1].reason == "ADR 1 is proposed again"
    assert any(
        line.startswith(f"{path}: ") and line.endswith("; its decision kept")
        for line in result.skipped
    ), result.skipped


@pytest.mark.parametrize(
    "then",
    [
        {
            "doc/adr/0001-use-a.md": nygard(1, "Use A", "Superseded by [2. Use B](0002-use-b.md)"),
            "doc/adr/0002-use-b.md": nygard(2, "Use B", "Accepted"),
        },
        {"doc/adr/0001-use-a.md": None},
        {"doc/adr/0001-use-a.md": nygard(1, "Use A", "Accepted"), "doc/adr/x.txt": "x"},
    ],
)
def test_a_decision_kept_through_an_unreadable_status_is_kept_by_a_pull_from_its_cursor(
    repo, brief, then
):
    """A pull resumed from a cursor rebuilds what held from the tree at the cursor, where the
    record's status cannot be read: the decision its full history kept was lost, so its
    supersession or deletion was never said (and its return was a second `added`)."""
    path = "doc/adr/0001-use-a.md"
    steps = [
        (
            "2024-01-01",
            {path: nygard(1, "Use A", "Accepted"), "doc/adr/0009-z.md": nygard(9, "Z", "Accepted")},
        ),
        ("2024-02-01", {path: nygard(1, "Use A", "Akzeptiert")}),
        ("2024-03-01", then),
    ]
    cursor, by_step = None, []
    for when, files in steps:
        repo.commit(when, files)
        result = pull(adr_source(repo), cursor)
        by_step += result.events
        cursor = result.cursor
    at_once = pull(adr_source(repo)).events
    assert brief(at_once)[0] == ("2024-01-01", "added", "adr:1 decision=Use A")
    assert len(at_once) == (2 if "doc/adr/x.txt" in then else 3)
    assert [(e.id, e.type, e.fact, e.previous, dict(e.metadata)) for e in by_step] == [
        (e.id, e.type, e.fact, e.previous, dict(e.metadata)) for e in at_once
    ]


def test_a_cursor_from_before_kept_decisions_were_written_is_read_again_from_the_root(repo, brief):
    """A cursor written before ce03f71 (db2980d's, the first round's) has no ``kept``: a
    record unread at it may have held a decision no tree can tell, and its deletion was
    never said from that cursor. Such a cursor starts over; one whose records all read
    resumes."""
    path = "doc/adr/0001-use-a.md"
    repo.commit(
        "2024-01-01",
        {path: nygard(1, "Use A", "Accepted"), "doc/adr/0002-use-b.md": nygard(2, "B", "Accepted")},
    )
    repo.commit("2024-02-01", {path: nygard(1, "Use A", "Akzeptiert")})
    state = json.loads(pull(adr_source(repo)).cursor)
    assert state["kept"] == {
        "adr:1": {**state["kept"]["adr:1"], "value": "Use A", "adr_file": path}
    }
    del state["kept"]
    repo.commit("2024-03-01", {path: None})
    resumed = pull(adr_source(repo), json.dumps(state))
    assert brief(resumed.events) == brief(pull(adr_source(repo)).events)
    assert brief(resumed.events)[-1] == ("2024-03-01", "invalidated", "adr:1 decision=Use A")
    assert any("cursor from an older healthd" in s for s in resumed.skipped), resumed.skipped
    # nothing unread at the cursor: it resumes, and its next cursor says what is kept
    later = json.loads(resumed.cursor)
    assert later["kept"] == {}
    del later["kept"]
    repo.commit("2024-04-01", {"doc/adr/0002-use-b.md": nygard(2, "B", "Rejected")})
    again = pull(adr_source(repo), json.dumps(later))
    assert brief(again.events) == [("2024-04-01", "invalidated", "adr:2 decision=B")]
    assert not any("older healthd" in s for s in again.skipped)


def test_a_record_renumbered_while_its_status_cannot_be_read_takes_its_decision_along(repo, brief):
    repo.commit("2024-01-01", {"doc/adr/0001-use-a.md": nygard(1, "Use A", "Accepted")})
    repo.commit("2024-02-01", {"doc/adr/0001-use-a.md": nygard(1, "Use A", "Akzeptiert")})
    repo.git("mv", "doc/adr/0001-use-a.md", "doc/adr/0003-use-a.md")
    repo.commit("2024-03-01", {"doc/adr/0003-use-a.md": nygard(3, "Use A", "Akzeptiert")})
    repo.commit("2024-04-01", {"doc/adr/0003-use-a.md": nygard(3, "Use A", "Accepted")})
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:1 decision=Use A"),
        ("2024-03-01", "revised", "adr:1 decision=Use A -> adr:3 decision=Use A"),
    ]
    assert result.events[1].metadata["renumbered_from"] == "adr:1"
    assert result.events[1].metadata["status"] == "unknown"
    assert (
        "doc/adr/0003-use-a.md: status 'Akzeptiert' not understood; its decision kept"
        in result.skipped
    )


def distinct_record(n: int, title: str, status: str) -> str:
    """A record whose body differs enough from the others' that git pairs its renames."""
    why = ("Why " + title + ". ") * 30
    return nygard(n, title, status).replace("## Context", f"## Context\n\n{why}")


def swap_numbers(repo, a: str, b: str) -> None:
    """ADR 1 (``a``, "use-a") and ADR 2 (``b``, "use-b") swap numbers, as `git mv` does."""
    repo.git("mv", a, "doc/adr/tmp.md")
    repo.git("mv", b, "doc/adr/0001-use-b.md")
    repo.git("mv", "doc/adr/tmp.md", "doc/adr/0002-use-a.md")


def test_records_swapping_numbers_while_their_status_cannot_be_read_take_their_decisions(
    repo, brief
):
    """8a2381b moved an unread record's decision to its new number only when nothing held
    that subject: two records swapping numbers each found the other's decision there, and
    both decisions ended ("ADR 2 is without a known status again"), to be added again once
    their statuses read. Accepted, the same swap is two renumberings."""
    a, b = "doc/adr/0001-use-a.md", "doc/adr/0002-use-b.md"

    repo.commit(
        "2024-01-01",
        {a: distinct_record(1, "Use A", "Accepted"), b: distinct_record(2, "Use B", "Accepted")},
    )
    repo.commit(
        "2024-02-01",
        {
            a: distinct_record(1, "Use A", "Akzeptiert"),
            b: distinct_record(2, "Use B", "Akzeptiert"),
        },
    )
    swap_numbers(repo, a, b)
    repo.commit(
        "2024-03-01",
        {
            "doc/adr/0002-use-a.md": distinct_record(2, "Use A", "Akzeptiert"),
            "doc/adr/0001-use-b.md": distinct_record(1, "Use B", "Akzeptiert"),
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:1 decision=Use A"),
        ("2024-01-01", "added", "adr:2 decision=Use B"),
        ("2024-03-01", "revised", "adr:1 decision=Use A -> adr:2 decision=Use A"),
        ("2024-03-01", "revised", "adr:2 decision=Use B -> adr:1 decision=Use B"),
    ]


def test_records_swapping_numbers_one_proposed_one_unread_end_one_decision(repo, brief):
    """One of two swapping records proposed, the other unread: the proposed one's decision
    ends, as when the other is accepted; the unread one's moves to its new number and
    stays (it was ended too, "ADR 2 is proposed again", under the subject it took)."""
    a, b = "doc/adr/0001-use-a.md", "doc/adr/0002-use-b.md"

    repo.commit(
        "2024-01-01",
        {a: distinct_record(1, "Use A", "Accepted"), b: distinct_record(2, "Use B", "Accepted")},
    )
    swap_numbers(repo, a, b)
    repo.commit(
        "2024-03-01",
        {
            "doc/adr/0002-use-a.md": distinct_record(2, "Use A", "Proposed"),
            "doc/adr/0001-use-b.md": distinct_record(1, "Use B", "Akzeptiert"),
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:1 decision=Use A"),
        ("2024-01-01", "added", "adr:2 decision=Use B"),
        ("2024-03-01", "invalidated", "adr:1 decision=Use A"),
        ("2024-03-01", "revised", "adr:2 decision=Use B -> adr:1 decision=Use B"),
    ]


def test_a_record_renumbered_unread_onto_a_deleted_records_number_ends_that_decision(repo, brief):
    """An unread record renumbered to the number of a record deleted in the same commit
    found the deleted record's decision under its new subject: its own decision ended,
    the deleted one's was kept as if it were its own (and ended later as "deprecated")."""
    a, b = "doc/adr/0001-use-a.md", "doc/adr/0003-use-b.md"
    repo.commit(
        "2024-01-01", {a: nygard(1, "Use A", "Accepted"), b: nygard(3, "Use B", "Accepted")}
    )
    repo.commit("2024-02-01", {a: nygard(1, "Use A", "Akzeptiert")})
    repo.git("rm", "-q", b)
    repo.git("mv", a, "doc/adr/0003-use-a.md")
    repo.commit("2024-03-01", {"doc/adr/0003-use-a.md": nygard(3, "Use A", "Akzeptiert")})
    repo.commit("2024-04-01", {"doc/adr/0003-use-a.md": nygard(3, "Use A", "Deprecated")})
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:1 decision=Use A"),
        ("2024-01-01", "added", "adr:3 decision=Use B"),
        ("2024-03-01", "invalidated", "adr:3 decision=Use B"),
        ("2024-03-01", "revised", "adr:1 decision=Use A -> adr:3 decision=Use A"),
        ("2024-04-01", "invalidated", "adr:3 decision=Use A"),
    ]
    assert result.events[2].reason == "ADR 3 deleted"


def test_a_deleted_records_decision_is_not_kept_by_an_unread_record_taking_its_number(repo, brief):
    """An unread record (one that never held a decision) renumbered to the number of a
    record deleted in the same commit kept the deleted record's decision as its own, at
    its own path since 2d8aaeb, until it was deprecated; Proposed, "ADR 3 deleted"."""
    a, b = "doc/adr/0001-use-a.md", "doc/adr/0003-use-b.md"
    repo.commit(
        "2024-01-01", {a: nygard(1, "Use A", "Akzeptiert"), b: nygard(3, "Use B", "Accepted")}
    )
    repo.git("rm", "-q", b)
    repo.git("mv", a, "doc/adr/0003-use-a.md")
    repo.commit("2024-03-01", {"doc/adr/0003-use-a.md": nygard(3, "Use A", "Akzeptiert")})
    repo.commit("2024-04-01", {"doc/adr/0003-use-a.md": nygard(3, "Use A", "Deprecated")})
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:3 decision=Use B"),
        ("2024-03-01", "invalidated", "adr:3 decision=Use B"),
    ]
    assert result.events[1].reason == "ADR 3 deleted"


def test_a_record_moved_while_its_status_cannot_be_read_is_found_where_it_went(repo, brief):
    """The decision kept named the file it was read from: once the record was moved (same
    number, same title), its supersession found no record there and said "ADR 1 deleted"
    a commit after the move, instead of the successor taking over."""
    repo.commit(
        "2024-01-01",
        {
            "doc/adr/0001-use-a.md": nygard(1, "Use A", "Accepted"),
            "doc/adr/0002-use-b.md": nygard(2, "Use B", "Proposed"),
        },
    )
    repo.commit("2024-02-01", {"doc/adr/0001-use-a.md": nygard(1, "Use A", "Akzeptiert")})
    repo.git("mv", "doc/adr/0001-use-a.md", "doc/adr/0001-use-a-first.md")
    repo.commit("2024-03-01")
    repo.commit(
        "2024-04-01",
        {
            "doc/adr/0001-use-a-first.md": nygard(1, "Use A", "Superseded by [2](0002-use-b.md)"),
            "doc/adr/0002-use-b.md": nygard(2, "Use B", "Accepted"),
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:1 decision=Use A"),
        ("2024-04-01", "revised", "adr:1 decision=Use A -> adr:2 decision=Use B"),
    ]


def test_a_status_of_unclosed_links_is_read_in_time_and_named(repo, brief):
    """Text like ``[a]([a]([a](...`` (a pasted, cut or binary status) took time cubic in
    its length to read: 6 KB of it, half a minute; 10 KB, minutes; one record could hold a
    pull for hours."""
    path = "doc/adr/0001-use-a.md"
    repo.commit("2024-01-01", {path: nygard(1, "Use A", "Accepted")})
    repo.commit("2024-02-01", {path: nygard(1, "Use A", "Superseded by " + "[a](" * 1500)})
    started = time.monotonic()
    result = pull(adr_source(repo))
    assert time.monotonic() - started < 5
    assert brief(result.events)[-1] == ("2024-02-01", "invalidated", "adr:1 decision=Use A")
    assert any(
        line.startswith(f"{path}: superseded by a record not found") for line in result.skipped
    )


def test_a_heading_holding_a_long_run_of_spaces_is_read_in_time(repo, brief):
    """A heading with a run of 2,000 spaces inside took 47 s to match, time cubic in the
    run, and every heading is matched several times: one such line held the pull."""
    aligned = "## Notes" + " " * 2000 + "(aligned by an editor)"
    text = nygard(1, "Use A", "Accepted").replace("## Context", f"{aligned}\n\n## Context")
    repo.commit("2024-01-01", {"doc/adr/0001-use-a.md": text})
    started = time.monotonic()
    result = pull(adr_source(repo))
    assert time.monotonic() - started < 5
    assert brief(result.events) == [("2024-01-01", "added", "adr:1 decision=Use A")]


def test_deleting_an_accepted_record_invalidates_its_decision(repo, brief):
    repo.commit("2024-01-01", {"docs/adr/0001-a.md": nygard(1, "Use A", "Accepted")})
    repo.commit(
        "2024-02-01",
        {"docs/adr/0001-a.md": None, "docs/adr/0002-b.md": nygard(2, "Use B", "Proposed")},
    )
    events = pull(adr_source(repo)).events
    assert brief(events)[-1] == ("2024-02-01", "invalidated", "adr:1 decision=Use A")
    assert events[-1].reason == "ADR 1 deleted"


def test_a_git_killed_while_answering_is_no_answer(repo, tmp_path, monkeypatch, brief):
    # records moved from docs/decisions to doc/adr: which names they had before comes from
    # one `git log --diff-filter=A`; killed (the OOM killer), its empty output once read as
    # "no earlier names", and the records as first added in the move, a month late
    repo.commit("2024-01-01", {"docs/decisions/0001-use-kafka.md": nygard(1, "Kafka", "Accepted")})
    repo.commit("2024-02-01", {"docs/decisions/0002-use-go.md": nygard(2, "Go", "Accepted")})
    (repo.path / "doc").mkdir()
    repo.git("mv", "docs/decisions", "doc/adr")
    repo.commit("2024-03-01")
    whole = pull(adr_source(repo))
    assert [e[0] for e in brief(whole.events)] == ["2024-01-01", "2024-02-01"]
    bin_dir, runs = cutting_git(
        tmp_path, "log", limit=0, times=1, then="die", match="--diff-filter=A"
    )
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    killed = adr_source(repo).pull(None)
    assert len(runs.read_text().split()) == 1
    assert killed.error == "git log was killed (signal 9)"
    assert killed.events == [] and killed.cursor is None
    assert pull(adr_source(repo)).events == whole.events  # the next run: the git answers


def test_a_directory_whose_name_holds_a_newline_does_not_put_the_reading_out_of_step(repo, brief):
    # asked of `cat-file` one request a line, "notes\nx/0001-n.md" was two requests, and
    # every answer after it another file's: the records in docs/adr were then not found
    repo.write({f"notes\nx/000{n}-note.md": nygard(n, f"Note {n}", "Rejected") for n in (1, 2, 3)})
    repo.commit(
        "2024-01-01",
        {
            "docs/adr/0001-use-kafka.md": nygard(1, "Use Kafka", "Accepted"),
            "docs/adr/0002-use-go.md": nygard(2, "Use Go", "Accepted"),
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:1 decision=Use Kafka"),
        ("2024-01-01", "added", "adr:2 decision=Use Go"),
    ]


def test_no_records_anywhere_is_an_error_naming_where_it_looked(repo):
    repo.commit("2024-01-01", {"src/a.py": "", "docs/guide.md": "# Guide\n"})
    result = adr_source(repo).pull(None)
    assert result.events == []
    assert result.error is not None
    assert str(repo.path) in result.error
    for where in (".adr-dir", "doc/adr", "docs/decisions", "ADR", "NNNN-*.md"):
        assert where in result.error, where


def test_a_named_directory_without_records_is_an_error_naming_it(repo):
    repo.commit("2024-01-01", {"src/a.py": "", "decision-record/README.md": "# Decisions\n"})
    result = adr_source(repo, dir="decision-record").pull(None)
    assert result.events == []
    assert result.error is not None and "'decision-record'" in result.error


def test_bad_options_name_the_field():
    with pytest.raises(ConfigError, match="dir"):
        build_source("adr", "d", {"path": "/x", "dir": "../outside"})
    with pytest.raises(ConfigError, match="unknown|extra|colour"):
        build_source("adr", "d", {"path": "/x", "colour": 1})


# --------------------------------------------------------------------------- real logs' shapes


def test_one_record_superseding_two_in_one_commit_revises_both(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "doc/adr/0001-use-a.md": nygard(1, "Use A", "Accepted"),
            "doc/adr/0002-use-b.md": nygard(2, "Use B", "Accepted"),
        },
    )
    repo.commit(
        "2024-02-01",
        {
            "doc/adr/0001-use-a.md": nygard(1, "Use A", "Superseded by [3. Use C](0003-use-c.md)"),
            "doc/adr/0002-use-b.md": nygard(2, "Use B", "Superseded by [3. Use C](0003-use-c.md)"),
            "doc/adr/0003-use-c.md": nygard(
                3,
                "Use C",
                "Accepted\n\nSupersedes [1. Use A](0001-use-a.md)\n\n"
                "Supersedes [2. Use B](0002-use-b.md)",
            ),
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events)[2:] == [
        ("2024-02-01", "revised", "adr:1 decision=Use A -> adr:3 decision=Use C"),
        ("2024-02-01", "revised", "adr:2 decision=Use B -> adr:3 decision=Use C"),
    ]
    assert len({ev.id for ev in result.events}) == len(result.events) == 4


def test_a_record_superseded_by_two_ends_once_and_links_each_successor(repo, brief):
    repo.commit("2024-01-01", {"doc/adr/0001-one-db.md": nygard(1, "One database", "Accepted")})
    repo.commit(
        "2024-02-01",
        {
            "doc/adr/0001-one-db.md": nygard(
                1,
                "One database",
                "Superseded by [3. Orders DB](0003-orders-db.md)\n\n"
                "Superseded by [4. Users DB](0004-users-db.md)",
            ),
            "doc/adr/0003-orders-db.md": nygard(3, "Orders DB", "Accepted"),
            "doc/adr/0004-users-db.md": nygard(4, "Users DB", "Accepted"),
        },
    )
    events = pull(adr_source(repo)).events
    assert brief(events) == [
        ("2024-01-01", "added", "adr:1 decision=One database"),
        ("2024-02-01", "revised", "adr:1 decision=One database -> adr:3 decision=Orders DB"),
        ("2024-02-01", "added", "adr:4 decision=Users DB"),
    ]
    assert events[1].metadata["superseded_by"] == "adr:3 adr:4"
    assert events[2].metadata["supersedes"] == "adr:1"


def test_a_reused_number_gets_its_own_subject_and_links_resolve_by_file_name(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "doc/adr/0005-use-rest.md": nygard(5, "Use REST", "Accepted"),
            "doc/adr/0005-use-grpc.md": nygard(5, "Use gRPC", "Proposed"),
        },
    )
    repo.commit(
        "2024-02-01",
        {
            "doc/adr/0006-use-events.md": nygard(
                6, "Use events", "Accepted\n\nSupersedes [5. Use REST](0005-use-rest.md)"
            )
        },
    )
    repo.commit(
        "2024-03-01", {"doc/adr/0007-x.md": nygard(7, "Use X", "Accepted\n\nSupersedes ADR-5")}
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:5:0005-use-rest decision=Use REST"),
        (
            "2024-02-01",
            "revised",
            "adr:5:0005-use-rest decision=Use REST -> adr:6 decision=Use events",
        ),
        ("2024-03-01", "added", "adr:7 decision=Use X"),
    ]
    assert any("duplicate number 5" in line for line in result.skipped)


def test_a_moved_record_keeps_its_subject_and_is_no_duplicate(repo, brief):
    repo.commit("2024-01-01", {"doc/adr/0001-use-a.md": nygard(1, "Use A", "Accepted")})
    repo.commit(
        "2024-02-01",
        {
            "doc/adr/0001-use-a.md": None,
            "doc/adr/0001-use-a-everywhere.md": nygard(1, "Use A", "Accepted"),
        },
    )
    repo.commit(
        "2024-03-01", {"doc/adr/0001-use-a-everywhere.md": nygard(1, "Use A", "Deprecated")}
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:1 decision=Use A"),
        ("2024-03-01", "invalidated", "adr:1 decision=Use A"),
    ]
    assert result.events[1].metadata["adr_file"] == "doc/adr/0001-use-a-everywhere.md"
    assert not any("duplicate" in line for line in result.skipped)


def test_template_guidance_left_in_a_record_is_reported_and_skipped(repo, brief):
    guidance = "Accepted or Rejected. If superseded, write 'Superseded by ADRzzz'"
    repo.commit(
        "2024-01-01",
        {
            "doc/adr/0001-use-a.md": nygard(1, "Use A", "Accepted"),
            "doc/adr/0002-use-b.md": nygard(2, "Use B", guidance),
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [("2024-01-01", "added", "adr:1 decision=Use A")]
    assert any(
        "0002-use-b.md" in line and "ambiguous status 'Accepted or Rejected'" in line
        for line in result.skipped
    ), result.skipped


# alphagov/forms (ae72f4b): ADR/ADR025-remove-papertrail.md kept its template's heading
FORMS_TEMPLATE = (
    "# ADRxxx: Decision Record Title (a description of the decision, not the problem)\n\n"
    "Date: YYYY-MM-DD\n\n## Status\n\n> Accepted or Rejected\n\n## Context\n\nWhy.\n"
)


def forms_record(number: int, heading: str, status: str = "> Accepted") -> str:
    return (
        f"# ADR{number:03d}: {heading}\n\nDate: 2024-02-01\n\n## Status\n\n{status}\n\n"
        f"## Context\n\nWhy.\n\n## Decision\n\nWhat.\n"
    )


def test_a_title_left_as_the_templates_is_named_from_its_file_name(repo, brief):
    placeholder = "Decision Record Title (a description of the decision, not the problem)"
    repo.commit(
        "2023-01-01",
        {
            "ADR/ADRXXX-architecture-decision-record-template.md": FORMS_TEMPLATE,
            "ADR/ADR013-use-paper-trail-gem.md": forms_record(13, "Add PaperTrail gem"),
        },
    )
    repo.commit(
        "2024-02-07",
        {
            "ADR/ADR025-remove-papertrail.md": forms_record(
                25, placeholder, "> Accepted\n\nSupersedes [ADR013](ADR013-use-paper-trail-gem.md)"
            )
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2023-01-01", "added", "adr:13 decision=Add PaperTrail gem"),
        (
            "2024-02-07",
            "revised",
            "adr:13 decision=Add PaperTrail gem -> adr:25 decision=Remove papertrail",
        ),
    ]
    assert [line for line in result.skipped if "ADR025" in line] == [
        f"ADR/ADR025-remove-papertrail.md: its title is its template's ({placeholder!r}); "
        "named from its file name"
    ]
    # the template reworded, then deleted: what kept its old heading is still no title
    repo.commit(
        "2024-03-01",
        {"ADR/ADRXXX-architecture-decision-record-template.md": "# ADRxxx: Title\n"},
    )
    repo.commit("2024-03-02", {"ADR/ADRXXX-architecture-decision-record-template.md": None})
    text = repo.read("ADR/ADR025-remove-papertrail.md") + "\nEdited.\n"
    repo.commit(
        "2024-03-03",
        {
            "ADR/ADR025-remove-papertrail.md": text,
            "ADR/ADR026-drop-x.md": forms_record(26, placeholder),
        },
    )
    again = pull(adr_source(repo), result.cursor)
    assert brief(again.events) == [("2024-03-03", "added", "adr:26 decision=Drop x")]
    assert brief(pull(adr_source(repo)).events)[2:] == brief(again.events)


def test_a_record_named_from_its_file_name_is_the_same_record_when_renumbered(repo, brief):
    placeholder = "Decision Record Title (a description of the decision, not the problem)"
    body = "".join(f"papertrail is removed, point {i}.\n" for i in range(12))
    repo.commit(
        "2024-02-07",
        {
            "ADR/ADRXXX-architecture-decision-record-template.md": FORMS_TEMPLATE,
            "ADR/ADR025-remove-papertrail.md": forms_record(25, placeholder) + body,
        },
    )
    repo.git("mv", "ADR/ADR025-remove-papertrail.md", "ADR/ADR026-remove-papertrail.md")
    text = repo.read("ADR/ADR026-remove-papertrail.md").replace("# ADR025:", "# ADR026:")
    repo.write({"ADR/ADR026-remove-papertrail.md": text})
    repo.commit("2024-02-08")
    assert brief(pull(adr_source(repo)).events) == [
        ("2024-02-07", "added", "adr:25 decision=Remove papertrail"),
        (
            "2024-02-08",
            "revised",
            "adr:25 decision=Remove papertrail -> adr:26 decision=Remove papertrail",
        ),
    ]


def test_a_template_added_after_its_record_names_it_then_pulled_either_way(repo, brief):
    placeholder = "Decision Record Title (a description of the decision, not the problem)"
    steps = [
        ("2024-01-01", {"ADR/ADR025-remove-papertrail.md": forms_record(25, placeholder)}),
        ("2024-01-02", {"ADR/ADRXXX-architecture-decision-record-template.md": FORMS_TEMPLATE}),
        ("2024-01-03", {"ADR/ADR026-use-rails.md": forms_record(26, "Use Rails")}),
    ]
    cursor, by_step = None, []
    for when, files in steps:
        repo.commit(when, files)
        result = pull(adr_source(repo), cursor)
        by_step += result.events
        cursor = result.cursor
    at_once = pull(adr_source(repo)).events
    assert brief(at_once) == [
        ("2024-01-01", "added", f"adr:25 decision={placeholder}"),
        (
            "2024-01-02",
            "revised",
            f"adr:25 decision={placeholder} -> adr:25 decision=Remove papertrail",
        ),
        ("2024-01-03", "added", "adr:26 decision=Use Rails"),
    ]
    assert [(e.id, e.fact, dict(e.metadata)) for e in by_step] == [
        (e.id, e.fact, dict(e.metadata)) for e in at_once
    ]


def test_a_template_that_copies_a_real_title_leaves_that_record_alone(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "doc/adr/0001-record-architecture-decisions.md": nygard(
                1, "Record architecture decisions", "Accepted"
            )
        },
    )
    repo.commit(
        "2024-01-02",
        {
            "doc/adr/templates/template.md": "# 1. Record architecture decisions\n\n## Status\n\nAccepted\n"
        },
    )
    record = repo.read("doc/adr/0001-record-architecture-decisions.md")
    repo.commit("2024-01-03", {"doc/adr/0001-record-architecture-decisions.md": record + "More.\n"})
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:1 decision=Record architecture decisions"),
    ]
    assert not [line for line in result.skipped if "template" in line]


def test_a_decision_prefixed_file_name_gives_its_words_alone(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "docs/decisions/adr-template.md": "# {short title of solved problem and solution}\n",
            "docs/decisions/decision-0006-use-go.md": (
                "# {short title of solved problem and solution}\n\n* Status: accepted\n"
            ),
        },
    )
    assert brief(pull(adr_source(repo)).events) == [
        ("2024-01-01", "added", "adr:6 decision=Use go")
    ]


def test_a_record_superseded_by_itself_is_named_as_such(repo, brief):
    repo.commit("2024-01-01", {"doc/adr/0003-self.md": nygard(3, "Self", "Accepted")})
    repo.commit(
        "2024-02-01",
        {"doc/adr/0003-self.md": nygard(3, "Self", "Superseded by [3. Self](0003-self.md)")},
    )
    result = pull(adr_source(repo))
    assert any(
        line.startswith("doc/adr/0003-self.md: superseded by itself (0003-self.md")
        for line in result.skipped
    ), result.skipped


def test_a_record_saved_as_latin_1_is_read_and_says_which_byte_it_could_not(repo, brief):
    latin_1 = nygard(5, "Décision: use Café for caching", "Accepted").encode("latin-1")
    repo.commit(
        "2024-01-01",
        {
            "doc/adr/0005-cafe.md": latin_1,
            # U+FFFD written as such is text, not a byte that could not be read
            "doc/adr/0006-replacement.md": nygard(6, "Keep \ufffd as it is", "Accepted"),
        },
    )
    result = pull(adr_source(repo))
    assert [event.fact.value for event in result.events] == [
        "D\ufffdcision: use Caf\ufffd for caching",
        "Keep \ufffd as it is",
    ]
    offset = latin_1.index(b"\xe9")
    said = [line for line in result.skipped if "0005-cafe.md" in line]
    assert len(said) == 1, result.skipped
    assert f"not UTF-8 text: byte e9 at offset {offset}" in said[0]
    assert not any("0006-replacement.md" in line for line in result.skipped), result.skipped
