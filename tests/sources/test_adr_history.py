"""The `adr` source on histories shaped like real ADR logs: numbers shared by two records,
records renumbered with `git mv`, an ADR directory renamed, a record superseded twice, and
the layouts teams keep their logs in, found without `dir`."""

from __future__ import annotations

import pytest

from healthd.sources import build_source


def adr_source(repo, **options):
    options = {
        "path": str(repo.path),
        "revalidate_clock": "head",
        "revalidate_interval": "P3650D",
        **options,
    }
    return build_source("adr", "decisions", options)


def pull(source, cursor=None):
    result = source.pull(cursor)
    assert result.error is None, result.error
    return result


def nygard(number: int, title: str, status: str) -> str:
    return (
        f"# {number}. {title}\n\nDate: 2024-01-01\n\n## Status\n\n{status}\n\n"
        "## Context\n\nWhy.\n\n## Decision\n\nWhat.\n\n## Consequences\n\nSo.\n"
    )


def set_status(repo, path: str, old: str, new: str) -> None:
    text = repo.read(path)
    assert old in text
    repo.write({path: text.replace(old, new, 1)})


# --------------------------------------------------------------------------- 1: shared numbers


@pytest.fixture
def two_025(repo):
    """ADR 25 exists; a branch merged later adds a second ADR 25 (Argo CD)."""
    repo.commit(
        "2024-01-01",
        {
            "doc/adr/0010-deploy-with-helm.md": nygard(10, "Deploy with Helm", "Accepted"),
            "doc/adr/0025-use-kafka.md": nygard(25, "Use Kafka", "Accepted"),
        },
    )
    return repo


def test_a_number_two_records_share_resolves_to_the_one_added_in_the_same_commit(two_025, brief):
    repo = two_025
    repo.commit(
        "2024-02-01",
        {
            "doc/adr/0025-deploy-with-argo-cd.md": nygard(25, "Deploy with Argo CD", "Accepted"),
            "doc/adr/0010-deploy-with-helm.md": nygard(
                10, "Deploy with Helm", "Superseded by ADR025"
            ),
        },
    )
    first = pull(adr_source(repo))
    assert brief(first.events)[-1] == (
        "2024-02-01",
        "revised",
        "adr:10 decision=Deploy with Helm -> "
        "adr:25:0025-deploy-with-argo-cd decision=Deploy with Argo CD",
    )
    assert not any("not found" in line or "ambiguous" in line for line in first.skipped)
    # a later change to the other ADR 25 does not move the link (in this run or the next)
    repo.commit(
        "2024-03-01", {"doc/adr/0025-use-kafka.md": nygard(25, "Use Kafka", "Accepted\n\nOK")}
    )
    assert brief(pull(adr_source(repo), first.cursor).events) == []
    assert brief(pull(adr_source(repo)).events) == brief(first.events)


def test_a_number_two_records_share_resolves_by_the_title_the_reference_quotes(two_025, brief):
    repo = two_025
    repo.commit(
        "2024-02-01",
        {"doc/adr/0025-deploy-with-argo-cd.md": nygard(25, "Deploy with Argo CD", "Accepted")},
    )
    repo.commit(
        "2024-03-01",
        {
            "doc/adr/0010-deploy-with-helm.md": nygard(
                10, "Deploy with Helm", "Superseded by ADR-025 Deploy with Argo CD"
            )
        },
    )
    result = pull(adr_source(repo))
    assert brief(result.events)[-1] == (
        "2024-03-01",
        "revised",
        "adr:10 decision=Deploy with Helm -> "
        "adr:25:0025-deploy-with-argo-cd decision=Deploy with Argo CD",
    )


def test_a_shared_number_nothing_decides_is_called_ambiguous_not_missing(two_025, brief):
    repo = two_025
    repo.commit(
        "2024-02-01",
        {"doc/adr/0025-deploy-with-argo-cd.md": nygard(25, "Deploy with Argo CD", "Accepted")},
    )
    repo.commit(
        "2024-03-01",
        {"doc/adr/0010-deploy-with-helm.md": nygard(10, "Deploy with Helm", "Superseded by 25")},
    )
    result = pull(adr_source(repo))
    assert brief(result.events)[-1] == (
        "2024-03-01",
        "invalidated",
        "adr:10 decision=Deploy with Helm",
    )
    lines = [line for line in result.skipped if "0010" in line]
    assert lines and all("ambiguous" in line and "not found" not in line for line in lines)
    assert "0025-use-kafka.md" in lines[0] and "0025-deploy-with-argo-cd.md" in lines[0]


# --------------------------------------------------------------------------- 2: renumbered


def test_a_renumbered_record_moves_to_its_new_number_and_its_supersession_ends_it(
    repo, needs_adr, brief
):
    repo.adr("init", when="2024-01-01")
    repo.commit("2024-01-01", message="adr init")
    repo.adr("new", "Deploy with Helm", when="2024-02-01")
    repo.adr("new", "Use Kafka", when="2024-02-01")
    repo.commit("2024-02-01")
    # a record merged from a branch took number 3 too; Kafka moves to 4
    repo.git("mv", "doc/adr/0003-use-kafka.md", "doc/adr/0004-use-kafka.md")
    set_status(repo, "doc/adr/0004-use-kafka.md", "# 3. Use Kafka", "# 4. Use Kafka")
    repo.commit("2024-03-01", message="renumber")
    repo.adr("new", "-s", "4", "Use NATS", when="2024-04-01")
    repo.commit("2024-04-01")
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "adr:1 decision=Record architecture decisions"),
        ("2024-02-01", "added", "adr:2 decision=Deploy with Helm"),
        ("2024-02-01", "added", "adr:3 decision=Use Kafka"),
        # the same decision, now ADR 4 in the log: one event moves it, none ends it
        ("2024-03-01", "revised", "adr:3 decision=Use Kafka -> adr:4 decision=Use Kafka"),
        ("2024-04-01", "revised", "adr:4 decision=Use Kafka -> adr:5 decision=Use NATS"),
    ]
    assert result.events[3].metadata["renumbered_from"] == "adr:3"
    assert result.events[-1].metadata["adr_file"] == "doc/adr/0005-use-nats.md"


def test_a_renumbered_record_moves_once_across_runs(repo, needs_adr, brief):
    repo.adr("init", when="2024-01-01")
    repo.adr("new", "Use Kafka", when="2024-01-01")
    repo.commit("2024-01-01")
    before = pull(adr_source(repo))
    repo.git("mv", "doc/adr/0002-use-kafka.md", "doc/adr/0007-use-kafka.md")
    repo.commit("2024-03-01", message="renumber")
    after = pull(adr_source(repo), before.cursor)
    assert brief(after.events) == [
        ("2024-03-01", "revised", "adr:2 decision=Use Kafka -> adr:7 decision=Use Kafka"),
    ]
    assert pull(adr_source(repo), after.cursor).events == []
    repo.adr("new", "-s", "7", "Use NATS", when="2024-04-01")
    repo.commit("2024-04-01")
    assert brief(pull(adr_source(repo), after.cursor).events) == [
        ("2024-04-01", "revised", "adr:7 decision=Use Kafka -> adr:8 decision=Use NATS"),
    ]


# The shapes below are alphagov/govuk-aws's (81ee9f6e): branches merged with the same
# number, then "Fix ADR numbering & links" renames a record and its title to a free number.
DIR = "doc/architecture/decisions"


def record(number: int, title: str, status: str) -> str:
    """A record whose text is its own, as real ones are (git pairs renames by content)."""
    words = " ".join(f"{title.lower()} point {i}." for i in range(12))
    return nygard(number, title, status).replace("Why.", words)


def renumber(repo, old: str, new: str, number_before: int, number_after: int) -> None:
    repo.git("mv", f"{DIR}/{old}", f"{DIR}/{new}")
    set_status(repo, f"{DIR}/{new}", f"# {number_before}. ", f"# {number_after}. ")


def test_a_duplicate_renumbered_to_a_free_number_takes_that_number(repo, brief):
    repo.commit("2017-07-14", {f"{DIR}/0015-dns-infrastructure.md": record(15, "DNS", "Accepted")})
    repo.commit(
        "2017-07-15",
        {
            f"{DIR}/0015-terraform-data-structure.md": record(
                15, "Terraform Data Structure", "Accepted"
            )
        },
    )
    renumber(repo, "0015-terraform-data-structure.md", "0017-terraform-data-structure.md", 15, 17)
    repo.commit("2017-07-20", message="Fix ADR numbering & links")
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2017-07-14", "added", "adr:15 decision=DNS"),
        (
            "2017-07-15",
            "added",
            "adr:15:0015-terraform-data-structure decision=Terraform Data Structure",
        ),
        (
            "2017-07-20",
            "revised",
            "adr:15:0015-terraform-data-structure decision=Terraform Data Structure -> "
            "adr:17 decision=Terraform Data Structure",
        ),
    ]
    moved = result.events[-1]
    assert moved.metadata["renumbered_from"] == "adr:15:0015-terraform-data-structure"
    assert moved.metadata["adr_file"] == f"{DIR}/0017-terraform-data-structure.md"
    # nothing more to say on the next run, and the cursor keeps the new subject
    assert pull(adr_source(repo), result.cursor).events == []


def test_the_record_kept_apart_takes_the_plain_number_once_the_other_moves_away(repo, brief):
    repo.commit(
        "2017-09-04",
        {
            f"{DIR}/0024-move-publicapi.md": record(
                24, "Move PublicAPI away from frontend-lb", "Accepted"
            )
        },
    )
    repo.commit("2017-09-14", {f"{DIR}/0024-ami-lookups.md": record(24, "AMI Lookups", "Accepted")})
    renumber(repo, "0024-move-publicapi.md", "0027-move-publicapi.md", 24, 27)
    repo.commit("2017-09-15", message="Fix ADR numbering")
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2017-09-04", "added", "adr:24 decision=Move PublicAPI away from frontend-lb"),
        ("2017-09-14", "added", "adr:24:0024-ami-lookups decision=AMI Lookups"),
        (
            "2017-09-15",
            "revised",
            "adr:24 decision=Move PublicAPI away from frontend-lb -> "
            "adr:27 decision=Move PublicAPI away from frontend-lb",
        ),
        (
            "2017-09-15",
            "revised",
            "adr:24:0024-ami-lookups decision=AMI Lookups -> adr:24 decision=AMI Lookups",
        ),
    ]
    assert [ev.metadata["renumbered_from"] for ev in result.events[2:]] == [
        "adr:24",
        "adr:24:0024-ami-lookups",
    ]
    assert len({ev.id for ev in result.events}) == 4


def test_a_number_freed_by_a_renumbering_is_no_duplicate_for_the_next_record(repo, brief):
    repo.commit(
        "2017-10-25", {f"{DIR}/0031-aws-metrics-and-alarms.md": record(31, "Alarms", "Pending")}
    )
    repo.commit(
        "2017-11-28", {f"{DIR}/0032-security-group-naming.md": record(32, "SG naming", "Pending")}
    )
    repo.write({f"{DIR}/0031-aws-metrics-and-alarms.md": None})
    renumber(repo, "0032-security-group-naming.md", "0031-security-group-naming.md", 32, 31)
    repo.commit("2018-01-24", message="remove alarms ADR")
    repo.commit(
        "2018-04-13",
        {
            f"{DIR}/0032-transfer-artefact-binary.md": record(
                32, "Transfer artefact binary", "Accepted"
            )
        },
    )
    set_status(repo, f"{DIR}/0031-security-group-naming.md", "Pending", "Accepted")
    repo.commit("2018-05-01")
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2018-04-13", "added", "adr:32 decision=Transfer artefact binary"),
        ("2018-05-01", "added", "adr:31 decision=SG naming"),
    ]
    assert not [line for line in result.skipped if "duplicate" in line]


def test_a_record_deleted_while_its_number_is_shared_leaves_it_to_the_other(repo, brief):
    repo.commit("2017-08-02", {f"{DIR}/0018-use-rds.md": record(18, "Use RDS", "Accepted")})
    repo.commit(
        "2017-08-03",
        {f"{DIR}/0018-centralise-mysql.md": record(18, "Centralise MySQL", "Accepted")},
    )
    repo.commit("2017-08-04", {f"{DIR}/0018-use-rds.md": None})
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2017-08-02", "added", "adr:18 decision=Use RDS"),
        ("2017-08-03", "added", "adr:18:0018-centralise-mysql decision=Centralise MySQL"),
        ("2017-08-04", "invalidated", "adr:18 decision=Use RDS"),
        (
            "2017-08-04",
            "revised",
            "adr:18:0018-centralise-mysql decision=Centralise MySQL -> adr:18 decision=Centralise MySQL",
        ),
    ]
    assert result.events[2].reason == "ADR 18 deleted"


# What a fresh-eyes review of the renumbering found, each a history of five records or fewer.
K5 = "0005-use-kafka.md"


def test_a_deleted_record_ends_as_deleted_when_the_one_kept_apart_takes_its_number(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            f"{DIR}/{K5}": record(5, "Use Kafka", "Accepted"),
            f"{DIR}/0007-use-nats.md": record(7, "Use NATS", "Accepted"),
        },
    )
    repo.commit("2024-01-02", {f"{DIR}/0005-use-rabbit.md": record(5, "Use Rabbit", "Accepted")})
    set_status(
        repo,
        f"{DIR}/0005-use-rabbit.md",
        "Accepted",
        "Superseded by [7. Use NATS](0007-use-nats.md)",
    )
    repo.commit("2024-01-03")
    repo.commit("2024-01-04", {f"{DIR}/{K5}": None})
    events = pull(adr_source(repo)).events
    assert brief(events)[-1] == ("2024-01-04", "invalidated", "adr:5 decision=Use Kafka")
    assert events[-1].reason == "ADR 5 deleted"
    assert events[-1].metadata["status"] == "deleted"


def test_a_record_deleted_ends_before_another_is_renumbered_into_its_number(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            f"{DIR}/{K5}": record(5, "Use Kafka", "Accepted"),
            f"{DIR}/0006-use-nats.md": record(6, "Use NATS", "Accepted"),
        },
    )
    repo.write({f"{DIR}/0006-use-nats.md": None})
    renumber(repo, K5, "0006-use-kafka.md", 5, 6)
    repo.commit("2024-01-02")
    assert brief(pull(adr_source(repo)).events)[2:] == [
        ("2024-01-02", "invalidated", "adr:6 decision=Use NATS"),
        ("2024-01-02", "revised", "adr:5 decision=Use Kafka -> adr:6 decision=Use Kafka"),
    ]


def test_records_renumbered_in_a_chain_leave_a_number_before_it_is_taken(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            f"{DIR}/{K5}": record(5, "Use Kafka", "Accepted"),
            f"{DIR}/0006-use-nats.md": record(6, "Use NATS", "Accepted"),
        },
    )
    renumber(repo, K5, "0006-use-kafka.md", 5, 6)
    renumber(repo, "0006-use-nats.md", "0007-use-nats.md", 6, 7)
    repo.commit("2024-01-02")
    result = pull(adr_source(repo))
    assert brief(result.events)[2:] == [
        ("2024-01-02", "revised", "adr:6 decision=Use NATS -> adr:7 decision=Use NATS"),
        ("2024-01-02", "revised", "adr:5 decision=Use Kafka -> adr:6 decision=Use Kafka"),
    ]
    assert not [line for line in result.skipped if "duplicate" in line]


def test_a_record_renumbered_and_deprecated_at_once_ends_as_deprecated_where_it_is(repo, brief):
    repo.commit("2024-01-01", {f"{DIR}/{K5}": record(5, "Use Kafka", "Accepted")})
    renumber(repo, K5, "0006-use-kafka.md", 5, 6)
    set_status(repo, f"{DIR}/0006-use-kafka.md", "Accepted", "Deprecated")
    repo.commit("2024-01-02")
    ended = pull(adr_source(repo)).events[-1]
    assert (ended.type, ended.fact.subject, ended.reason) == (
        "invalidated",
        "adr:5",
        "ADR 6 deprecated",
    )
    assert ended.metadata["status"] == "deprecated"
    assert ended.metadata["adr_file"] == f"{DIR}/0006-use-kafka.md"


def test_a_renumbered_record_reads_the_same_pulled_at_once_or_commit_by_commit(repo):
    steps = [
        ("2024-01-01", lambda: repo.write({f"{DIR}/{K5}": record(5, "Use Kafka", "Accepted")})),
        ("2024-01-02", lambda: renumber(repo, K5, "0006-use-kafka.md", 5, 6)),
        ("2024-01-03", lambda: repo.write({f"{DIR}/0007-x.md": record(7, "Use X", "Accepted")})),
        ("2024-01-04", lambda: repo.write({f"{DIR}/0006-use-kafka.md": None})),
    ]
    cursor, by_step = None, []
    for when, change in steps:
        change()
        repo.commit(when)
        result = pull(adr_source(repo), cursor)
        by_step += result.events
        cursor = result.cursor
    at_once = pull(adr_source(repo)).events
    assert [(e.id, e.type, e.fact, dict(e.metadata)) for e in by_step] == [
        (e.id, e.type, e.fact, dict(e.metadata)) for e in at_once
    ]
    assert "renumbered_from" not in at_once[-1].metadata  # the deletion is no renumbering


def test_a_superseded_record_renumbered_says_nothing_new(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            f"{DIR}/{K5}": record(5, "Use Kafka", "Accepted"),
            f"{DIR}/0007-use-nats.md": record(7, "Use NATS", "Accepted"),
        },
    )
    set_status(repo, f"{DIR}/{K5}", "Accepted", "Superseded by [7. Use NATS](0007-use-nats.md)")
    repo.commit("2024-01-02")
    renumber(repo, K5, "0006-use-kafka.md", 5, 6)
    repo.commit("2024-01-03")
    assert [e for e in brief(pull(adr_source(repo)).events) if e[0] == "2024-01-03"] == []


# --------------------------------------------------------------------------- 3: directory renamed


def test_history_before_the_adr_directory_was_renamed_is_kept(repo, needs_adr, brief):
    repo.adr("init", when="2017-03-01")
    repo.commit("2017-03-01", message="adr init")
    repo.adr("new", "Deploy with Helm", when="2017-06-01")
    repo.commit("2017-06-01")
    repo.adr("new", "-s", "2", "Deploy with Argo CD", when="2018-09-01")
    repo.commit("2018-09-01")
    repo.git("mv", "doc", "docs")
    repo.write({".adr-dir": "docs/adr\n"})
    repo.commit("2020-01-15", message="doc/ -> docs/")
    repo.adr("new", "Use Kafka", when="2021-05-01")
    repo.commit("2021-05-01")
    result = pull(adr_source(repo))
    assert brief(result.events) == [
        ("2017-03-01", "added", "adr:1 decision=Record architecture decisions"),
        ("2017-06-01", "added", "adr:2 decision=Deploy with Helm"),
        (
            "2018-09-01",
            "revised",
            "adr:2 decision=Deploy with Helm -> adr:3 decision=Deploy with Argo CD",
        ),
        ("2021-05-01", "added", "adr:4 decision=Use Kafka"),
    ]
    assert result.events[-1].metadata["adr_file"] == "docs/adr/0004-use-kafka.md"
    # the records the rename moved carry their new place when next observed
    again = pull(adr_source(repo), result.cursor)
    assert again.events == []


# --------------------------------------------------------------------------- 5: two successors


def test_a_second_successor_later_names_what_it_supersedes(repo, needs_adr, brief):
    repo.adr("init", when="2024-01-01")
    repo.adr("new", "Deploy with Helm", when="2024-01-01")
    repo.commit("2024-01-01")
    repo.adr("new", "-s", "2", "Deploy services with Argo CD", when="2024-03-01")
    repo.commit("2024-03-01")
    repo.adr("new", "-s", "2", "Deploy edge clusters with Flux", when="2024-06-01")
    repo.commit("2024-06-01")
    assert "Superseded by [4." in repo.read("doc/adr/0002-deploy-with-helm.md")
    events = pull(adr_source(repo)).events
    assert brief(events)[2:] == [
        (
            "2024-03-01",
            "revised",
            "adr:2 decision=Deploy with Helm -> adr:3 decision=Deploy services with Argo CD",
        ),
        ("2024-06-01", "added", "adr:4 decision=Deploy edge clusters with Flux"),
    ]
    assert events[-1].metadata["supersedes"] == "adr:2"


# --------------------------------------------------------------------------- 9: layouts


MADR = (
    "---\nstatus: accepted\ndate: 2024-01-10\n---\n# Use PostgreSQL\n\n"
    "## Context and Problem Statement\n\nWhere to keep orders.\n"
)


@pytest.mark.parametrize(
    ("files", "where"),
    [
        ({"ADR/0001-use-postgres.md": nygard(1, "Use PostgreSQL", "Accepted")}, "ADR"),
        (
            {
                "architecture-decision-record/0001-use-postgres.md": nygard(
                    1, "Use PostgreSQL", "Accepted"
                )
            },
            "architecture-decision-record",
        ),
        ({"docs/decisions/0001-use-postgres.md": MADR}, "docs/decisions"),
        (
            {
                "docs/architecture/adr-001-use-postgres.md": nygard(
                    1, "Use PostgreSQL", "Accepted"
                ),
                "docs/architecture/overview.md": "# Overview\n\nBoxes and arrows.\n",
                "docs/architecture/README.md": "# Architecture\n",
            },
            "docs/architecture",
        ),
        ({"decision-record/0001-use-postgres.md": MADR}, "decision-record"),
    ],
    ids=["ADR", "architecture-decision-record", "madr-docs-decisions", "adr-NNN", "NNNN"],
)
def test_usual_layouts_are_found_without_dir(repo, brief, files, where):
    repo.commit("2024-01-10", {"src/app.py": "print()\n", **files})
    result = pull(adr_source(repo))
    assert brief(result.events) == [("2024-01-10", "added", "adr:1 decision=Use PostgreSQL")]
    assert result.events[0].metadata["adr_file"].startswith(where + "/")
    assert result.skipped == []
