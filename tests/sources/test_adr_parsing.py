"""Reading one decision record, and fuzzing the ADR parser: any text, never an exception."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from healthd.sources._adrdoc import classify, file_number, parse_adr, ref_number

ADR_TOOLS_SUPERSEDED = """# 2. Use Kafka for messaging

Date: 2024-02-01

## Status

Superseded by [3. Use RabbitMQ for messaging](0003-use-rabbitmq-for-messaging.md)

Amended by [5. Deprecate topics](0005-deprecate-topics.md)

## Context
"""


def test_an_adr_tools_record_gives_number_title_status_and_links():
    rec = parse_adr("doc/adr/0002-use-kafka-for-messaging.md", ADR_TOOLS_SUPERSEDED)
    assert (rec.number, rec.title, rec.status) == (2, "Use Kafka for messaging", "superseded")
    assert ref_number(rec.superseded_by[0]) == 3
    assert rec.problem is None


@pytest.mark.parametrize(
    "text, status",
    [
        ("Accepted", "accepted"),
        ("**Accepted** ✅", "accepted"),
        ("~~Proposed~~ Accepted", "accepted"),
        ("Accepted\n\nSupersedes [1. Use A](0001-a.md)", "accepted"),
        ("Accepted\n\nAmended by [6. Deprecate B](0006-b.md)", "accepted"),
        ("superceded by ADR-0004", "superseded"),
        ("Superseeded by #4", "superseded"),
        ("Deprecated", "deprecated"),
        ("Rejected", "rejected"),
        ("Draft", "proposed"),
        # ministryofjustice/cloud-platform's 034-EKS-Fargate.md and its other statuses
        ("🤔 Incomplete", "proposed"),
        # incomplete is no status word inside; implemented is a decision in force
        ("Implemented (rollout incomplete)", "accepted"),
        ("Accepted (incomplete rollout)", "accepted"),
        ("🤔 Proposed", "proposed"),
        ("✅ Accepted (documenting an existing thing)", "accepted"),
        ("❌ Rejected (see [019](019-Shared-Ingress-Controllers.md))", "rejected"),
        ("⌛️ Superseded by [036. Multi-cluster](036-multi-cluster.md)", "superseded"),
        ("Frobnicated", None),
        # nats-io/nats-architecture-and-design's statuses, past approval
        ("Implemented", "accepted"),
        ("Partially Implemented", "accepted"),
        # implemented said of the future, or denied, is no decision in force
        ("Proposed (to be implemented in Q3)", "proposed"),
        ("Proposed, not yet implemented", "proposed"),
        ("Not implemented", None),
        ("Won't be implemented", None),
        # ... also never, or with its words apart by more than one space, or hyphenated
        ("Never implemented", None),
        # ... but under way it is in force ("Status: being implemented (design reviewed)")
        ("Being implemented", "accepted"),
        ("being implemented (design reviewed 2026-09-04)", "accepted"),
        ("Not being implemented", None),
        ("Isn't implemented", None),
        ("Proposed, not  yet  implemented", "proposed"),
        ("Not-implemented", None),
        ("Proposed (to-be-implemented)", "proposed"),
        ("Accepted, not-yet-implemented", "accepted"),
        # set aside, not in force: adr/madr's own docs/decisions/0003 says "on hold"
        ("on hold", "proposed"),
        ("Suspended", "proposed"),
        ("Deferred", "proposed"),
    ],
)
def test_status_wording_variants(text, status):
    assert classify(text) == status


@pytest.mark.parametrize(
    "status",
    [
        "Accepted / Implemented",  # as many logs record a decision in force, then done
        "accepted / implemented (2026-09-24)",
        "Approved / Implemented",
        "Accepted, implemented",
    ],
)
def test_the_progress_of_one_decision_in_force_is_accepted_not_a_choice(status):
    rec = parse_adr("doc/adr/0004-x.md", f"# 4. X\n\n## Status\n\n{status}\n")
    assert (rec.status, rec.problem) == ("accepted", None)


@pytest.mark.parametrize(
    "ref, number",
    [
        ("0003-use-nats.md", 3),
        ("3. Use NATS", 3),
        ("ADR-0012", 12),
        ("adr 7", 7),
        ("#15", 15),
        ("../adr/0004-x.md#section", 4),
        ("nothing here", None),
    ],
)
def test_references_resolve_to_numbers(ref, number):
    assert ref_number(ref) == number


@pytest.mark.parametrize(
    "name, number",
    [
        # log4brains names a record by the day it was written: the date is its number
        ("docs/adr/20200924-use-markdown-architectural-decision-records.md", 20200924),
        ("docs/adr/2020-09-24-use-markdown.md", 20200924),  # not the year 2020
        ("docs/adr/20201350-not-a-day.md", None),
        ("docs/adr/0003-use-nats.md", 3),
    ],
)
def test_a_file_named_by_its_day_is_numbered_by_it(name, number):
    assert file_number(name) == number


def test_file_numbers():
    assert file_number("doc/adr/0010-x.md") == 10
    assert file_number("ADR-003-use-y.md") == 3
    assert file_number("README.md") is None


def test_status_front_matter_beats_body_and_title_number_is_stripped():
    rec = parse_adr("x.md", "---\nstatus: rejected\n---\n# ADR-12: Use Z\n\nStatus: accepted\n")
    assert (rec.number, rec.title, rec.status) == (12, "Use Z", "rejected")


FRAGMENTS = st.sampled_from(
    [
        "# ",
        "## Status",
        "Status:",
        "* Status: ",
        "- Status: ",
        "---\n",
        "status: ",
        "Accepted",
        "Proposed",
        "Superseded by ",
        "Supersedes ",
        "Superceded",
        "Deprecated",
        "[3. Title](0003-x.md)",
        "[](",
        "](",
        "~~",
        "<!--",
        "-->",
        "ADR-",
        "#",
        "\n",
        "\r\n",
        "0007",
        ". ",
        "**",
        "`",
        "title: ",
        "...",
        "(",
        ")",
        "\x00",
        "é",
        "🚀",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_is_read_without_raising(text):
    rec = parse_adr("doc/adr/0001-x.md", text)
    assert rec.status is None or rec.problem is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(FRAGMENTS | st.text(max_size=8), max_size=40).map("".join),
    st.sampled_from(["doc/adr/0002-a.md", "notes.md", "ADR-9.md", ""]),
)
def test_record_like_text_is_read_without_raising(text, path):
    rec = parse_adr(path, text)
    if rec.title is not None:
        assert rec.title.strip()
    for ref in rec.superseded_by + rec.supersedes:
        ref_number(ref)


@pytest.mark.parametrize(
    "status",
    [
        "Accepted or Rejected. If superseded, write 'Superseded by ADRzzz'",
        "[Proposed | Accepted | Deprecated | Superseded]",
        "{proposed | rejected | accepted | deprecated | superseded by [ADR-0005](0005-x.md)}",
        "What is the status, such as proposed, accepted, rejected, deprecated, superseded?",
        "Superseded by ADR-XXXX",
        # nats-io/nats-architecture-and-design's adr-template.md, its statuses in inline code
        "`Proposed`, `Approved`, `Partially Implemented`, `Implemented`, `Deprecated`",
        "Approved or Rejected",
    ],
)
def test_template_guidance_in_a_status_is_ambiguous_not_a_status(status):
    rec = parse_adr("doc/adr/0004-x.md", f"# 4. X\n\n## Status\n\n{status}\n")
    assert rec.status is None
    assert rec.problem is not None and rec.problem.startswith("ambiguous status")


@pytest.mark.parametrize(
    "heading, number, title",
    [
        ("# ADR037: Use snake_case names", 37, "Use snake_case names"),
        ("# ADD037: Keep user_id in tokens", 37, "Keep user_id in tokens"),
        ("# 12. Use **bold** and `code`", 12, "Use bold and code"),
        # inside inline code every character is the title's (get10101/itchysats' 013)
        (
            "# ADR 013 - Allow all actors to hydrate a CFD, not just the `{taker,maker}_cfd::Actor`",
            13,
            "Allow all actors to hydrate a CFD, not just the {taker,maker}_cfd::Actor",
        ),
        ("# 14. Keep `__init__.py` files empty", 14, "Keep __init__.py files empty"),
        ("# 15. Quote ``a `tick` inside`` code", 15, "Quote a `tick` inside code"),
        # a space each side of the code pads it (CommonMark), to put a backtick at its edge
        ("# 18. Name files `` `name`.md `` in ticks", 18, "Name files `name`.md in ticks"),
        # a closing run of # only after a space (CommonMark): C# keeps its #
        ("# 16. Write the build scripts in C#", 16, "Write the build scripts in C#"),
        ("# 17. Use F# ##", 17, "Use F#"),
    ],
)
def test_titles_keep_underscores_inside_words_and_lose_number_prefixes(heading, number, title):
    rec = parse_adr("doc/adr/record.md", f"{heading}\n\n## Status\n\nAccepted\n")
    assert (rec.number, rec.title, rec.status) == (number, title, "accepted")


# The shapes below are those of real logs (adr/madr's own records, the
# nats-io/nats-architecture-and-design and alphagov/content-publisher logs), written anew.

MADR_PROPOSING_FRONT_MATTER = """---
parent: Decisions
nav_order: 13
---
# Use YAML front matter for meta data

## Context and Problem Statement

Where should a record keep its status? Proposed format:

```markdown
---
status: accepted
date: 2022-05-16
---
# Title

## Status

Superseded by [5. X](0005-x.md)
```

## Decision Outcome

Chosen option: front matter.
"""


def test_a_status_shown_in_a_fenced_example_is_not_the_records_own():
    """MADR's own log proposes its front matter in a fenced example: `status: accepted`
    there is the format shown, not this record's status (it has none: no decision)."""
    rec = parse_adr("docs/decisions/0013-use-yaml-front-matter.md", MADR_PROPOSING_FRONT_MATTER)
    assert (rec.number, rec.title) == (13, "Use YAML front matter for meta data")
    assert (rec.status, rec.successor_refs, rec.problem) == (None, [], "no status found")
    tilde = MADR_PROPOSING_FRONT_MATTER.replace("```", "~~~~")
    assert parse_adr("docs/decisions/0013-x.md", tilde).status is None
    # a fence closed, the record's own status after it counts
    closed = MADR_PROPOSING_FRONT_MATTER + "\n## Status\n\nAccepted\n"
    assert parse_adr("docs/decisions/0013-x.md", closed).status == "accepted"


def test_a_heading_that_begins_with_the_word_status_is_no_status_section():
    """`### Status Messages / Server Errors` is a section about status messages; the
    record's own status is its `* Status:` line (a later "Status codes" section saying
    "deprecated" made a record accepted by its line deprecated)."""
    text = (
        "# 47. Request many\n\n* Status: Accepted\n* Date: 2024-02-01\n\n## Context\n\n"
        "### Status Messages / Server Errors\n\nA 408 is sent.\n\n"
        "## Status codes\n\nThe old 503 code is deprecated.\n"
    )
    rec = parse_adr("adr/ADR-47.md", text)
    assert (rec.status, rec.problem) == ("accepted", None)
    for heading in ("## Status", "## Status: Accepted", "## **Status** - Accepted"):
        rec = parse_adr("doc/adr/0002-x.md", f"# 2. X\n\n{heading}\n\nAccepted\n")
        assert rec.status == "accepted", heading


def test_a_successor_linked_above_the_status_section_is_its_successor():
    """alphagov/content-publisher's 0006 says `Superseded` in its status section and links
    its successor in the line under its title."""
    text = (
        "# 6. Tagging governments\n\n"
        "Date: 2019-03-01\n"
        "Superseded: 2019-12-19 by [ADR 14](0014-political-and-government-tagging.md)\n\n"
        "## Status\n\nSuperseded\n\n## Context\n\nSuperseded approaches are listed in "
        "[the wiki](https://wiki.example.com/tagging).\n"
    )
    rec = parse_adr("docs/adr/0006-tagging-governments.md", text)
    assert rec.status == "superseded"
    assert rec.successor_refs == [("0014-political-and-government-tagging.md", "ADR 14")]
    # the links of the record's sections are not its successors
    assert (
        parse_adr(
            "docs/adr/0006-x.md", text.replace("Superseded: 2019-12-19 by", "Was")
        ).successor_refs
        == []
    )


def test_a_line_opening_with_inline_code_opens_no_fence():
    text = (
        "# 4. Build\n\n## Context\n\n```make build``` is how we build.\n\n## Status\n\nAccepted\n"
    )
    assert parse_adr("doc/adr/0004-build.md", text).status == "accepted"


@pytest.mark.parametrize(
    "heading", ["## Status (2020-01-01)", "## Status.", "## Status and date", "## Status:"]
)
def test_status_headings_with_more_than_the_word_still_head_the_status(heading):
    rec = parse_adr("doc/adr/0002-x.md", f"# 2. X\n\n{heading}\n\nAccepted 2020-01-01\n")
    assert (rec.status, rec.problem) == ("accepted", None)


@pytest.mark.parametrize(
    "line",
    [
        "Context: This decision replaced [ADR 2](0002-b.md) for new services.",
        "[ADR 2](0002-b.md) was replaced by this one.",
    ],
)
def test_a_link_in_the_body_is_no_successor(line):
    """Only "superseded ... by [link]" between the title and the first section names a
    successor, and only for a status read from a section: a record's own words about what
    it replaced are not (ADR 3 was read as superseded by its own predecessor)."""
    in_section = f"# 3. Decision 3\n\n{line}\n\n## Status\n\nSuperseded\n"
    on_a_line = f"# 3. Decision 3\nStatus: Superseded\n{line}\n"
    for text in (in_section, on_a_line):
        rec = parse_adr("doc/adr/0003-decision-3.md", text)
        assert rec.status == "superseded" and rec.successor_refs == [], text


@pytest.mark.parametrize(
    "line",
    [
        "Superseded by: [ADR 14](0014-x.md)",
        "**Superseded by** [ADR 14](0014-x.md)",
        "Superseded by ADR [14](0014-x.md)",
        "Superseded, see [ADR 14](0014-x.md)",
    ],
)
def test_a_successor_under_the_title_is_read_in_the_ways_people_write_it(line):
    rec = parse_adr("doc/adr/0003-use-x.md", f"# 3. Use X\n\n{line}\n\n## Status\n\nSuperseded\n")
    assert rec.status == "superseded" and ref_number(rec.successor_refs[0][0]) == 14, line
    # so with a status line, as MADR's bullets write both
    bullets = f"# 3. Use X\n\n* Status: superseded\n* {line}\n"
    assert ref_number(parse_adr("doc/adr/0003-use-x.md", bullets).successor_refs[0][0]) == 14


def test_without_a_level_one_title_the_first_section_is_no_header():
    """A setext or front-matter title: the first `##` section is the record's body, and a
    successor it mentions about another record is not this one's."""
    text = (
        "Use Kafka\n=========\n\n## Context\n\n"
        "Superseded by [ADR 4](0004-queue.md) was what ADR 2 said.\n\n## Status\n\nSuperseded\n"
    )
    assert parse_adr("doc/adr/0003-use-kafka.md", text).successor_refs == []


def test_a_heading_of_status_and_other_words_holding_no_status_gives_none():
    """`## Status codes` of an HTTP API record says no status of the record's own: "the
    endpoint is deprecated" made a record with no status deprecated."""
    text = "# 7. Error responses\n\n## Status codes\n\n- 410 Gone: the endpoint is deprecated\n"
    rec = parse_adr("doc/adr/0007-error-responses.md", text)
    assert (rec.status, rec.problem) == (None, "no status found")
