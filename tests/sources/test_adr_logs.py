"""The `adr` source on logs shaped like alphagov's: a repository keeping two decision logs
(technical ADRs in `ADR/`, product decision records `DR002-...md` in `decision-record/`),
a successor added as Pending in the commit that supersedes its predecessor
(govuk-aws 0004 → 0015), and a Pending record superseded by records that already exist
(gsp ADR030 → ADR031 and ADR034)."""

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


def record(heading: str, status: str, date: str = "2021-08-20") -> str:
    """A Nygard record as alphagov writes them: ``# DR002: Title`` and a Status section."""
    return (
        f"# {heading}\n\nDate: {date}\n\n## Status\n\n{status}\n\n"
        "## Context\n\nWhy.\n\n## Decision\n\nWhat.\n\n## Consequences\n\nSo.\n"
    )


# --------------------------------------------------------------------------- 1: two logs

ADR_TEMPLATE = record(
    "ADRxxx: Architecture Decision Record Title",
    "> Proposed, Accepted, Rejected, Deprecated, Superseded by ADRzzz",
    "YYYY-MM-DD",
)
DR_TEMPLATE = record(
    "DRxxx: Decision Record Title (a description of the decision, not the problem)",
    "> Proposed, Accepted, Rejected, Deprecated, Superseded by DRzzz",
    "YYYY-MM-DD",
)
DR002 = "decision-record/DR002-no-charges-for-lower-volume-services.md"


@pytest.fixture
def forms(repo):
    """alphagov/forms' shape: `ADR/ADRnnn-*.md` and `decision-record/DRnnn-*.md` (some
    `.MD`), each log with its template and README beside the records."""
    repo.commit(
        "2021-08-20",
        {
            "ADR/README.md": "# Architecture Decision Records\n",
            "ADR/ADR000-record-architecture-decisions.md": record(
                "ADR000: Record architecture decisions", "Accepted"
            ),
            "ADR/ADRXXX-architecture-decision-record-template.md": ADR_TEMPLATE,
            "decision-record/README.md": "# Decision Records\n\nUse the template.\n",
            "decision-record/DRXXX-decision-record-template.md": DR_TEMPLATE,
            DR002: record(
                "DR002: We won't charge lower volume services to use our platform", "Accepted"
            ),
        },
    )
    repo.commit(
        "2022-02-10",
        {
            "ADR/ADR002-use-govuk-notify.md": record("ADR002: Use GOV.UK Notify", "Accepted"),
            "decision-record/DR000-use-github-and-the-adr-process.md": record(
                "DR000: Recording our project decisions on GitHub using the ADR process",
                "Accepted",
            ),
        },
    )
    repo.commit(
        "2022-04-19",
        {
            "decision-record/DR005-choosing-insolvency-service-as-first-partner.MD": record(
                "DR005: Choosing The Insolvency Service as our first private beta partner",
                "Accepted",
            )
        },
    )
    repo.commit(
        "2022-08-04",
        {
            "decision-record/DR007-form-is-live-first-then-add-draft.MD": record(
                "DR007: We'll get ready to support a live form first", "Proposed"
            )
        },
    )
    repo.commit(
        "2023-05-09",
        {
            "decision-record/DR008-no-charges-at-all-for-using-GOV.UK-Forms.md": record(
                "DR008: No charges at all for using GOV.UK Forms", "Approved"
            )
        },
    )
    repo.commit(
        "2023-05-16",
        {
            DR002: record(
                "DR002: We won't charge lower volume services to use our platform",
                "Superseded by DR008",
            )
        },
    )
    return repo


DECISION_RECORDS = [
    (
        "2021-08-20",
        "added",
        "dr:2 decision=We won't charge lower volume services to use our platform",
    ),
    (
        "2022-02-10",
        "added",
        "dr:0 decision=Recording our project decisions on GitHub using the ADR process",
    ),
    (
        "2022-04-19",
        "added",
        "dr:5 decision=Choosing The Insolvency Service as our first private beta partner",
    ),
    ("2023-05-09", "added", "dr:8 decision=No charges at all for using GOV.UK Forms"),
    (
        "2023-05-16",
        "revised",
        "dr:2 decision=We won't charge lower volume services to use our platform -> "
        "dr:8 decision=No charges at all for using GOV.UK Forms",
    ),
]


def test_every_decision_log_of_a_repository_is_read_each_in_its_own_subject_space(forms, brief):
    result = pull(adr_source(forms))
    assert brief(result.events) == [
        ("2021-08-20", "added", "adr:0 decision=Record architecture decisions"),
        DECISION_RECORDS[0],
        ("2022-02-10", "added", "adr:2 decision=Use GOV.UK Notify"),
        *DECISION_RECORDS[1:],
    ]
    # ADR002 and DR002 are two decisions; the templates are no records
    assert {e.metadata["adr_file"] for e in result.events if e.fact.subject.endswith(":2")} == {
        "ADR/ADR002-use-govuk-notify.md",
        DR002,
    }
    assert result.skipped == []
    assert pull(adr_source(forms), result.cursor).events == []


def test_a_log_named_with_dir_reads_prefixed_record_numbers(forms, brief):
    """One log read alone keeps the ``adr:<n>`` subjects a repository with one log has
    always had."""
    result = pull(adr_source(forms, dir="decision-record"))
    assert brief(result.events) == [
        (day, kind, what.replace("dr:", "adr:")) for day, kind, what in DECISION_RECORDS
    ]
    assert result.skipped == []


# --------------------------------------------------------------------------- 2: Pending successor

DNS_DIR = "doc/architecture/decisions"
DNS_OLD = f"{DNS_DIR}/0004-dns-definitions-for-hosts-and-services.md"
DNS_NEW = f"{DNS_DIR}/0015-dns-infrastructure.md"


def govuk_aws(repo, predecessor: str) -> None:
    """alphagov/govuk-aws' shape: 0015 added as Pending in the commit that marks 0004
    "Superseded by [DNS Infrastructure](0015-...)"; 0015 accepted a week later."""
    repo.adr("init", DNS_DIR, when="2017-06-29")
    repo.commit("2017-06-29", message="adr init")
    repo.commit(
        "2017-07-04",
        {DNS_OLD: record("4. DNS definitions for hosts and services", predecessor, "2017-07-04")},
    )
    repo.commit(
        "2017-07-14",
        {
            DNS_NEW: record("15. DNS infrastructure", "Pending", "2017-07-14"),
            DNS_OLD: record(
                "4. DNS definitions for hosts and services",
                "Superseded by [DNS Infrastructure](0015-dns-infrastructure.md)",
                "2017-07-14",
            ),
        },
    )
    repo.commit("2017-07-21", {DNS_NEW: record("15. DNS infrastructure", "Accepted", "2017-07-20")})


def test_a_pending_successor_is_a_decision_from_its_acceptance_not_its_link(repo, needs_adr, brief):
    govuk_aws(repo, predecessor="Pending")
    events = pull(adr_source(repo)).events
    assert brief(events) == [
        ("2017-06-29", "added", "adr:1 decision=Record architecture decisions"),
        ("2017-07-21", "added", "adr:15 decision=DNS infrastructure"),
    ]
    assert events[-1].metadata["supersedes"] == "adr:4"


def test_an_accepted_record_superseded_by_a_pending_one_ends_when_its_status_says_so(
    repo, needs_adr, brief
):
    govuk_aws(repo, predecessor="Accepted")
    events = pull(adr_source(repo)).events
    assert brief(events) == [
        ("2017-06-29", "added", "adr:1 decision=Record architecture decisions"),
        ("2017-07-04", "added", "adr:4 decision=DNS definitions for hosts and services"),
        ("2017-07-14", "invalidated", "adr:4 decision=DNS definitions for hosts and services"),
        ("2017-07-21", "added", "adr:15 decision=DNS infrastructure"),
    ]
    assert events[2].reason == "ADR 4 superseded (by adr:15, not accepted)"
    assert events[-1].metadata["supersedes"] == "adr:4"


# --------------------------------------------------------------------------- 3: links to records


GSP = "docs/architecture/adr"
ADR030 = f"{GSP}/ADR030-aws-service-operator.md"
ADR031 = f"{GSP}/ADR031-postgres.md"
ADR034 = f"{GSP}/ADR034-one-service-operator-different-resource-kinds.md"


def gsp_record(heading: str, status: str) -> str:
    return f"# {heading}\n\n## Status\n\n{status}\n\n## Context\n\nWhy.\n\n## Decision\n\nWhat.\n"


def test_a_pending_record_superseded_by_records_that_exist_links_them_when_it_says_so(repo, brief):
    """alphagov/gsp: ADR030 stays Pending while ADR031 and ADR034 are accepted; weeks later
    it says "Superseded by [ADR031] and [ADR034]" (then the same as links)."""
    title30 = "ADR030: AWS Service Operator for SQS queues"
    repo.commit(
        "2019-08-02",
        {
            f"{GSP}/ADR000-template.md": gsp_record("ADR000: Title", "Pending/Accepted"),
            ADR030: gsp_record(title30, "Pending"),
        },
    )
    repo.commit(
        "2019-08-02T15:00",
        {ADR031: gsp_record("ADR031: Providing Postgres to tenants", "Accepted")},
    )
    repo.commit(
        "2019-08-08",
        {
            ADR034: gsp_record(
                "ADR034: Single service operator for many different resource kinds", "Accepted"
            ),
            ADR031: gsp_record(
                "ADR031: Providing Postgres to tenants",
                "Accepted, Supplemented by [ADR034](ADR034-one-service-operator-different-"
                "resource-kinds.md)",
            ),
        },
    )
    repo.commit("2019-08-23", {ADR030: gsp_record(title30, "Superseded by [ADR031] and [ADR034]")})
    repo.commit(
        "2019-09-03",
        {
            ADR030: gsp_record(
                title30,
                "Superceded by [ADR031](ADR031-postgres.md) and "
                "[ADR034](ADR034-one-service-operator-different-resource-kinds.md)",
            )
        },
    )
    events = pull(adr_source(repo)).events
    assert brief(events) == [
        ("2019-08-02", "added", "adr:31 decision=Providing Postgres to tenants"),
        (
            "2019-08-08",
            "added",
            "adr:34 decision=Single service operator for many different resource kinds",
        ),
        ("2019-08-23", "revalidated", "adr:31 decision=Providing Postgres to tenants"),
        (
            "2019-08-23",
            "revalidated",
            "adr:34 decision=Single service operator for many different resource kinds",
        ),
    ]
    assert [e.metadata.get("supersedes") for e in events] == [None, None, "adr:30", "adr:30"]


def test_every_successor_that_exists_gets_the_link_of_a_held_record_superseded(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "doc/adr/0002-deploy-with-helm.md": gsp_record("2. Deploy with Helm", "Accepted"),
            "doc/adr/0003-deploy-with-argo-cd.md": gsp_record("3. Deploy with Argo CD", "Accepted"),
            "doc/adr/0004-deploy-edge-with-flux.md": gsp_record(
                "4. Deploy edge with Flux", "Accepted"
            ),
        },
    )
    repo.commit(
        "2024-03-01",
        {
            "doc/adr/0002-deploy-with-helm.md": gsp_record(
                "2. Deploy with Helm",
                "Superseded by [3. Deploy with Argo CD](0003-deploy-with-argo-cd.md)\n\n"
                "Superseded by [4. Deploy edge with Flux](0004-deploy-edge-with-flux.md)",
            )
        },
    )
    events = pull(adr_source(repo)).events
    assert brief(events)[3:] == [
        (
            "2024-03-01",
            "revised",
            "adr:2 decision=Deploy with Helm -> adr:3 decision=Deploy with Argo CD",
        ),
        ("2024-03-01", "revalidated", "adr:4 decision=Deploy edge with Flux"),
    ]
    assert events[-2].metadata["superseded_by"] == "adr:3 adr:4"
    assert events[-1].metadata["supersedes"] == "adr:2"


# ------------------------------------------------------------------- a log at the root


def test_a_log_kept_at_the_repository_root_is_found_and_read(repo):
    """arachne-framework/architecture's shape: `adr-NNN-*.md` at the repository's root,
    one Accepted and the others Proposed, beside a README. It was not found ("no ADR records
    found in dir ''"), `dir = "."` found nothing, and the empty pathspec failed git log."""
    repo.commit(
        "2016-05-17",
        {
            "README.md": "# Architecture\n",
            "adr-001-use-adrs.md": record("Architecture Decision Record: Use ADRs", "Accepted"),
            "adr-002-configuration.md": record("Configuration", "Proposed"),
            "adr-003-config-schema.md": record("Config schema", "Proposed"),
        },
    )
    repo.commit("2016-06-01", {"adr-002-configuration.md": record("Configuration", "Accepted")})

    def added(result):
        return [
            (e.timestamp.date().isoformat(), e.fact.subject)
            for e in result.events
            if e.type == "added"
        ]

    expected = [("2016-05-17", "adr:1"), ("2016-06-01", "adr:2")]
    assert added(pull(adr_source(repo))) == expected
    # named as the root, the log takes the files at the root alone
    repo.commit("2016-07-01", {"src/adr-004-elsewhere.md": record("Somewhere else", "Accepted")})
    assert added(pull(adr_source(repo, dir="."))) == expected


def test_a_log_whose_files_have_no_record_number_is_no_log_read(repo):
    """Records named by their slug alone (`choose-database.md`, as some logs keep them) have
    no record number, so none is a record. The pull said nothing but a skipped line per file
    and succeeded with no event; finding no record is an error, with those lines. (Records
    named by their day, as thomvaill/log4brains names them, are numbered by it.)"""
    repo.commit(
        "2020-09-24",
        {
            "docs/adr/use-markdown.md": record("Use Markdown", "Accepted"),
            "docs/adr/use-a-static-site.md": record("Use a static site", "Accepted"),
        },
    )
    result = adr_source(repo).pull(None)
    assert result.events == []
    assert result.error == (f"no ADR records found in 'docs/adr' of {repo.path} at HEAD")
    assert sorted(result.skipped) == [
        "docs/adr/use-a-static-site.md: no record number in its file name or title",
        "docs/adr/use-markdown.md: no record number in its file name or title",
    ]


def test_a_log_moved_away_and_back_keeps_its_decisions_through_both_moves(repo):
    """ethersync/ethersync's shape: `docs/decisions` moved to `daemon/docs/decisions` and,
    six weeks later, back, a record renamed meanwhile. Its decisions were ended at the
    first move and added again at the second; they hold from their acceptance on."""
    repo.commit(
        "2023-11-23",
        {
            "docs/decisions/0001-use-crdts.md": record("1. Use CRDTs", "Accepted"),
            "docs/decisions/0002-use-json-rpc.md": record("2. Use JSON-RPC", "Accepted"),
            "daemon/main.rs": "fn main() {}\n",
        },
    )
    repo.git("mv", "docs", "daemon/")
    repo.commit("2023-12-07", message="move the docs into the daemon")
    repo.git(
        "mv", "daemon/docs/decisions/0001-use-crdts.md", "daemon/docs/decisions/01-use-crdts.md"
    )
    repo.commit("2023-12-20", message="shorter numbers")
    repo.git("mv", "daemon/docs", "docs")
    repo.commit("2024-01-19", message="docs back at the top")
    result = pull(adr_source(repo))
    said = [(e.timestamp.date().isoformat(), e.type, e.fact.subject) for e in result.events]
    assert [s for s in said if s[1] != "revalidated"] == [
        ("2023-11-23", "added", "adr:1"),
        ("2023-11-23", "added", "adr:2"),
    ]


def test_a_second_log_at_the_root_has_a_space_named_root(repo):
    """Records at the root beside a `docs/adr` log: the root's are `root:<n>`, not `.:<n>`."""
    repo.commit(
        "2020-01-01",
        {
            "docs/adr/0001-use-adrs.md": record("1. Use ADRs", "Accepted"),
            "0003-cache.md": record("3. Cache", "Accepted"),
            "0004-queue.md": record("4. Queue", "Accepted"),
        },
    )
    subjects = sorted(e.fact.subject for e in pull(adr_source(repo)).events if e.type == "added")
    assert subjects == ["adr:1", "root:3", "root:4"]
