"""The `jira` source against a real local HTTP server shaped like Jira's REST search API."""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from _ticket_payloads import (
    SECRET,
    FakeJira,
    Sleeps,
    _module_server,  # noqa: F401
    api_server,  # noqa: F401
    jira_history,
    jira_issue,
    jira_item,
    jira_resolved,
    jira_user,
    run_all,
    ticket_source,
)

from healthd.errors import ConfigError
from healthd.model import Fact
from healthd.sources import build_source
from healthd.sources.jira import JiraOptions, JiraSource


def T(day: int, hour: int = 10) -> str:
    return f"2024-01-{day:02d}T{hour:02d}:00:00.000+0000"


def Z(day: int, hour: int = 10) -> str:
    return f"2024-01-{day:02d}T{hour:02d}:00:00Z"


def populate(jira: FakeJira) -> None:
    jira.add(
        jira_issue(
            "PAY-1",
            "Refund API v2",
            status="Done",
            resolution="Done",
            assignee="bob",
            components=("Billing",),
            created=T(1),
            updated=T(4),
            histories=[
                jira_history(
                    10010, T(2), jira_item("summary", None, "Refund API", None, "Refund API v2")
                ),
                jira_history(10011, T(3), jira_item("assignee", "alice", "Alice", "bob", "Bob")),
                jira_resolved(10012, T(4), "Done", "Done"),
            ],
        )
    )
    jira.add(
        jira_issue(
            "PAY-2",
            "Adopt Kafka",
            issuetype="Task",
            labels=("decision",),
            status="Closed",
            resolution="Won't Do",
            created=T(2),
            updated=T(5),
            histories=[
                jira_resolved(
                    10020, T(5), "Closed", "Won't Do", status_id="6", resolution_id="10001"
                ),
            ],
        )
    )
    jira.add(
        jira_issue(
            "PAY-3",
            "Crash on login",
            issuetype="Bug",
            components=("Auth",),
            created=T(1, 9),
            updated=T(6),
            histories=[
                jira_history(10030, T(3), jira_item("Component", None, None, "10001", "Auth")),
                jira_history(10031, T(6), jira_item("assignee", "carol", "Carol", None, None)),
            ],
        )
    )
    # PAY-3 was created assigned to carol; the changelog above unassigns her.


def req(value: str) -> Fact:
    return Fact("PAY-1", "requirement", value, "requirement")


KAFKA = Fact("PAY-2", "decision", "Adopt Kafka", "decision")

EXPECTED = [
    ("jira:PAY-1:created", "added", Z(1), req("Refund API"), None, None),
    (
        "jira:PAY-1:created:owners:Billing",
        "added",
        Z(1),
        Fact("Billing", "owners", "alice", "ownership"),
        None,
        None,
    ),
    ("jira:PAY-1:10010:0", "revised", Z(2), req("Refund API v2"), req("Refund API"), None),
    ("jira:PAY-2:created", "added", Z(2), KAFKA, None, None),
    (
        "jira:PAY-1:10011:0:owners:Billing",
        "revised",
        Z(3),
        Fact("Billing", "owners", "bob", "ownership"),
        Fact("Billing", "owners", "alice", "ownership"),
        None,
    ),
    (
        "jira:PAY-3:10030:0:owners:Auth",
        "added",
        Z(3),
        Fact("Auth", "owners", "carol", "ownership"),
        None,
        None,
    ),
    ("jira:PAY-1:10012:0", "revised", Z(4), req("done"), req("Refund API v2"), None),
    # resolving PAY-1 does not end bob's ownership of Billing: no event
    ("jira:PAY-2:10020:0", "invalidated", Z(5), KAFKA, None, "status Closed; resolved as Won't Do"),
    # but unassigning carol from the open PAY-3 that gave her Auth ends it
    (
        "jira:PAY-3:10031:0:owners:Auth",
        "invalidated",
        Z(6),
        Fact("Auth", "owners", "carol", "ownership"),
        None,
        "carol unassigned from PAY-3",
    ),
]


def shape(events):
    return [
        (e.id, e.type, e.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"), e.fact, e.previous, e.reason)
        for e in events
    ]


def by_time(rows):
    return sorted(rows, key=lambda r: (r[2], r[0]))


@pytest.fixture
def jira(api_server):  # noqa: F811
    fake = FakeJira(api_server)
    populate(fake)
    return fake


def make(jira: FakeJira, sleeps: Sleeps | None = None, **options) -> JiraSource:
    settings = dict(
        base_url=jira.base_url,
        jql="project = PAY",
        user_env="JIRA_TEST_USER",
        token_env="JIRA_TEST_TOKEN",
        page_size=2,
    )
    environ = {"JIRA_TEST_USER": "healthd-bot", "JIRA_TEST_TOKEN": SECRET}
    return ticket_source(JiraSource, JiraOptions, "jira", {**settings, **options}, environ, sleeps)


def test_maps_changelog_to_the_exact_change_events_with_history_times(jira):
    result = make(jira).pull(None)
    assert result.ok, result.error
    assert result.skipped == []
    assert by_time(shape(result.events)) == by_time(EXPECTED)
    assert [e.timestamp for e in result.events] == sorted(e.timestamp for e in result.events)
    assert shape(result.events) == EXPECTED  # ties: by issue key, then changelog order
    for event in result.events:
        assert dict(event.metadata) == {"url": f"{jira.base_url}/browse/{event.id.split(':')[1]}"}
    assert {e.source for e in result.events} == {"jira"}


def test_search_uses_expanded_changelog_basic_auth_and_pagination(jira):
    make(jira).pull(None)
    searches = [r for r in jira.log if r.path == "/rest/api/2/search"]
    assert [r.args["startAt"] for r in searches] == ["0", "2"]
    assert searches[0].args["jql"] == "(project = PAY) ORDER BY updated DESC"
    assert searches[0].args["expand"] == "changelog"
    expected = base64.b64encode(f"healthd-bot:{SECRET}".encode()).decode()
    assert searches[0].headers["Authorization"] == f"Basic {expected}"
    assert searches[0].headers["User-Agent"].startswith("healthd/")


def test_v3_search_jql_paginates_with_next_page_token(jira):
    result = make(jira, api_version="3", page_size=1).pull(None)
    assert result.ok and by_time(shape(result.events)) == by_time(EXPECTED)
    searches = [r for r in jira.log if r.path == "/rest/api/3/search/jql"]
    assert [r.args.get("nextPageToken") for r in searches] == [None, "1", "2"]


def test_long_changelog_is_read_from_the_changelog_endpoint(jira):
    jira.embed_limit = 1
    result = make(jira).pull(None)
    assert result.ok and by_time(shape(result.events)) == by_time(EXPECTED)
    assert "/rest/api/2/issue/PAY-1/changelog" in jira.paths()


def test_repeat_runs_neither_lose_nor_double_events(jira):
    source = make(jira)
    first = source.pull(None)
    second = source.pull(first.cursor)
    assert second.ok and second.events == []
    assert (
        'updated >= "2024/01/05 10:00"'
        in [r for r in jira.log if r.path.endswith("/search")][-1].args["jql"]
    )
    issue = jira.issues["PAY-1"]
    issue["fields"].update(resolution=None, updated=T(7))
    issue["fields"]["status"]["name"] = "Reopened"
    issue["changelog"]["histories"].append(
        jira_history(
            10040,
            T(7),
            jira_item("resolution", "10000", "Done", None, None),
            jira_item("status", "10001", "Done", "4", "Reopened"),
        )
    )
    issue["changelog"]["total"] += 1
    third = source.pull(second.cursor)
    assert shape(third.events) == [
        ("jira:PAY-1:10040:0", "revised", Z(7), req("Refund API v2"), req("done"), None),
        # reopened, it claims Billing for bob again: bob held it all along, no event
    ]
    assert source.pull(third.cursor).events == []


def _no_loss_no_dup(events):
    ids = [e.id for e in events]
    assert len(ids) == len(set(ids))
    assert by_time(shape(events)) == by_time(EXPECTED)


def test_a_cursor_with_a_field_of_the_wrong_shape_is_one_line_naming_it(jira):
    cursor = json.dumps({"kind": "jira", "since": "2024-01-01", "seen": {}})
    result = make(jira).pull(cursor)
    assert result.events == [] and result.error == (
        "jira source 'jira': unreadable cursor (field 'since' has no timezone: '2024-01-01'); "
        "reset the source's state to read from scratch"
    )


def test_500_then_success(jira):
    sleeps = Sleeps()
    jira.fail(r"/search$", status=500, times=1)
    result = make(jira, sleeps).pull(None)
    assert result.ok and by_time(shape(result.events)) == by_time(EXPECTED)
    assert sleeps.calls == [0.375]


def test_failure_on_a_later_page_keeps_what_was_read_and_resumes(jira):
    source = make(jira)
    calls = {"n": 0}
    original = jira.route

    def route(request):
        if request.path.endswith("/search") and request.args.get("startAt") == "2":
            calls["n"] += 1
            if calls["n"] <= 3:
                from werkzeug import Response

                return Response(
                    '{"errorMessages": ["oops"]}', status=503, content_type="application/json"
                )
        return original(request)

    jira.route = route
    failed = source.pull(None)
    assert not failed.ok and "HTTP 503" in failed.error and "startAt=2" in failed.error
    assert {e.fact.subject for e in failed.events if e.fact.predicate != "owners"} == {"PAY-2"}
    assert json.loads(failed.cursor)["since"] is None
    events, _, results = run_all(source.pull, failed.cursor)
    assert results[-1].ok
    _no_loss_no_dup(failed.events + events)


def test_rate_limited_beyond_the_bound_defers_and_resumes(jira):
    sleeps = Sleeps()
    source = make(jira, sleeps)
    jira.fail(r"/search$", status=429, headers={"Retry-After": "120"})
    deferred = source.pull(None)
    assert not deferred.ok and "deferred to the next run" in deferred.error
    assert sleeps.calls == [] and deferred.events == []
    events, _, results = run_all(source.pull, deferred.cursor)
    assert results[-1].ok
    _no_loss_no_dup(events)


def test_short_retry_after_is_waited(jira):
    sleeps = Sleeps()
    jira.fail(r"/search$", status=429, headers={"Retry-After": "2"})
    assert make(jira, sleeps).pull(None).ok
    assert sleeps.calls == [2.0]


def test_truncated_json_is_a_clear_error(jira):
    jira.fail(r"/search$", status=200, body='{"startAt": 0, "issues": [{"key": "PA')
    result = make(jira).pull(None)
    assert (
        not result.ok and "not valid JSON" in result.error and "/rest/api/2/search" in result.error
    )
    assert result.cursor is not None and json.loads(result.cursor)["since"] is None


def test_missing_fields_are_skipped_and_named(jira):
    del jira.issues["PAY-2"]["fields"]["summary"]
    del jira.issues["PAY-3"]["changelog"]["histories"][1]["created"]
    result = make(jira).pull(None)
    assert result.ok
    assert result.skipped == [
        "PAY-2: field 'fields.summary' is missing",
        "PAY-3 history #1: field 'changelog.histories[].created' is missing or not a "
        "timestamp string",
    ] or sorted(result.skipped) == sorted(
        [
            "PAY-2: field 'fields.summary' is missing",
            "PAY-3 history #1: field 'changelog.histories[].created' is missing or not a "
            "timestamp string",
        ]
    )
    ids = {e.id for e in result.events}
    assert not any(i.startswith("jira:PAY-2") for i in ids)
    assert "jira:PAY-1:10012:0" in ids


def test_token_never_leaks(jira, caplog):
    jira.fail(r"/search$", status=401, body=json.dumps({"errorMessages": [f"bad token {SECRET}"]}))
    failed = make(jira).pull(None)
    assert not failed.ok and "HTTP 401" in failed.error
    ok = make(jira).pull(None)
    basic = base64.b64encode(f"healthd-bot:{SECRET}".encode()).decode()
    for text in [
        failed.error,
        failed.cursor,
        ok.cursor,
        caplog.text,
        *[json.dumps(dict(e.metadata)) for e in ok.events],
    ]:
        assert SECRET not in text and basic not in text


def test_domain_mapping_is_configurable(jira):
    result = make(jira, type_domains={"Bug": "requirement"}, label_domains={}).pull(None)
    subjects = {(e.fact.subject, e.fact.predicate) for e in result.events}
    assert ("PAY-3", "requirement") in subjects and ("PAY-1", "requirement") not in subjects
    assert ("PAY-2", "decision") not in subjects


def test_options_are_validated():
    source = build_source(
        "jira", "jira", {"base_url": "https://acme.atlassian.net/", "jql": "project = PAY"}
    )
    assert source.kind == "jira" and source.options.base_url == "https://acme.atlassian.net"
    with pytest.raises(ConfigError, match=r"'jira': field 'jql': must not contain ORDER BY"):
        build_source("jira", "jira", {"base_url": "https://x", "jql": "a = b order by key"})
    with pytest.raises(ConfigError, match=r"field 'jql': Field required"):
        build_source("jira", "jira", {"base_url": "https://x"})
    with pytest.raises(ConfigError, match=r"field 'type_domains.Bug': Input should be"):
        build_source(
            "jira",
            "jira",
            {"base_url": "https://x", "jql": "a = b", "type_domains": {"Bug": "tech"}},
        )


# --------------------------------------------------------------------------- issue 10


def test_two_open_issues_sharing_a_component_own_it_together(jira):
    jira.add(
        jira_issue(
            "PAY-7",
            "Invoices",
            assignee="bob",
            components=("Ledger",),
            created=T(1),
            updated=T(1),
        )
    )
    jira.add(
        jira_issue(
            "PAY-8",
            "Payouts",
            components=("Ledger",),
            created=T(2),
            updated=T(3),
            histories=[
                jira_history(10080, T(3), jira_item("assignee", "frank", "Frank", None, None))
            ],
        )
    )
    ledger = [e for e in make(jira).pull(None).events if e.fact.subject == "Ledger"]
    assert shape(ledger) == [
        (
            "jira:PAY-7:created:owners:Ledger",
            "added",
            Z(1),
            Fact("Ledger", "owners", "bob", "ownership"),
            None,
            None,
        ),
        (
            "jira:PAY-8:created:owners:Ledger",
            "revised",
            Z(2),
            Fact("Ledger", "owners", "bob frank", "ownership"),
            Fact("Ledger", "owners", "bob", "ownership"),
            None,
        ),
        # frank unassigned from PAY-8 no longer owns the ledger through it
        (
            "jira:PAY-8:10080:0:owners:Ledger",
            "revised",
            Z(3),
            Fact("Ledger", "owners", "bob", "ownership"),
            Fact("Ledger", "owners", "bob frank", "ownership"),
            None,
        ),
    ]


def test_data_center_user_keys_make_one_owner_not_two(jira):
    """Data Center: fields carry the user's name and key, changelog items only the key."""
    jira.issues.clear()
    dana = {"name": "dana", "key": "JIRAUSER10100", "displayName": "Dana"}
    created_assigned = jira_issue(
        "PAY-9", "Ledger export", components=("Ledger",), created=T(1), updated=T(1)
    )
    created_assigned["fields"]["assignee"] = dana
    assigned_later = jira_issue(
        "PAY-10",
        "Ledger import",
        components=("Ledger",),
        created=T(2),
        updated=T(3),
        histories=[
            jira_history(10100, T(3), jira_item("assignee", None, None, "JIRAUSER10100", "Dana"))
        ],
    )
    assigned_later["fields"]["assignee"] = dana
    jira.add(created_assigned)
    jira.add(assigned_later)
    owners = [e for e in make(jira).pull(None).events if e.fact.predicate == "owners"]
    assert shape(owners) == [
        (
            "jira:PAY-9:created:owners:Ledger",
            "added",
            Z(1),
            Fact("Ledger", "owners", "JIRAUSER10100", "ownership"),
            None,
            None,
        )
    ]


def test_cloud_v3_search_with_next_page_token_and_a_410_on_v2_names_the_fix(jira):
    jira.removed_v2_search = True
    failed = make(jira, api_version="2").pull(None)
    assert not failed.ok and "HTTP 410" in failed.error and 'api_version = "3"' in failed.error
    result = make(jira, api_version="3", page_size=2).pull(None)
    assert result.ok and by_time(shape(result.events)) == by_time(EXPECTED)
    searches = [r for r in jira.log if r.path == "/rest/api/3/search/jql"]
    assert [r.args.get("nextPageToken") for r in searches] == [None, "2"]


@pytest.mark.parametrize(
    "base_url, api",
    [
        ("https://acme.atlassian.net", "3"),
        ("https://jira.acme.internal", None),  # the site is asked
        ("https://jira.acme.internal/jira", None),
    ],
)
def test_the_search_api_is_v3_on_a_cloud_host_and_asked_elsewhere(base_url, api):
    assert JiraOptions(base_url=base_url, jql="project = PAY").search_api == api


def test_an_iso_8601_rate_limit_reset_is_honoured(jira):
    sleeps = Sleeps()  # the source's clock reads 2027-01-15T08:00:00Z
    jira.fail(r"/search$", status=429, headers={"X-RateLimit-Reset": "2027-01-15T08:00:07Z"})
    assert make(jira, sleeps).pull(None).ok
    assert sleeps.calls == [7.0]


def test_retry_after_on_503_is_honoured(jira):
    sleeps = Sleeps()
    jira.fail(r"/search$", status=503, headers={"Retry-After": "4"})
    assert make(jira, sleeps).pull(None).ok
    assert sleeps.calls == [4.0]


def test_resolving_a_components_last_open_issue_keeps_its_owner_until_another_claim(jira):
    """PAY-20 is alice's on Ledger; resolving it is no evidence she stopped owning Ledger.
    Bob being assigned PAY-21 later replaces her claim."""
    jira.issues.clear()
    jira.add(
        jira_issue(
            "PAY-20",
            "Ledger rounding",
            issuetype="Task",
            assignee="alice",
            components=("Ledger",),
            status="Done",
            resolution="Done",
            created=T(1),
            updated=T(4),
            histories=[jira_resolved(10200, T(4), "Done", "Done")],
        )
    )
    source = make(jira)
    first = source.pull(None)
    assert first.ok, first.error
    assert shape(first.events) == [
        (
            "jira:PAY-20:created:owners:Ledger",
            "added",
            Z(1),
            Fact("Ledger", "owners", "alice", "ownership"),
            None,
            None,
        ),
    ]
    jira.add(
        jira_issue(
            "PAY-21",
            "Ledger export",
            issuetype="Task",
            assignee="bob",
            components=("Ledger",),
            created=T(8),
            updated=T(9),
            histories=[jira_history(10210, T(9), jira_item("assignee", None, None, "bob", "Bob"))],
        )
    )
    second = source.pull(first.cursor)
    assert second.ok, second.error
    assert shape(second.events) == [
        (
            "jira:PAY-21:10210:0:owners:Ledger",
            "revised",
            Z(9),
            Fact("Ledger", "owners", "bob", "ownership"),
            Fact("Ledger", "owners", "alice", "ownership"),
            None,
        ),
    ]


def test_a_429_whose_iso_reset_is_already_past_is_retried_at_once(jira):
    sleeps = Sleeps()  # the source's clock reads 2027-01-15T08:00:00Z
    jira.fail(r"/search$", status=429, headers={"X-RateLimit-Reset": "2023-11-14T22:10:00Z"})
    result = make(jira, sleeps).pull(None)
    assert result.ok, result.error
    assert sleeps.calls == []  # not the 60 s a 429 without any hint gets
    first_pages = [r for r in jira.log if r.path.endswith("/search") and r.args["startAt"] == "0"]
    assert len(first_pages) == 2


def test_a_429_with_a_past_reset_every_time_still_gives_up_after_the_bounded_retries(jira):
    sleeps = Sleeps()
    jira.fail(
        r"/search$",
        status=429,
        headers={"X-RateLimit-Reset": "2023-11-14T22:10:00Z"},
        times=10,
    )
    result = make(jira, sleeps).pull(None)
    assert not result.ok and "rate limited" in result.error
    assert sleeps.calls == []
    assert len([r for r in jira.log if r.path.endswith("/search")]) == 3  # max_retries = 2


def test_auto_asks_server_info_and_uses_v3_on_a_cloud_site_with_its_own_domain(jira):
    """A Cloud site behind a custom domain (here 127.0.0.1): serverInfo says Cloud, so the
    v2 search (410 on Cloud) is never tried, and the next run does not ask again."""
    jira.removed_v2_search = True
    jira.deployment_type = "Cloud"
    source = make(jira)
    first = source.pull(None)
    assert first.ok, first.error
    assert by_time(shape(first.events)) == by_time(EXPECTED)
    assert "/rest/api/2/search" not in jira.paths()
    assert jira.paths().count("/rest/api/2/serverInfo") == 1
    assert json.loads(first.cursor)["api"] == "3"
    jira.log.clear()
    second = make(jira).pull(first.cursor)
    assert second.ok and second.events == []
    assert "/rest/api/2/serverInfo" not in jira.paths()
    assert "/rest/api/3/search/jql" in jira.paths()


def test_auto_switches_to_v3_on_a_410_when_server_info_is_not_reachable(jira):
    """A proxy in front of Cloud that does not pass serverInfo on: the v2 search's 410
    switches to v3 in the same run, and the cursor remembers it."""
    jira.removed_v2_search = True
    jira.deployment_type = None
    first = make(jira).pull(None)
    assert first.ok, first.error
    assert by_time(shape(first.events)) == by_time(EXPECTED)
    assert jira.paths().count("/rest/api/2/search") == 1
    assert json.loads(first.cursor)["api"] == "3"
    jira.log.clear()
    assert make(jira).pull(first.cursor).ok
    assert "/rest/api/2/search" not in jira.paths()


def test_auto_keeps_v2_on_data_center(jira):
    result = make(jira).pull(None)
    assert result.ok, result.error
    assert "/rest/api/3/search/jql" not in jira.paths()
    assert json.loads(result.cursor)["api"] == "2"


def test_unassigning_or_removing_the_component_ends_the_ownership_the_issue_gave(jira):
    """Jira's changelog: bob is unassigned from PAY-51 while PAY-50 keeps alice on
    Refunds; PAY-52 loses its Search component, and nothing else claims Search."""
    jira.add(
        jira_issue(
            "PAY-50",
            "Refund rules",
            assignee="alice",
            components=("Refunds",),
            created=T(1),
            updated=T(1),
        )
    )
    jira.add(
        jira_issue(
            "PAY-51",
            "Refund export",
            components=("Refunds",),
            created=T(2),
            updated=T(3),
            histories=[
                jira_history(10510, T(2, 11), jira_item("assignee", None, None, "bob", "Bob")),
                jira_history(10511, T(3), jira_item("assignee", "bob", "Bob", None, None)),
            ],
        )
    )
    jira.add(
        jira_issue(
            "PAY-52",
            "Search ranking",
            assignee="carol",
            created=T(4),
            updated=T(5),
            histories=[
                jira_history(10520, T(5), jira_item("Component", "10007", "Search", None, None))
            ],
        )
    )
    events = make(jira).pull(None).events
    assert shape([e for e in events if e.fact.subject in ("Refunds", "Search")]) == [
        ("jira:PAY-50:created:owners:Refunds", "added", Z(1),
         Fact("Refunds", "owners", "alice", "ownership"), None, None),
        ("jira:PAY-51:10510:0:owners:Refunds", "revised", Z(2, 11),
         Fact("Refunds", "owners", "alice bob", "ownership"),
         Fact("Refunds", "owners", "alice", "ownership"), None),
        ("jira:PAY-51:10511:0:owners:Refunds", "revised", Z(3),
         Fact("Refunds", "owners", "alice", "ownership"),
         Fact("Refunds", "owners", "alice bob", "ownership"), None),
        ("jira:PAY-52:created:owners:Search", "added", Z(4),
         Fact("Search", "owners", "carol", "ownership"), None, None),
        ("jira:PAY-52:10520:0:owners:Search", "invalidated", Z(5),
         Fact("Search", "owners", "carol", "ownership"), None,
         "component 'Search' removed from PAY-52"),
    ]  # fmt: skip


def test_a_date_past_what_utc_holds_is_one_skipped_line_and_the_rest_is_read(jira):
    late = "9999-12-31T23:59:59.000-0100"  # what Jira's format allows, the year 10000 in UTC
    jira.issues["PAY-3"]["changelog"]["histories"][1]["created"] = late
    result = make(jira).pull(None)
    assert result.ok, result.error
    assert result.skipped == [
        "PAY-3 history #1: field 'changelog.histories[].created' is out of range once "
        f"converted to UTC: {late!r}"
    ]
    assert result.events  # the other issues, and PAY-3's other changes, are read


def test_a_watermark_in_the_year_1_reads_everything_again_not_a_traceback(jira):
    state = json.loads(make(jira).pull(None).cursor)
    state["since"] = "0001-01-01T00:00:00Z"  # an issue "updated" then made it the watermark
    result = make(jira).pull(json.dumps(state))
    assert result.ok, result.error
    assert 'updated >= "' not in [r for r in jira.log if r.path.endswith("/search")][-1].args["jql"]
    assert json.loads(result.cursor)["since"].startswith("2024-01-")  # moved on again


# A fuzz of every field of these payloads with values of the wrong type found each of the
# following escaping pull() (a TypeError, an AttributeError) at every run, so that no issue
# after it was ever read, or paging for as long as the run lasted.


def test_a_list_field_of_the_wrong_type_is_one_skipped_line_and_the_rest_is_read(jira):
    jira.issues["PAY-2"]["fields"]["components"] = 5
    jira.issues["PAY-3"]["fields"]["labels"] = True
    result = make(jira).pull(None)
    assert result.ok, result.error
    assert sorted(result.skipped) == [
        "PAY-2: field 'fields.components' has the wrong type (int)",
        "PAY-3: field 'fields.labels' has the wrong type (bool)",
    ]
    assert [e.id for e in result.events if e.id.startswith("jira:PAY-1:")] == [
        row[0] for row in EXPECTED if row[0].startswith("jira:PAY-1:")
    ]


def test_a_labels_change_of_the_wrong_type_is_one_skipped_line(jira):
    history = jira.issues["PAY-1"]["changelog"]["histories"][0]
    history["items"].append(jira_item("labels", None, "", None, 7))  # type: ignore[arg-type]
    result = make(jira).pull(None)
    assert result.ok, result.error
    assert result.skipped == [
        f"PAY-1 history {history['id']} item 1: field 'toString' of a labels change has the "
        "wrong type (int)"
    ]
    assert by_time(shape(result.events)) == by_time(EXPECTED)


def test_histories_that_are_not_a_list_fail_the_pull_in_one_line_naming_them(jira):
    jira.issues["PAY-3"]["changelog"]["histories"] = {"id": "1"}
    result = make(jira).pull(None)
    assert not result.ok
    assert "issue PAY-3: field 'changelog.histories' is not a list" in result.error
    assert "\n" not in result.error


@pytest.mark.parametrize("token", [["p"], "p2"])
def test_a_page_token_that_is_no_string_or_comes_again_ends_the_paging(jira, token):
    # ["p"] is sent as "p" by requests, so asked for again and again, as a token the
    # server repeats (a proxy's cache) would be
    jira.fail(
        r"/rest/api/3/search/jql$",
        status=200,
        body=json.dumps({"issues": [], "nextPageToken": token, "isLast": False}),
        times=1000,
    )
    result = make(jira, api_version="3").pull(None)
    assert not result.ok
    assert "nextPageToken" in result.error and "\n" not in result.error
    assert len([p for p in jira.paths() if p == "/rest/api/3/search/jql"]) <= 2


def test_a_changelog_page_whose_total_is_no_number_is_read_to_its_end(jira):
    jira.embed_limit = 1
    histories = jira.issues["PAY-1"]["changelog"]["histories"]
    jira.fail(
        r"/issue/PAY-1/changelog$",
        status=200,
        body=json.dumps({"startAt": 0, "total": "3", "values": histories}),
    )
    result = make(jira).pull(None)
    assert result.ok, result.error
    assert by_time(shape(result.events)) == by_time(EXPECTED)


@pytest.mark.parametrize("hid", ["1" + "0" * 30, "-5", "0", "10 041", "１２"])
def test_a_history_id_out_of_range_is_one_skipped_line_and_hides_nothing_after_it(jira, hid):
    # a 31-digit id became the issue's watermark, and every later history of the issue was
    # taken as read already
    source = make(jira)
    first = source.pull(None)
    issue = jira.issues["PAY-1"]
    issue["fields"].update(resolution=None, updated=T(7))
    issue["fields"]["status"]["name"] = "Reopened"
    bad = jira_history(10040, T(7), jira_item("summary", None, "Refund API v2", None, "Refunds"))
    bad["id"] = hid
    later = jira_history(
        10041,
        T(8),
        jira_item("resolution", "10000", "Done", None, None),
        jira_item("status", "10001", "Done", "4", "Reopened"),
    )
    issue["changelog"]["histories"] += [bad, later]
    issue["changelog"]["total"] += 2
    second = source.pull(first.cursor)
    assert second.ok, second.error
    assert (
        [line for line in second.skipped if "history" in line]
        == [line for line in second.skipped if "field 'changelog.histories[].id'" in line]
        != []
    )
    assert "jira:PAY-1:10041:0" in {e.id for e in second.events}
    third = source.pull(second.cursor)
    issue["changelog"]["histories"].append(
        jira_history(10042, T(9), jira_item("summary", None, "Refunds", None, "Refunds v3"))
    )
    issue["changelog"]["total"] += 1
    issue["fields"].update(updated=T(9))
    fourth = source.pull(third.cursor)
    assert "jira:PAY-1:10042:0" in {e.id for e in fourth.events}


def _billing(key, login, day, extra_histories=(), labels=(), updated=None) -> dict:
    """An open Task of component Billing assigned to ``login`` on ``day``."""
    return jira_issue(
        key,
        f"Billing work {key}",
        issuetype="Task",
        assignee=login,
        components=("Billing",),
        labels=labels,
        created=T(day),
        updated=updated or T(day, 11),
        histories=[
            jira_history(
                int(key.split("-")[1]) * 100,
                T(day, 11),
                jira_item("assignee", None, None, login, login),
            ),
            *extra_histories,
        ],
    )


def test_an_issue_moved_out_of_the_query_lapses_its_claim_so_a_newer_one_replaces_it(jira):
    """PAY-7 (alice, Billing) is moved to another project: the search for updated issues of
    ``project = PAY`` never returns it again. Bob's newer Billing issue then owns it alone."""
    jira.issues.clear()
    jira.add(_billing("PAY-7", "alice", 2))
    source = make(jira)
    first = source.pull(None)
    assert first.ok, first.error
    assert [(e.type, e.fact.value) for e in first.events if e.fact.predicate == "owners"] == [
        ("added", "alice")
    ]
    del jira.issues["PAY-7"]  # now OPS-3
    jira.add(_billing("PAY-9", "bob", 10))
    second = source.pull(first.cursor)
    assert second.ok, second.error
    assert [
        (e.type, e.fact.value, e.previous.value if e.previous else None)
        for e in second.events
        if e.fact.predicate == "owners"
    ] == [("revised", "bob", "alice")]
    keys_only = [r for r in jira.log if r.args.get("fields") == "resolution"]
    assert [r.path for r in keys_only] == ["/rest/api/2/search", "/rest/api/2/issue/PAY-7"]
    assert "resolution is EMPTY" in keys_only[0].args["jql"]  # listed, then asked: 404


def test_an_issue_resolved_out_of_an_unresolved_only_query_lapses_its_claim(jira):
    jira.issues.clear()
    jira.add(_billing("PAY-8", "carol", 2))
    source = make(jira, jql="project = PAY AND resolution = Unresolved")
    first = source.pull(None)
    resolved = _billing("PAY-8", "carol", 2)
    resolved["fields"]["resolution"] = {"id": "1", "name": "Done"}
    resolved["fields"]["updated"] = T(5)
    jira.add(resolved)  # the query no longer returns it: its resolution is never read
    jira.add(_billing("PAY-9", "dave", 10))
    second = source.pull(first.cursor)
    assert second.ok, second.error
    assert [e.fact.value for e in second.events if e.fact.predicate == "owners"] == ["dave"]


def test_a_claim_still_in_the_query_is_kept_and_no_extra_search_is_made_without_one(jira):
    jira.issues.clear()
    jira.add(_billing("PAY-7", "alice", 2))
    jira.add(jira_issue("PAY-5", "No one's", created=T(5), updated=T(5, 11)))
    source = make(jira)
    first = source.pull(None)
    jira.log.clear()
    jira.add(_billing("PAY-9", "bob", 10))  # PAY-7 is older than the search reaches back
    second = source.pull(first.cursor)
    assert [e.fact.value for e in second.events if e.fact.predicate == "owners"] == ["alice bob"]
    # the unresolved issues' keys (PAY-5, 7, 9), two to a page
    assert [r.args.get("fields") for r in jira.log].count("resolution") == 2

    jira.issues.clear()
    jira.add(jira_issue("PAY-3", "No one's", created=T(2), updated=T(2, 11)))
    fresh = make(jira)
    jira.log.clear()
    done = fresh.pull(fresh.pull(None).cursor)
    assert done.ok
    assert all(r.args.get("fields") != "resolution" for r in jira.log)


def test_a_server_that_ignores_start_at_is_stopped_at_max_pages_not_read_for_ever(jira):
    # a proxy that drops the query answers every page with the first one, and a total
    # that never comes
    first = {
        "startAt": 0,
        "maxResults": 2,
        "total": 1_000_000_000,
        "issues": [jira.issues["PAY-1"]],
    }
    jira.fail("^/rest/api/2/search$", status=200, body=json.dumps(first), times=10_000)
    result = make(jira, api_version="2", max_pages=5).pull(None)
    assert not result.ok
    assert "more than max_pages=5 pages in one listing; raise max_pages" in result.error
    assert len([r for r in jira.log if r.path == "/rest/api/2/search"]) == 5


@pytest.mark.parametrize("api_version", ["2", "3"])
def test_a_search_longer_than_max_pages_is_one_error_naming_the_bound(jira, api_version):
    # three issues at one a page
    result = make(jira, api_version=api_version, page_size=1, max_pages=2).pull(None)
    assert not result.ok and "more than max_pages=2 pages" in result.error
    assert make(jira, api_version=api_version, page_size=1, max_pages=3).pull(None).ok


def test_user_field_name_names_a_changelog_assignee_as_the_fields_do(jira):
    """Data Center: an issue's assignee object has a user name and a key; the changelog's
    `to` carries the key alone. With user_field = "name" one person was two owners ('dana'
    from the fields, 'JIRAUSER10100' from the changelog); a key is now read as the name the
    issue's user objects give it, and a key no object in the issue names is said, once."""
    jira.issues.clear()
    dana = {"name": "dana", "key": "JIRAUSER10100", "displayName": "Dana"}
    first = jira_issue("PAY-9", "Ledger export", components=("Ledger",), created=T(1), updated=T(1))
    first["fields"]["assignee"] = dana
    second = jira_issue(
        "PAY-10",
        "Ledger import",
        components=("Ledger",),
        created=T(2),
        updated=T(3),
        histories=[
            jira_history(10100, T(3), jira_item("assignee", None, None, "JIRAUSER10100", "Dana"))
        ],
    )
    second["fields"]["assignee"] = dana
    third = jira_issue(
        "PAY-12",
        "Ledger audit",
        components=("Ledger",),
        created=T(5),
        updated=T(7),
        histories=[
            jira_history(12100, T(6), jira_item("assignee", None, None, "JIRAUSER40400", "Gil")),
            jira_history(12101, T(7), jira_item("assignee", "JIRAUSER40400", "Gil", None, None)),
        ],
    )
    for issue in (first, second, third):
        jira.add(issue)
    result = make(jira, user_field="name", page_size=50).pull(None)
    assert result.ok, result.error
    owners = [(e.type, e.fact.value) for e in result.events if e.fact.predicate == "owners"]
    assert owners == [("added", "dana"), ("revised", "dana JIRAUSER40400"), ("revised", "dana")]
    assert result.skipped == [
        "PAY-12: the changelog names assignee JIRAUSER40400 by id and the issue holds no user "
        "object to read its name from; named by its id"
    ]


def test_user_field_name_names_the_person_an_unassignment_retracts(jira):
    jira.issues.clear()
    dana = {"name": "dana", "key": "JIRAUSER10100", "displayName": "Dana"}
    issue = jira_issue(
        "PAY-20",
        "Ledger cleanup",
        components=("Ledger",),
        created=T(1),
        updated=T(3),
        histories=[
            jira_history(20100, T(2), jira_item("assignee", None, None, "JIRAUSER10100", "Dana")),
            jira_history(20101, T(3), jira_item("assignee", "JIRAUSER10100", "Dana", None, None)),
        ],
    )
    issue["fields"]["reporter"] = dana
    jira.add(issue)
    result = make(jira, user_field="name", page_size=50).pull(None)
    assert result.ok and result.skipped == []
    said = [(e.type, e.fact.value, e.reason) for e in result.events if e.fact.predicate == "owners"]
    assert said == [("added", "dana", None), ("invalidated", "dana", "dana unassigned from PAY-20")]


def test_user_field_email_names_a_user_who_hides_it_by_account_id(jira):
    """Jira Cloud returns a user's emailAddress only where the user's profile visibility
    allows it (null or absent otherwise; blank for a deleted user, "Former user"). With
    user_field = "emailAddress", Bob, who hides his, was read as nobody: PAY-30, assigned
    to him from its creation, gave Ledger no owner at all. He is named by his accountId,
    as the changelog names him, and said once per issue."""
    jira.issues.clear()
    alice = {"accountId": "5b10a2844c20165700ede21g", "displayName": "Alice", "active": True}
    alice["emailAddress"] = "alice@acme.io"
    bob = {"accountId": "5c2201c8a1b2c3d4e5f60718", "displayName": "Bob", "active": True}
    gone = {"accountId": "5d33aa00bb11cc22dd33ee44", "displayName": "Former user"}
    gone |= {"emailAddress": "", "active": False}
    first = jira_issue("PAY-30", "Ledger export", components=("Ledger",), created=T(1))
    first["fields"]["assignee"] = bob
    second = jira_issue("PAY-31", "Ledger import", components=("Ledger",), created=T(2))
    second["fields"]["assignee"] = alice
    third = jira_issue("PAY-32", "Ledger audit", components=("Audit",), created=T(3))
    third["fields"]["assignee"] = gone
    for issue in (first, second, third):
        jira.add(issue)
    result = make(jira, user_field="emailAddress", page_size=50).pull(None)
    assert result.ok, result.error
    owners = [(e.fact.subject, e.type, e.fact.value) for e in result.events]
    owners = [o for o in owners if o[0] in ("Ledger", "Audit")]
    assert owners == [
        ("Ledger", "added", "5c2201c8a1b2c3d4e5f60718"),
        ("Ledger", "revised", "5c2201c8a1b2c3d4e5f60718 alice@acme.io"),
        ("Audit", "added", "5d33aa00bb11cc22dd33ee44"),
    ]
    assert sorted(result.skipped) == [
        f"{key}: the assignee {who} gives no emailAddress (Jira Cloud hides it where the "
        "user's profile visibility says so); named by its id"
        for key, who in (("PAY-30", bob["accountId"]), ("PAY-32", gone["accountId"]))
    ]


def test_users_whose_records_are_corrupted_are_nobody_not_one_owner(jira):
    """Jira Cloud gives a deleted user whose record is corrupted (after a server import)
    the accountId "unknown": every such user has it, so it is no person (as GitHub's
    "ghost"), and two of them, assigned to two issues, are not one owner of Ledger."""
    jira.issues.clear()
    lost = {"accountId": "unknown", "displayName": "Unknown", "active": False}
    dana = {"accountId": "5e55aa00bb11cc22dd33ee55", "displayName": "Dana Cole", "active": True}
    first = jira_issue("PAY-50", "Ledger export", components=("Ledger",), created=T(1))
    first["fields"]["assignee"] = lost
    second = jira_issue(
        "PAY-51",
        "Ledger import",
        components=("Ledger",),
        created=T(2),
        updated=T(4),
        histories=[
            jira_history(51100, T(3), jira_item("assignee", None, None, "unknown", "Unknown")),
            jira_history(
                51101,
                T(4),
                jira_item("assignee", "unknown", "Unknown", dana["accountId"], "Dana Cole"),
            ),
        ],
    )
    second["fields"]["assignee"] = dana
    for issue in (first, second):
        jira.add(issue)
    result = make(jira, page_size=50).pull(None)
    assert result.ok, result.error
    owners = [(e.type, e.fact.value) for e in result.events if e.fact.subject == "Ledger"]
    assert owners == [("added", dana["accountId"])]


def test_a_component_renamed_since_the_changelog_named_it_is_one_area_by_its_id(jira):
    """Changelog items keep the name a component had when they were written (and its id, as
    ``from``/``to``); the issue's fields give its name now. PAY-60 gained component 10020
    as "Ledger", since renamed "Accounts"; PAY-61 gained 10030 as "Billing", renamed
    "Payments" before it was removed from the issue. Each is one area, named as now, and
    removing the renamed component ends the ownership it gave."""
    jira.issues.clear()
    kept = jira_issue(
        "PAY-60",
        "Ledger export",
        assignee="alice",
        created=T(1),
        updated=T(2),
        histories=[
            jira_history(10600, T(2), jira_item("Component", None, None, "10020", "Ledger")),
        ],
    )
    kept["fields"]["components"] = [{"id": "10020", "name": "Accounts"}]
    jira.add(kept)
    jira.add(
        jira_issue(
            "PAY-61",
            "Refund rules",
            assignee="bob",
            created=T(1),
            updated=T(4),
            histories=[
                jira_history(10610, T(2), jira_item("Component", None, None, "10030", "Billing")),
                jira_history(10611, T(4), jira_item("Component", "10030", "Payments", None, None)),
            ],
        )
    )
    result = make(jira).pull(None)
    assert result.ok, result.error
    assert shape([e for e in result.events if e.fact.predicate == "owners"]) == [
        ("jira:PAY-60:10600:0:owners:Accounts", "added", Z(2),
         Fact("Accounts", "owners", "alice", "ownership"), None, None),
        ("jira:PAY-61:10610:0:owners:Payments", "added", Z(2),
         Fact("Payments", "owners", "bob", "ownership"), None, None),
        ("jira:PAY-61:10611:0:owners:Payments", "invalidated", Z(4),
         Fact("Payments", "owners", "bob", "ownership"), None,
         "component 'Payments' removed from PAY-61"),
    ]  # fmt: skip


def test_credentials_read_from_files_with_their_line_breaks_are_sent_without_them(jira):
    source = ticket_source(
        JiraSource,
        JiraOptions,
        "jira",
        dict(base_url=jira.base_url, jql="project = PAY", user_env="U", token_env="T"),
        {"U": "jürgen@example.com\n", "T": f"{SECRET}\r\n"},
    )
    result = source.pull(None)
    assert result.ok, result.error
    basic = base64.b64encode(f"jürgen@example.com:{SECRET}".encode()).decode()
    assert {r.headers["Authorization"] for r in jira.log} == {f"Basic {basic}"}


@pytest.mark.parametrize("variable", ["U", "T"])
def test_a_credential_with_a_line_break_inside_is_one_line_naming_its_variable(jira, variable):
    environ = {"U": "healthd-bot", "T": SECRET, variable: f"{SECRET}\nX-Other: 1"}
    source = ticket_source(
        JiraSource,
        JiraOptions,
        "jira",
        dict(base_url=jira.base_url, jql="project = PAY", user_env="U", token_env="T"),
        environ,
    )
    result = source.pull(None)
    assert not result.ok and jira.log == []
    option = {"U": "user_env", "T": "token_env"}[variable]
    assert f"environment variable {variable} ({option}) holds a line break" in result.error
    assert "\n" not in result.error and SECRET not in result.error


def test_the_search_window_starts_at_the_watermark_in_the_api_users_time_zone(jira):
    """JQL reads a date in the time zone of the user who searches (here Los Angeles, UTC-8
    in January): the watermark written in UTC started the window 8 hours late, so with an
    overlap_minutes shorter than that an issue updated in those hours was never read."""
    jira.user_zone = "America/Los_Angeles"
    first = make(jira, overlap_minutes=0).pull(None)
    assert first.ok, first.error  # the watermark: PAY-3's update, 2024-01-06 10:00 UTC
    jira.add(jira_issue("PAY-9", "Payout limits", created=T(6, 12), updated=T(6, 12)))
    second = make(jira, overlap_minutes=0).pull(first.cursor)
    assert second.ok, second.error
    assert [e.id for e in second.events] == ["jira:PAY-9:created"]
    assert 'updated >= "2024/01/06 02:00"' in jira.log[-1].args["jql"]


def test_credentials_in_base_url_sign_the_requests_but_stay_out_of_the_events(jira):
    """A Data Center site reached as https://bot:secret@jira.example.com: requests signs
    with the URL's credentials; the issue's page each event links to is the site without
    them (the events go to the timeline and the memory, which no redaction reaches)."""
    base = jira.base_url.replace("http://", "http://healthd-bot:hunter2pass@")
    source = ticket_source(
        JiraSource,
        JiraOptions,
        "jira",
        dict(base_url=base, jql="project = PAY", token_env=None),
        {},
    )
    result = source.pull(None)
    assert result.ok, result.error
    basic = base64.b64encode(b"healthd-bot:hunter2pass").decode()
    assert jira.log[0].headers["Authorization"] == f"Basic {basic}"
    urls = {e.metadata["url"] for e in result.events}
    assert urls == {f"{jira.base_url}/browse/PAY-{n}" for n in (1, 2, 3)}


@pytest.mark.parametrize(
    ("reason", "denied", "said"),
    [  # Jira Cloud, an expired API token (jira.js #418); Data Center, a CAPTCHA demanded
        ("AUTHENTICATED_FAILED", None, "check user_env and token_env"),
        ("AUTHENTICATION_DENIED", "CAPTCHA_CHALLENGE", "sign in once in a browser"),
    ],
)
def test_a_search_answered_as_an_anonymous_user_fails_the_pull_and_lapses_nothing(
    jira, reason, denied, said
):
    """Jira's login filter, refusing credentials (expired, wrong, or a CAPTCHA demanded
    after failed sign-ins), answers the request as an anonymous user's: 200, and the issues
    anonymous users may see, here none. Taken for the real answer, alice's claim on Billing
    through PAY-7 lapsed as if the issue had left the query."""
    jira.add(_billing("PAY-7", "alice", 2))
    first = make(jira).pull(None)
    assert first.ok, first.error
    assert json.loads(first.cursor)["areas"] == {"Billing": {"PAY-7": "alice"}}
    headers = {"X-Seraph-LoginReason": reason}
    if denied:
        headers["X-Authentication-Denied-Reason"] = f"{denied}; login-url={jira.base_url}/login"
    empty = json.dumps({"startAt": 0, "maxResults": 2, "total": 0, "issues": []})
    jira.fail(r"/search$", status=200, headers=headers, body=empty, times=10)
    result = make(jira).pull(first.cursor)
    assert not result.ok and result.events == []
    assert f"X-Seraph-LoginReason: {reason}" in result.error and said in result.error
    assert result.cursor == first.cursor


def test_a_password_outside_ascii_signs_basic_authentication(jira):
    """With user_env, token_env holds the password of a Basic header, which goes base64-
    encoded (UTF-8), as the user name does: a Data Center password with "ü" in it signed
    every request until dd9f9eb refused it as if it went into a Bearer header as it is."""
    password = f"pässwort-{SECRET}"
    source = ticket_source(
        JiraSource,
        JiraOptions,
        "jira",
        dict(base_url=jira.base_url, jql="project = PAY", user_env="U", token_env="T"),
        {"U": "healthd-bot", "T": password},
    )
    result = source.pull(None)
    assert result.ok, result.error
    basic = base64.b64encode(f"healthd-bot:{password}".encode()).decode()
    assert {r.headers["Authorization"] for r in jira.log} == {f"Basic {basic}"}


def test_a_bearer_token_outside_ascii_is_one_line_naming_its_variable(jira):
    source = ticket_source(
        JiraSource,
        JiraOptions,
        "jira",
        dict(base_url=jira.base_url, jql="project = PAY", token_env="T"),
        {"T": f"pässwort-{SECRET}"},
    )
    result = source.pull(None)
    assert not result.ok and jira.log == []
    assert "environment variable T (token_env) holds" in result.error
    assert SECRET not in result.error


def test_credentials_in_base_url_refused_by_the_login_filter_fail_the_pull(jira):
    """A Data Center site reached as https://bot:secret@jira.example.com: requests builds the
    Authorization header from the URL, not from the client's headers, so a check made only
    when those hold one let the anonymous answer through, and alice's claim lapsed."""
    jira.add(_billing("PAY-7", "alice", 2))
    base = jira.base_url.replace("http://", "http://healthd-bot:hunter2pass@")
    first = make(jira, base_url=base, user_env=None, token_env=None).pull(None)
    assert first.ok, first.error
    assert json.loads(first.cursor)["areas"] == {"Billing": {"PAY-7": "alice"}}
    empty = json.dumps({"startAt": 0, "maxResults": 2, "total": 0, "issues": []})
    jira.fail(
        r"/search$",
        status=200,
        headers={"X-Seraph-LoginReason": "AUTHENTICATED_FAILED"},
        body=empty,
        times=10,
    )
    result = make(jira, base_url=base, user_env=None, token_env=None).pull(first.cursor)
    assert not result.ok and result.events == []
    assert "X-Seraph-LoginReason: AUTHENTICATED_FAILED" in result.error
    assert "hunter2pass" not in result.error
    assert result.cursor == first.cursor


def test_a_login_filter_refusal_without_credentials_sent_is_no_error(jira):
    """Without credentials the answer is an anonymous user's by design (a public site)."""
    jira.fail(
        r"/search$",
        status=200,
        headers={"X-Seraph-LoginReason": "AUTHENTICATED_FAILED"},
        body=json.dumps({"startAt": 0, "maxResults": 2, "total": 0, "issues": []}),
        times=10,
    )
    result = make(jira, user_env=None, token_env=None).pull(None)
    assert result.ok, result.error


@pytest.mark.parametrize(
    ("watermark", "zone"),
    [  # the hour clocks are set back in: New York (-4 → -5), Berlin (+2 → +1), Lord Howe (30 min)
        ("2024-11-03T05:30:00Z", "America/New_York"),
        ("2024-11-03T05:59:00Z", "America/New_York"),
        ("2024-10-27T00:15:00Z", "Europe/Berlin"),
        ("2024-04-06T14:45:00Z", "Australia/Lord_Howe"),
        ("2024-11-03T06:30:00Z", "America/New_York"),  # the second 01:30
        ("2024-03-10T07:30:00Z", "America/New_York"),  # just after clocks went forward
    ],
)
def test_a_window_start_in_the_hour_clocks_are_set_back_is_read_no_later(jira, watermark, zone):
    """In the hour a time zone sets its clocks back, a wall time names two instants, and
    JQL may read the later one (ICU's and Java's default for a repeated wall time): the
    start written as the earlier one's wall time began the window up to an hour late, so
    with overlap_minutes under that an issue updated in that hour was never read. The
    time written is at or before the watermark whichever of its readings is taken."""
    jql = make(jira, overlap_minutes=0)._jql(watermark, ZoneInfo(zone))
    match = re.search(r'updated >= "(\d{4})/(\d\d)/(\d\d) (\d\d):(\d\d)"', jql)
    assert match, jql
    wall = datetime(*map(int, match.groups()), tzinfo=ZoneInfo(zone))
    start = datetime.fromisoformat(watermark)
    readings = {wall.replace(fold=fold).astimezone(UTC) for fold in (0, 1)}
    assert max(readings) <= start, (jql, readings)
    assert start - min(readings) < timedelta(hours=1, minutes=1)  # not needlessly early


def test_a_component_renamed_between_two_pulls_moves_the_claim_to_its_new_name(jira):
    """Renaming a component writes nothing into its issues' changelogs and leaves their
    ``updated`` alone. PAY-62 claimed Billing (component 10030) for bob in the first pull;
    10030 is then renamed Payments, and bob is later unassigned and dana assigned. Read
    again, the issue is named as now throughout (ff7b377): its claims are on Payments, and
    the claim on Billing it no longer makes must end, not stay bob's for good."""
    jira.issues.clear()
    issue = jira_issue(
        "PAY-62",
        "Card refunds",
        assignee="bob",
        created=T(1),
        updated=T(2),
        histories=[
            jira_history(10620, T(2), jira_item("Component", None, None, "10030", "Billing")),
        ],
    )
    issue["fields"]["components"] = [{"id": "10030", "name": "Billing"}]
    jira.add(issue)
    first = make(jira).pull(None)
    assert first.ok, first.error
    assert json.loads(first.cursor)["areas"] == {"Billing": {"PAY-62": "bob"}}
    issue["fields"]["components"] = [{"id": "10030", "name": "Payments"}]  # renamed
    issue["fields"]["assignee"] = jira_user("dana")
    issue["fields"]["updated"] = T(5)
    issue["changelog"]["histories"].append(
        jira_history(10621, T(5), jira_item("assignee", "bob", "bob", "dana", "dana"))
    )
    issue["changelog"]["total"] = issue["changelog"]["maxResults"] = 2
    second = make(jira).pull(first.cursor)
    assert second.ok, second.error
    assert json.loads(second.cursor)["areas"] == {"Payments": {"PAY-62": "dana"}}
    assert json.loads(second.cursor)["lapsed_areas"] == {}
    said = [(e.type, e.fact.subject, e.fact.value, e.reason) for e in second.events]
    assert ("invalidated", "Billing", "bob", (
        "PAY-62 no longer has a component named 'Billing' (renamed or deleted since)"
    )) in said  # fmt: skip
    assert ("added", "Payments", "dana", None) in said


def test_a_429_with_points_left_and_an_iso_reset_waits_for_that_reset(jira):
    """Jira Cloud's X-RateLimit-Reset (ISO 8601) is "the request timestamp plus the
    Retry-After period": when to retry, whatever X-RateLimit-Remaining says of the hourly
    quota (a burst limit is met with points left). 7376d4b took any 429 with requests left
    for GitHub's secondary limit and waited a minute (then two), ignoring it."""
    sleeps = Sleeps()  # the source's clock reads 2027-01-15T08:00:00Z
    jira.fail(
        r"/search$",
        status=429,
        headers={
            "X-RateLimit-Reset": "2027-01-15T08:00:07Z",
            "X-RateLimit-Remaining": "3460",
            "RateLimit-Reason": "jira-burst-based",
        },
    )
    assert make(jira, sleeps).pull(None).ok
    assert sleeps.calls == [7.0]


def test_a_403_from_a_rate_limited_data_center_site_is_a_refusal_not_a_rate_limit(jira):
    """With rate limiting on, Jira Data Center sends Retry-After on every answer, 0 while
    tokens are left ("If you still have tokens left, it shows 0"). A 403 refusing the
    search (no permission) was taken for a rate limit: retried at once, and the pull said
    it was rate limited and deferred, naming neither the refusal nor its message."""
    sleeps = Sleeps()
    jira.fail(
        r"/search$",
        status=403,
        headers={"Retry-After": "0", "X-RateLimit-Remaining": "29", "X-RateLimit-Limit": "30"},
        body='{"errorMessages": ["You do not have the permission to see the specified issue."]}',
        times=10,
    )
    result = make(jira, sleeps).pull(None)
    assert not result.ok
    assert "HTTP 403: You do not have the permission" in result.error
    assert "rate limited" not in result.error
    assert [p for p in jira.paths() if p.endswith("/search")] == ["/rest/api/2/search"]


def test_a_503_with_retry_after_0_and_tokens_left_is_retried_with_backoff(jira):
    sleeps = Sleeps()
    jira.fail(
        r"/search$",
        status=503,
        headers={"Retry-After": "0", "X-RateLimit-Remaining": "29"},
        times=1,
    )
    result = make(jira, sleeps).pull(None)
    assert result.ok, result.error
    assert len(sleeps.calls) == 1 and sleeps.calls[0] > 0  # a backoff, not an instant retry


@pytest.mark.parametrize(
    "headers", [{"Retry-After": "0"}, {"Retry-After": "0", "X-RateLimit-Remaining": "0"}]
)
def test_a_403_whose_retry_after_is_0_is_a_refusal_whatever_else_is_said(jira, headers):
    """Retry-After: 0 asks for no wait, so it never makes a 403 a rate limit: without
    X-RateLimit-Remaining beside it (a proxy, a Retry-After date already past) the refusal
    was retried at once three times and the pull said it was rate limited and deferred,
    dropping Jira's message. (A 403 with X-RateLimit-Remaining: 0 and a positive wait, or
    GitHub's secondary-limit body, still is one.)"""
    sleeps = Sleeps()
    jira.fail(
        r"/search$",
        status=403,
        headers=headers,
        body='{"errorMessages": ["You do not have the permission to see the specified issue."]}',
        times=10,
    )
    result = make(jira, sleeps).pull(None)
    assert not result.ok
    assert "HTTP 403: You do not have the permission" in result.error
    assert "rate limited" not in result.error
    assert [p for p in jira.paths() if p.endswith("/search")] == ["/rest/api/2/search"]


def test_a_503_with_retry_after_0_alone_is_retried_with_backoff(jira):
    sleeps = Sleeps()
    jira.fail(r"/search$", status=503, headers={"Retry-After": "0"}, times=1)
    result = make(jira, sleeps).pull(None)
    assert result.ok, result.error
    assert len(sleeps.calls) == 1 and sleeps.calls[0] > 0  # a backoff, not an instant retry


def test_a_429_whose_iso_reset_names_only_a_minute_waits_to_that_minutes_end(jira):
    """Atlassian writes X-RateLimit-Reset as yyyy-MM-ddTHH:mmZ: "the request timestamp
    plus the Retry-After period", its seconds dropped, so the reset lies somewhere in the
    minute named. Read as that minute's start it was already due, most of the time: the
    request went again at once, three times, each too early (which Atlassian answers with
    "the same or longer Retry-After period"), and the pull was deferred."""
    sleeps = Sleeps()  # the source's clock reads 2027-01-15T08:00:00Z
    jira.fail(
        r"/search$",
        status=429,
        headers={
            "X-RateLimit-Reset": "2027-01-15T08:00Z",
            "X-RateLimit-Remaining": "3460",
            "RateLimit-Reason": "jira-burst-based",
        },
    )
    result = make(jira, sleeps, max_rate_limit_wait_seconds=120).pull(None)
    assert result.ok, result.error
    assert sleeps.calls == [60.0]


@pytest.mark.parametrize("myself", [{"status": 404}, {"status": 200, "body": "{}"}])
def test_a_user_zone_not_known_starts_the_window_early_enough_for_any_zone(jira, myself):
    """When /myself does not say the API user's zone (it fails, or names none), JQL still
    reads the date in that zone. Written in UTC, the window of a Los Angeles user started
    8 hours late, and with an overlap_minutes shorter than that an issue updated in those
    hours was never read: it is written now as the wall time in the westernmost zone
    (UTC-12), which no zone reads as later than the watermark."""
    jira.user_zone = "America/Los_Angeles"
    first = make(jira, overlap_minutes=0).pull(None)
    assert first.ok, first.error  # the watermark: PAY-3's update, 2024-01-06 10:00 UTC
    jira.add(jira_issue("PAY-9", "Payout limits", created=T(6, 12), updated=T(6, 12)))
    jira.fail(r"/myself$", times=10, **myself)
    second = make(jira, overlap_minutes=0).pull(first.cursor)
    assert second.ok, second.error
    assert [e.id for e in second.events] == ["jira:PAY-9:created"]
    assert 'updated >= "2024/01/05 22:00"' in jira.log[-1].args["jql"]
