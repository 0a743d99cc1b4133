"""The `github` source against a real local HTTP server shaped like GitHub's REST API."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import pytest
from _ticket_payloads import (
    SECRET,
    FakeGitHub,
    Sleeps,
    _module_server,  # noqa: F401
    api_server,  # noqa: F401
    assigned,
    closed,
    gh_event,
    gh_issue,
    labeled,
    renamed,
    run_all,
    ticket_source,
)
from werkzeug import Response

from healthd.errors import ConfigError
from healthd.model import Fact
from healthd.sources import build_source
from healthd.sources.github import GitHubOptions, GitHubSource

REPO = "acme/payments"


def T(day: int, hour: int = 10) -> str:
    return f"2024-01-{day:02d}T{hour:02d}:00:00Z"


def populate(gh: FakeGitHub) -> None:
    gh.add(
        gh_issue(
            1,
            "Refunds within 3 days",
            state="closed",
            state_reason="completed",
            labels=("requirement", "area/billing"),
            assignees=("bob",),
            updated_at=T(6),
            closed_at=T(6),
        ),
        [
            labeled(101, T(1), "requirement"),
            labeled(102, T(1), "area/billing"),
            assigned(103, T(2), "alice"),
            renamed(104, T(3), "Refunds within 5 days", "Refunds within 3 days"),
            assigned(105, T(4), "bob"),
            assigned(106, T(5), "alice", unassign=True),
            closed(107, T(6), "completed"),
        ],
    )
    gh.add(
        gh_issue(
            2,
            "Use Postgres for the ledger",
            state="closed",
            state_reason="not_planned",
            labels=("decision",),
            created_at=T(2),
            updated_at=T(7),
        ),
        [
            labeled(201, T(2), "decision"),
            gh_event(205, "subscribed", T(3)),
            closed(202, T(7), "not_planned"),
        ],
    )
    gh.add(
        gh_issue(3, "Support SEPA", labels=(), created_at=T(3), updated_at=T(8)),
        [
            labeled(301, T(3), "requirement"),
            closed(302, T(4), "not_planned"),
            gh_event(303, "reopened", T(5)),
            labeled(304, T(8), "requirement", unlabel=True),
        ],
    )
    gh.add(gh_issue(4, "Flaky test", created_at=T(4), updated_at=T(4, 11)), [])
    gh.add(
        gh_issue(
            5,
            "Implement refunds",
            labels=("requirement",),
            created_at=T(4),
            updated_at=T(5, 12),
            pull_request=True,
        ),
        [labeled(501, T(4), "requirement")],
    )
    gh.add(
        gh_issue(6, "Search ownership", labels=("area/search",), created_at=T(2), updated_at=T(9)),
        [
            labeled(601, T(2), "area/search"),
            assigned(602, T(3), "carol"),
            assigned(603, T(9), "carol", unassign=True),
        ],
    )


def req(value: str, n: int = 1) -> Fact:
    return Fact(f"{REPO}#{n}", "requirement", value, "requirement")


def owners(area: str, value: str) -> Fact:
    return Fact(area, "owners", value, "ownership")


EXPECTED = [
    # (id, type, time, fact, previous, reason)
    ("github:acme/payments#1:101", "added", T(1), req("Refunds within 5 days"), None, None),
    (
        "github:acme/payments#1:103:owners:billing",
        "added",
        T(2),
        owners("billing", "alice"),
        None,
        None,
    ),
    (
        "github:acme/payments#2:201",
        "added",
        T(2),
        Fact(f"{REPO}#2", "decision", "Use Postgres for the ledger", "decision"),
        None,
        None,
    ),
    (
        "github:acme/payments#1:104",
        "revised",
        T(3),
        req("Refunds within 3 days"),
        req("Refunds within 5 days"),
        None,
    ),
    ("github:acme/payments#3:301", "added", T(3), req("Support SEPA", 3), None, None),
    (
        "github:acme/payments#6:602:owners:search",
        "added",
        T(3),
        owners("search", "carol"),
        None,
        None,
    ),
    (
        "github:acme/payments#1:105:owners:billing",
        "revised",
        T(4),
        owners("billing", "alice bob"),
        owners("billing", "alice"),
        None,
    ),
    (
        "github:acme/payments#3:302",
        "invalidated",
        T(4),
        req("Support SEPA", 3),
        None,
        "closed as not planned",
    ),
    (
        "github:acme/payments#1:106:owners:billing",
        "revised",
        T(5),
        owners("billing", "bob"),
        owners("billing", "alice bob"),
        None,
    ),
    ("github:acme/payments#3:303", "added", T(5), req("Support SEPA", 3), None, None),
    (
        "github:acme/payments#1:107",
        "revised",
        T(6),
        req("done"),
        req("Refunds within 3 days"),
        None,
    ),
    # closing issue 1 does not end bob's ownership of billing: no event
    (
        "github:acme/payments#2:202",
        "invalidated",
        T(7),
        Fact(f"{REPO}#2", "decision", "Use Postgres for the ledger", "decision"),
        None,
        "closed as not planned",
    ),
    (
        "github:acme/payments#3:304",
        "invalidated",
        T(8),
        req("Support SEPA", 3),
        None,
        "label 'requirement' removed",
    ),
    # but unassigning carol from the open issue that gave her search ends it
    (
        "github:acme/payments#6:603:owners:search",
        "invalidated",
        T(9),
        owners("search", "carol"),
        None,
        "carol unassigned from acme/payments#6",
    ),
]


def shape(events):
    return [
        (e.id, e.type, e.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"), e.fact, e.previous, e.reason)
        for e in events
    ]


@pytest.fixture
def gh(api_server):  # noqa: F811
    fake = FakeGitHub(api_server)
    populate(fake)
    return fake


def alice_owns_x(gh: FakeGitHub, title: str = "one") -> None:
    """Only issue #1, labelled area/x and assigned to alice on day 1 (two events: a full
    page at per_page 2)."""
    gh.issues.clear()
    gh.events.clear()
    gh.add(
        gh_issue(1, title, labels=("area/x",), assignees=("alice",), updated_at=T(1)),
        [labeled(101, T(1), "area/x"), assigned(102, T(1), "alice")],
    )


def make(gh: FakeGitHub, sleeps: Sleeps | None = None, **options) -> GitHubSource:
    settings = dict(repo=REPO, base_url=gh.base_url, token_env="GH_TEST_TOKEN", per_page=2)
    environ = {"GH_TEST_TOKEN": SECRET}
    return ticket_source(
        GitHubSource, GitHubOptions, "tickets", {**settings, **options}, environ, sleeps
    )


def test_maps_issue_events_to_the_exact_change_events_with_api_times(gh):
    result = make(gh).pull(None)
    assert result.ok, result.error
    assert result.skipped == []
    assert shape(result.events) == EXPECTED
    first = result.events[0]
    assert first.source == "tickets"
    assert first.timestamp == datetime(2024, 1, 1, 10, tzinfo=UTC)
    assert first.depends_on == ()
    assert dict(first.metadata) == {
        "url": "https://github.com/acme/payments/issues/1",
        "event": "labeled",
    }


def test_paginates_issue_list_and_events_via_link_headers(gh):
    make(gh).pull(None)
    # 6 issues at 2 per page; issue 1 has 7 events → 4 pages. A listing of more than one
    # page is listed again (an issue leaving it between two pages hides another), the
    # issues read passed over: their events are asked for once.
    first_pass = [r for r in gh.log if r.path == f"/repos/{REPO}/issues" and "since" not in r.args]
    assert [r.args.get("page") for r in first_pass] == [None, "2", "3", None, "2", "3"]
    assert [r.args.get("page") for r in gh.log if r.path == f"/repos/{REPO}/issues/1/events"] == [
        None,
        "2",
        "3",
        "4",
    ]
    assert not any(r.path.endswith("/5/events") for r in gh.log)  # pull requests are skipped


def test_sends_user_agent_token_and_conditional_requests(gh):
    make(gh).pull(None)
    request = gh.log[0]
    assert request.headers["User-Agent"].startswith("healthd/")
    assert request.headers["Authorization"] == f"Bearer {SECRET}"
    assert request.headers["Accept"] == "application/vnd.github+json"
    assert request.args["sort"] == "updated" and request.args["direction"] == "desc"


def test_the_token_is_sent_whatever_a_netrc_file_holds(gh, monkeypatch, tmp_path):
    """requests puts a ~/.netrc entry's login in place of the Authorization header given
    (psf/requests#3929): GitHub got Basic credentials instead of the configured token."""
    netrc = tmp_path / "netrc"
    netrc.write_text("default login alice password netrc-pw-0123456789\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    make(gh).pull(None)
    assert {request.headers["Authorization"] for request in gh.log} == {f"Bearer {SECRET}"}


def test_the_token_is_sent_after_a_redirect_whatever_a_netrc_file_holds(gh, monkeypatch, tmp_path):
    """GitHub answers a renamed repository's URLs with a 301 to where it went; requests reads
    ~/.netrc again for the URL it follows, and put the entry's login in place of the token."""
    netrc = tmp_path / "netrc"
    netrc.write_text("default login alice password netrc-pw-0123456789\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    moved = f"{gh.base_url}/repos/{REPO}/issues/1/events"
    gh.fail(r"/issues/1/events$", status=301, headers={"Location": moved}, body="", times=1)
    assert make(gh).pull(None).ok
    followed = [r for r in gh.log if r.path.endswith("/issues/1/events")]
    assert len(followed) == 2  # the 301, then where it pointed
    assert {request.headers["Authorization"] for request in gh.log} == {f"Bearer {SECRET}"}


def test_repeat_run_on_an_unchanged_repo_is_one_304_and_no_events(gh):
    source = make(gh)
    first = source.pull(None)
    gh.log.clear()
    second = source.pull(first.cursor)
    assert second.ok and second.events == []
    assert len(gh.log) == 1
    assert gh.log[0].headers.get("If-None-Match")
    assert gh.log[0].args["since"] == T(9)
    # a third run still costs only a 304, and the cursor holds
    gh.log.clear()
    third = source.pull(second.cursor)
    assert third.events == [] and len(gh.log) == 1 and third.cursor == second.cursor


def test_next_run_reads_only_what_is_new(gh):
    source = make(gh)
    first = source.pull(None)
    gh.issues[1]["updated_at"] = T(10)
    gh.events[1].append(gh_event(108, "reopened", T(10)))
    second = source.pull(first.cursor)
    assert second.ok
    assert shape(second.events) == [
        (
            "github:acme/payments#1:108",
            "revised",
            T(10),
            req("Refunds within 3 days"),
            req("done"),
            None,
        ),
        # reopened, it claims billing for bob again: bob held it all along, no event
    ]
    third = source.pull(second.cursor)
    assert third.events == []


def _no_loss_no_dup(events):
    ids = [e.id for e in events]
    assert len(ids) == len(set(ids)), "an event was emitted twice"
    assert sorted(shape(events), key=lambda s: s[0]) == sorted(EXPECTED, key=lambda s: s[0])


def test_500_then_success_is_retried_with_backoff(gh):
    sleeps = Sleeps()
    gh.fail(r"/issues/3/events$", status=500, times=1)
    result = make(gh, sleeps).pull(None)
    assert result.ok, result.error
    assert shape(result.events) == EXPECTED
    assert sleeps.calls == [0.375]  # backoff 0.5 s, equal jitter with rng=0.5


def test_persistent_5xx_fails_part_way_and_next_run_resumes_without_loss_or_duplicates(gh):
    sleeps = Sleeps()
    gh.fail(r"/issues/2/events$", status=502, times=3)  # 1 try + 2 retries
    source = make(gh, sleeps)
    failed = source.pull(None)
    assert not failed.ok
    assert "/repos/acme/payments/issues/2/events" in failed.error
    assert "HTTP 502" in failed.error and "3 attempts" in failed.error
    # newest first: issues 6 and 3 were read completely before issue 2 failed; 3's events
    # are given, 6's claim on an area waits in the cursor, to be folded in time order with
    # the claims of the older issues the next run reads
    assert {e.id.split(":")[1] for e in failed.events} == {f"{REPO}#3"}
    assert {claim[3] for claim in json.loads(failed.cursor)["pending_claims"]} == {f"{REPO}#6"}
    assert json.loads(failed.cursor)["since"] is None  # the watermark did not move
    assert len(sleeps.calls) == 2
    events, cursor, results = run_all(source.pull, failed.cursor)
    assert results[-1].ok
    _no_loss_no_dup(failed.events + events)


@pytest.mark.parametrize("status", [403, 429])
def test_rate_limit_with_short_retry_after_waits_then_succeeds(gh, status):
    sleeps = Sleeps()
    gh.fail(
        r"/issues$",
        status=status,
        headers={"Retry-After": "3"},
        body='{"message": "You have exceeded a secondary rate limit."}',
    )
    result = make(gh, sleeps).pull(None)
    assert result.ok, result.error
    assert sleeps.calls == [3.0]
    assert shape(result.events) == EXPECTED


def test_a_secondary_rate_limit_said_only_in_the_message_waits_a_minute(gh):
    # GitHub's documented answer: 403, no retry-after, requests left, the limit in the body
    # ("otherwise, wait for at least one minute before retrying")
    sleeps = Sleeps()
    gh.fail(
        r"/issues/6/events$",
        status=403,
        headers={"X-RateLimit-Remaining": "4987", "X-RateLimit-Reset": "1800003600"},
        body='{"message": "You have exceeded a secondary rate limit. Please wait a few minutes '
        "before you try again. If you reach out to GitHub Support for help, please include "
        'the request ID E198:4063:33BD6:375FF:652AAB04.", "documentation_url": '
        '"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"}',
    )
    result = make(gh, sleeps, max_rate_limit_wait_seconds=60).pull(None)
    assert result.ok, result.error
    assert sleeps.calls == [60.0]
    assert shape(result.events) == EXPECTED

    gh.log.clear()
    gh.fail(r"/issues/6/events$", status=403, body='{"message": "Resource not accessible"}')
    refused = make(gh, sleeps := Sleeps()).pull(None)
    assert not refused.ok and "HTTP 403: Resource not accessible" in refused.error
    assert sleeps.calls == []  # a refusal is no rate limit: no wait, no retry


def test_a_secondary_rate_limit_as_a_429_with_requests_left_waits_a_minute_not_the_hour(gh):
    # GitHub's rate-limit docs: a secondary limit is a 403 or a 429; with no retry-after and
    # x-ratelimit-remaining not 0, "wait for at least one minute" (the reset is the primary
    # window's, here an hour away)
    sleeps = Sleeps()
    gh.fail(
        r"/issues/6/events$",
        status=429,
        headers={"X-RateLimit-Remaining": "4987", "X-RateLimit-Reset": "1800003600"},
        body='{"message": "You have exceeded a secondary rate limit. Please wait a few minutes '
        'before you try again."}',
    )
    result = make(gh, sleeps, max_rate_limit_wait_seconds=60).pull(None)
    assert result.ok, result.error
    assert sleeps.calls == [60.0]
    assert shape(result.events) == EXPECTED


def test_a_304_to_a_request_that_was_not_conditional_fails_the_pull_and_loses_nothing(gh):
    # RFC 9110 15.4.5: 304 answers a conditional GET only; taken for "unchanged", the events
    # of #1, never read, were passed over and the watermark went past them for good
    gh.fail(r"/issues/1/events$", status=304, body="")
    failed = make(gh).pull(None)
    assert not failed.ok
    assert "HTTP 304 Not Modified to a request that was not conditional" in failed.error
    events, _, results = run_all(make(gh).pull, failed.cursor)
    assert results[-1].ok
    _no_loss_no_dup(failed.events + events)


def test_a_secondary_rate_limit_met_again_waits_twice_as_long_each_time(gh):
    # GitHub: "If your request continues to fail due to a secondary rate limit, wait for an
    # exponentially increasing amount of time between retries"
    sleeps = Sleeps()
    gh.fail(
        r"/issues/6/events$",
        status=403,
        headers={"X-RateLimit-Remaining": "4987", "X-RateLimit-Reset": "1800003600"},
        body='{"message": "You have exceeded a secondary rate limit."}',
        times=2,
    )
    result = make(gh, sleeps, max_rate_limit_wait_seconds=600).pull(None)
    assert result.ok, result.error
    assert sleeps.calls == [60.0, 120.0]
    assert shape(result.events) == EXPECTED


def test_the_secondary_limits_minute_doubles_for_secondary_limits_met_before_alone(gh):
    # a wait the server named (Retry-After) is no secondary limit met before: the first
    # one after it is waited a minute, not two
    sleeps = Sleeps()
    gh.fail(r"/issues/6/events$", status=429, headers={"Retry-After": "5"}, times=1)
    gh.fail(
        r"/issues/6/events$",
        status=403,
        headers={"X-RateLimit-Remaining": "4987", "X-RateLimit-Reset": "1800003600"},
        body='{"message": "You have exceeded a secondary rate limit."}',
        times=1,
    )
    result = make(gh, sleeps, max_rate_limit_wait_seconds=600).pull(None)
    assert result.ok, result.error
    assert sleeps.calls == [5.0, 60.0]


def test_rate_limit_beyond_the_bound_defers_to_the_next_run(gh):
    sleeps = Sleeps()
    source = make(gh, sleeps)
    gh.fail(r"/issues/1/events$", status=429, headers={"Retry-After": "3600"})
    deferred = source.pull(None)
    assert not deferred.ok
    assert "deferred to the next run" in deferred.error and "3600" in deferred.error
    assert sleeps.calls == []
    events, _, results = run_all(source.pull, deferred.cursor)
    assert results[-1].ok
    _no_loss_no_dup(deferred.events + events)


def test_exhausted_primary_rate_limit_uses_the_reset_header(gh):
    sleeps = Sleeps()
    # clock is 1_800_000_000: a reset 5 s later is waited for, 2 h later is deferred
    gh.fail(
        r"/issues$",
        status=403,
        body='{"message": "API rate limit exceeded"}',
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1800000005"},
    )
    assert make(gh, sleeps).pull(None).ok
    assert sleeps.calls == [5.0]
    gh.log.clear()
    gh.fail(
        r"/issues$",
        status=403,
        body='{"message": "API rate limit exceeded"}',
        headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1800007200"},
    )
    result = make(gh, Sleeps()).pull(None)
    assert not result.ok and "deferred" in result.error


def test_timeout_is_retried(gh):
    # One real timeout: the server answers after 2.5 s, the client waits 1 s (each other
    # request has that second: a loaded machine can stall a quick answer past 0.25 s)
    gh.fail(r"/issues/6/events$", delay=2.5, status=200, body="[]")
    result = make(gh, timeout_seconds=1).pull(None)
    assert result.ok, result.error
    assert shape(result.events) == EXPECTED


def test_timeout_without_retries_fails_and_names_the_request(gh):
    gh.fail(r"/issues/6/events$", delay=2.5, status=200, body="[]")
    result = make(gh, timeout_seconds=1, max_retries=0).pull(None)
    assert not result.ok
    assert "issues/6/events" in result.error and "timed out after 1 s" in result.error
    assert result.events == []


def test_truncated_json_body_on_the_first_page_fails_cleanly(gh):
    gh.fail(r"/issues$", status=200, body='[{"url": "https://api.github.com/repos/acme/pay')
    failed = make(gh).pull(None)
    assert not failed.ok and "not valid JSON" in failed.error
    assert f"/repos/{REPO}/issues" in failed.error
    assert failed.events == [] and json.loads(failed.cursor)["since"] is None


def test_truncated_json_on_a_later_page_keeps_what_was_read_and_resumes(gh):
    original, calls = gh.route, []

    def route(request):
        if request.path == f"/repos/{REPO}/issues" and request.args.get("page") == "2":
            calls.append(request)
            if len(calls) == 1:
                return Response('[{"number": 3, "tit', status=200, content_type="application/json")
        return original(request)

    gh.route = route
    source = make(gh)
    partial = source.pull(None)
    assert not partial.ok and "page=2" in partial.error and "not valid JSON" in partial.error
    # issues 6 and 3 (page 1, newest first) were read completely and are kept: 3's events,
    # 6's area claim (in the cursor, until the older issues are read)
    assert {e.id.split(":")[1] for e in partial.events} == {f"{REPO}#3"}
    assert {claim[3] for claim in json.loads(partial.cursor)["pending_claims"]} == {f"{REPO}#6"}
    events, _, results = run_all(source.pull, partial.cursor)
    assert results[-1].ok
    _no_loss_no_dup(partial.events + events)


def test_missing_fields_are_skipped_and_named(gh):
    del gh.issues[4]["title"]
    del gh.events[1][2]["created_at"]  # the 'assigned alice' event
    gh.events[3][0]["label"] = None
    result = make(gh).pull(None)
    assert result.ok
    assert result.skipped == [
        f"{REPO}#3 event 301 (labeled): field 'label' is missing",
        f"{REPO}#1 event #3 (assigned): field 'created_at' is missing or not a timestamp string",
        "issues page 3 item 2: field 'title' is missing",
    ]
    ids = {e.id for e in result.events}
    assert "github:acme/payments#3:301" not in ids  # its label was unreadable
    assert "github:acme/payments#1:103:owners:billing" not in ids
    assert "github:acme/payments#1:105:owners:billing" in ids  # bob alone
    assert "github:acme/payments#2:201" in ids


def test_token_never_appears_in_errors_events_cursor_or_logs(gh, caplog):
    caplog.set_level(logging.DEBUG)
    gh.fail(r"/issues$", status=401, body=json.dumps({"message": f"Bad credentials {SECRET}"}))
    failed = make(gh).pull(None)
    assert (
        not failed.ok
        and "HTTP 401" in failed.error
        and "Bad credentials [REDACTED]" in failed.error
    )
    ok = make(gh).pull(None)
    texts = [failed.error, failed.cursor, ok.cursor, caplog.text, *ok.skipped]
    texts += [json.dumps(dict(e.metadata)) for e in ok.events]
    assert not any(SECRET in (t or "") for t in texts)
    assert gh.log[-1].headers["Authorization"] == f"Bearer {SECRET}"  # it was sent, though


def test_missing_token_variable_is_a_clear_pull_error(gh):
    source = GitHubSource(
        "tickets",
        GitHubOptions(repo=REPO, base_url=gh.base_url, token_env="NOPE_TOKEN"),
        environ={},
    )
    result = source.pull(None)
    assert not result.ok and "NOPE_TOKEN" in result.error and gh.log == []


def test_a_repository_the_token_cannot_see_is_one_line_saying_what_404_means(gh):
    # GitHub's REST docs: a private resource the request may not see answers 404, not 403
    gh.fail(r"/repos/acme/payments/issues$", status=404, body='{"message": "Not Found"}')
    result = make(gh).pull(None)
    assert not result.ok
    assert "HTTP 404: Not Found; no repository acme/payments here, or the token in " in result.error
    assert "GH_TEST_TOKEN (token_env) cannot read it" in result.error


@pytest.mark.parametrize("base_url", ["https://github.com", "https://www.github.com/"])
def test_the_website_given_as_base_url_is_one_line_naming_the_api(base_url):
    with pytest.raises(ConfigError) as caught:
        build_source("github", "tickets", {"repo": REPO, "base_url": base_url})
    assert str(caught.value) == (
        "source 'tickets': field 'base_url': is the website, not its API: "
        "https://api.github.com (or leave it out); GitHub Enterprise Server: "
        "https://<host>/api/v3"
    )


def test_anonymous_access_and_timeline_endpoint(gh):
    opts = GitHubOptions(
        repo=REPO, base_url=gh.base_url, token_env="", per_page=100, events_endpoint="timeline"
    )
    result = GitHubSource("tickets", opts, environ={}).pull(None)
    assert result.ok and shape(result.events) == EXPECTED
    assert "Authorization" not in gh.log[0].headers
    assert any(r.path.endswith("/1/timeline") for r in gh.log)


def test_decision_label_replacing_requirement_moves_the_fact(gh):
    gh.add(
        gh_issue(7, "Event sourcing", labels=("decision",), updated_at=T(10)),
        [
            labeled(701, T(1), "requirement"),
            labeled(702, T(2), "decision"),
            labeled(703, T(3), "requirement", unlabel=True),
        ],
    )
    events = [e for e in make(gh).pull(None).events if "#7:" in e.id]
    assert shape(events) == [
        ("github:acme/payments#7:701", "added", T(1), req("Event sourcing", 7), None, None),
        (
            "github:acme/payments#7:702:requirement",
            "invalidated",
            T(2),
            req("Event sourcing", 7),
            None,
            "label 'decision' added",
        ),
        (
            "github:acme/payments#7:702:decision",
            "added",
            T(2),
            Fact(f"{REPO}#7", "decision", "Event sourcing", "decision"),
            None,
            None,
        ),
    ]


def test_ids_are_stable_across_fresh_extractions(gh):
    a = make(gh).pull(None)
    b = make(gh).pull(None)
    assert [e.id for e in a.events] == [e.id for e in b.events]


def test_configurable_labels_done_value_and_area_prefix(gh):
    gh.add(
        gh_issue(8, "Audit log", updated_at=T(10)),
        [
            labeled(801, T(1), "Needs-Spec"),
            labeled(802, T(1), "team:ledger"),
            assigned(803, T(1), "zed"),
            closed(804, T(2), None),
        ],
    )
    source = make(
        gh,
        requirement_labels=["needs-spec"],
        area_label_prefixes=["team:"],
        keep_area_prefix=True,
        done_value="shipped",
    )
    events = [e for e in source.pull(None).events if "#8:" in e.id]
    assert shape(events) == [
        ("github:acme/payments#8:801", "added", T(1), req("Audit log", 8), None, None),
        (
            "github:acme/payments#8:803:owners:team:ledger",
            "added",
            T(1),
            owners("team:ledger", "zed"),
            None,
            None,
        ),
        (
            "github:acme/payments#8:804",
            "revised",
            T(2),
            req("shipped", 8),
            req("Audit log", 8),
            None,
        ),
    ]


def test_two_open_issues_sharing_an_area_own_it_together(gh):
    gh.add(
        gh_issue(10, "Invoices", labels=("area/ledger",), created_at=T(1), updated_at=T(4)),
        [labeled(1001, T(1), "area/ledger"), assigned(1002, T(1, 11), "bob")],
    )
    gh.add(
        gh_issue(11, "Payouts", labels=("area/ledger",), created_at=T(2), updated_at=T(5)),
        [
            labeled(1101, T(2), "area/ledger"),
            assigned(1102, T(2, 11), "frank"),
            assigned(1103, T(3), "frank", unassign=True),
        ],
    )
    source = make(gh)
    first = source.pull(None)
    ledger = [e for e in first.events if e.fact.subject == "ledger"]
    assert shape(ledger) == [
        (
            "github:acme/payments#10:1002:owners:ledger",
            "added",
            T(1, 11),
            owners("ledger", "bob"),
            None,
            None,
        ),
        (
            "github:acme/payments#11:1102:owners:ledger",
            "revised",
            T(2, 11),
            owners("ledger", "bob frank"),
            owners("ledger", "bob"),
            None,
        ),
        # frank unassigned from issue 11 no longer owns the ledger through it
        (
            "github:acme/payments#11:1103:owners:ledger",
            "revised",
            T(3),
            owners("ledger", "bob"),
            owners("ledger", "bob frank"),
            None,
        ),
    ]
    # a later run that reads only issue 11 still knows bob holds the area through issue 10
    gh.issues[11]["updated_at"] = T(12)
    gh.events[11].append(assigned(1104, T(12), "gina"))
    second = source.pull(first.cursor)
    assert shape([e for e in second.events if e.fact.subject == "ledger"]) == [
        (
            "github:acme/payments#11:1104:owners:ledger",
            "revised",
            T(12),
            owners("ledger", "bob gina"),
            owners("ledger", "bob"),
            None,
        ),
    ]


def test_registered_by_kind_and_options_are_validated():
    source = build_source("github", "tickets", {"repo": REPO, "token_env": "GITHUB_TOKEN"})
    assert source.kind == "github" and source.name == "tickets"
    assert source.options.base_url == "https://api.github.com"
    with pytest.raises(ConfigError, match=r"'tickets': field 'repo': String should match"):
        build_source("github", "tickets", {"repo": "not-a-repo"})
    with pytest.raises(ConfigError, match=r"field 'labels_typo': Extra inputs are not permitted"):
        build_source("github", "tickets", {"repo": REPO, "labels_typo": []})
    with pytest.raises(ConfigError, match=r"field 'base_url': must be an http"):
        build_source("github", "tickets", {"repo": REPO, "base_url": "ghe.example.com"})
    ghe = build_source("github", "t", {"repo": REPO, "base_url": "https://ghe.example.com/api/v3/"})
    assert ghe.options.base_url == "https://ghe.example.com/api/v3"


def test_closing_an_areas_last_open_issue_keeps_its_owner_until_another_claim_replaces_it(gh):
    """Issue 21 is alice's work on the ledger; when it closes nobody else claims the ledger,
    and that is no evidence alice stopped owning it. Bob's issue a week later replaces her."""
    gh.issues.clear()
    gh.events.clear()
    gh.add(
        gh_issue(
            21,
            "Ledger rounding",
            state="closed",
            labels=("area/ledger",),
            assignees=("alice",),
            created_at=T(1),
            updated_at=T(5),
            closed_at=T(5),
        ),
        [
            labeled(2101, T(1), "area/ledger"),
            assigned(2102, T(1, 11), "alice"),
            closed(2103, T(5), "completed"),
        ],
    )
    source = make(gh)
    first = source.pull(None)
    assert first.ok, first.error
    assert shape(first.events) == [
        (
            "github:acme/payments#21:2102:owners:ledger",
            "added",
            T(1, 11),
            owners("ledger", "alice"),
            None,
            None,
        ),
    ]
    gh.add(
        gh_issue(
            22,
            "Ledger export",
            labels=("area/ledger",),
            assignees=("bob",),
            created_at=T(12),
            updated_at=T(12, 11),
        ),
        [labeled(2201, T(12), "area/ledger"), assigned(2202, T(12, 11), "bob")],
    )
    second = source.pull(first.cursor)
    assert second.ok, second.error
    assert shape(second.events) == [
        (
            "github:acme/payments#22:2202:owners:ledger",
            "revised",
            T(12, 11),
            owners("ledger", "bob"),
            owners("ledger", "alice"),
            None,
        ),
    ]


def test_unassigning_a_person_from_an_areas_issue_ends_their_ownership_through_it(gh):
    """A second open billing issue assigns bob, then unassigns him: he no longer owns
    billing through it, while alice's issue still holds the area."""
    gh.issues.clear()
    gh.events.clear()
    gh.add(
        gh_issue(30, "Invoices", labels=("area/billing",), assignees=("alice",), updated_at=T(1)),
        [labeled(3001, T(1), "area/billing"), assigned(3002, T(1, 11), "alice")],
    )
    gh.add(
        gh_issue(31, "Refund export", labels=("area/billing",), created_at=T(2), updated_at=T(3)),
        [
            labeled(3101, T(2), "area/billing"),
            assigned(3102, T(2, 11), "bob"),
            assigned(3103, T(3), "bob", unassign=True),
        ],
    )
    # dave holds the ledger through two issues: leaving one, he still holds it
    gh.add(
        gh_issue(32, "Ledger", labels=("area/ledger",), assignees=("dave",), updated_at=T(4)),
        [labeled(3201, T(4), "area/ledger"), assigned(3202, T(4, 11), "dave")],
    )
    gh.add(
        gh_issue(33, "Ledger export", labels=("area/ledger",), updated_at=T(5)),
        [
            labeled(3301, T(4), "area/ledger"),
            assigned(3302, T(4, 12), "dave"),
            assigned(3303, T(5), "dave", unassign=True),
        ],
    )
    result = make(gh).pull(None)
    assert result.ok, result.error
    assert shape(result.events) == [
        ("github:acme/payments#30:3002:owners:billing", "added", T(1, 11),
         owners("billing", "alice"), None, None),
        ("github:acme/payments#31:3102:owners:billing", "revised", T(2, 11),
         owners("billing", "alice bob"), owners("billing", "alice"), None),
        ("github:acme/payments#31:3103:owners:billing", "revised", T(3),
         owners("billing", "alice"), owners("billing", "alice bob"), None),
        ("github:acme/payments#32:3202:owners:ledger", "added", T(4, 11),
         owners("ledger", "dave"), None, None),
    ]  # fmt: skip


def test_removing_an_issues_area_label_ends_the_ownership_it_gave(gh):
    """Carol's search issue loses its area label: the issue no longer speaks for search,
    and nothing else does. Closing an issue, by contrast, ends nothing."""
    gh.issues.clear()
    gh.events.clear()
    gh.add(
        gh_issue(40, "Search ranking", assignees=("carol",), updated_at=T(5)),
        [
            labeled(4001, T(4), "area/search"),
            assigned(4002, T(4, 11), "carol"),
            labeled(4003, T(5), "area/search", unlabel=True),
        ],
    )
    gh.add(
        gh_issue(41, "Ledger", state="closed", labels=("area/ledger",), updated_at=T(6)),
        [
            labeled(4101, T(4), "area/ledger"),
            assigned(4102, T(4, 11), "dave"),
            closed(4103, T(6), "completed"),
        ],
    )
    result = make(gh).pull(None)
    assert result.ok, result.error
    assert shape(result.events) == [
        ("github:acme/payments#40:4002:owners:search", "added", T(4, 11),
         owners("search", "carol"), None, None),
        ("github:acme/payments#41:4102:owners:ledger", "added", T(4, 11),
         owners("ledger", "dave"), None, None),
        ("github:acme/payments#40:4003:owners:search", "invalidated", T(5),
         owners("search", "carol"), None, "label 'area/search' removed from acme/payments#40"),
    ]  # fmt: skip


@pytest.mark.parametrize("where", ["issue updated_at", "event created_at"])
def test_a_date_past_what_utc_holds_is_one_skipped_line_and_the_rest_is_read(gh, where):
    late = "9999-12-31T23:59:59-01:00"  # valid ISO 8601, but the year 10000 in UTC
    if where == "issue updated_at":
        gh.issues[4]["updated_at"] = late
    else:
        gh.events[2][0]["created_at"] = late
    result = make(gh).pull(None)
    assert result.ok, result.error
    assert len(set(result.skipped)) == 1
    assert f"is out of range once converted to UTC: {late!r}" in result.skipped[0]
    assert "github:acme/payments#1:105:owners:billing" in {e.id for e in result.events}


def test_an_issue_updated_in_the_year_9999_does_not_hide_the_issues_updated_after_it(gh):
    gh.issues[4]["updated_at"] = "9999-12-31T23:59:59Z"  # a broken clock's date
    first = make(gh).pull(None)
    assert first.ok
    assert json.loads(first.cursor)["since"] == "2027-01-15T08:00:00Z"  # the pull's own time
    later = "2027-02-01T10:00:00Z"  # reopened after that pull
    gh.issues[1]["updated_at"] = later
    gh.events[1].append(gh_event(108, "reopened", later))
    second = make(gh).pull(first.cursor)
    assert "github:acme/payments#1:108" in {e.id for e in second.events}


def test_an_event_or_a_state_reason_of_the_wrong_type_is_one_skipped_line(gh):
    # a type fuzz of every field found both escaping pull() (a TypeError on an unhashable
    # `event`, an AttributeError on a state_reason that is no string) at every run
    gh.events[2][1]["event"] = ["subscribed"]
    gh.events[3][1]["state_reason"] = 7
    result = make(gh).pull(None)
    assert result.ok, result.error
    assert sorted(set(result.skipped)) == [
        f"{REPO}#2 event #2: field 'event' is missing or not a string",
        f"{REPO}#3 event 302 (closed): field 'state_reason' has the wrong type (int)",
    ]
    ids = {e.id for e in result.events}
    assert "github:acme/payments#2:202" in ids  # issue 2's close is read
    assert "github:acme/payments#3:302" not in ids  # issue 3's unreadable close is not


@pytest.mark.parametrize("event_id", [10**30, 0, -1])
def test_an_event_id_out_of_range_is_one_skipped_line_and_hides_nothing_after_it(gh, event_id):
    # an id of 10^30 became the issue's watermark, and every later event of the issue was
    # taken as read already; GitHub's ids are positive int64s
    first = make(gh).pull(None)
    later = "2027-02-01T10:00:00Z"
    gh.issues[1]["updated_at"] = later
    gh.events[1].append(gh_event(event_id, "closed", later))
    gh.events[1].append(gh_event(109, "reopened", "2027-02-01T11:00:00Z"))
    second = make(gh).pull(first.cursor)
    assert second.ok, second.error
    assert any("field 'id' is not an id between 1 and 2^63-1" in s for s in second.skipped)
    assert "github:acme/payments#1:109" in {e.id for e in second.events}
    gh.events[1].append(gh_event(110, "closed", "2027-02-02T10:00:00Z"))
    gh.issues[1]["updated_at"] = "2027-02-02T10:00:00Z"
    third = make(gh).pull(second.cursor)
    assert "github:acme/payments#1:110" in {e.id for e in third.events}


def test_a_bad_event_on_the_newest_issue_is_one_skipped_line_though_read_twice(gh):
    # the pull's second pass, at the new watermark, reads the newest issue's events again
    gh.events[6][0]["event"] = ["labeled"]
    result = make(gh).pull(None)
    assert result.ok, result.error
    assert result.skipped == [f"{REPO}#6 event #1: field 'event' is missing or not a string"]


def _search_claim(gh: FakeGitHub, number: int, login: str, day: int) -> None:
    gh.add(
        gh_issue(
            number,
            f"Search work {number}",
            labels=("area/search",),
            assignees=(login,),
            created_at=T(day),
            updated_at=T(day, 11),
        ),
        [
            labeled(number * 100 + 1, T(day), "area/search"),
            assigned(number * 100 + 2, T(day, 11), login),
        ],
    )


@pytest.mark.parametrize("leaves", ["transferred", "deleted"])
def test_an_issue_transferred_or_deleted_lapses_its_claim_so_a_newer_one_replaces_it(gh, leaves):
    """Carol's open search issue is transferred to another repository (it leaves this one's
    issue list, and no event here says so); dave's new search issue then owns the area
    alone, as a newer claim replaces one that lapsed."""
    gh.issues.clear()
    gh.events.clear()
    _search_claim(gh, 6, "carol", 2)
    source = make(gh)
    first = source.pull(None)
    assert first.ok, first.error
    assert [(e.type, e.fact) for e in first.events] == [("added", owners("search", "carol"))]

    if leaves == "deleted":  # GET /issues/6 answers 404
        del gh.issues[6], gh.events[6]
    else:  # GET /issues/6 answers (through a 301) from the repository it went to
        gh.issues[6]["repository_url"] = "https://api.github.com/repos/acme/archive"
    quiet = source.pull(first.cursor)
    assert quiet.ok and quiet.events == []  # a lapse is no evidence carol stopped owning it
    assert any(r.args.get("state") == "open" for r in gh.log)

    _search_claim(gh, 7, "dave", 10)
    second = source.pull(quiet.cursor)
    assert second.ok, second.error
    assert shape(second.events) == [
        (
            "github:acme/payments#7:702:owners:search",
            "revised",
            T(10, 11),
            owners("search", "dave"),
            owners("search", "carol"),
            None,
        )
    ]


def test_a_claim_still_open_is_kept_and_the_open_list_is_asked_for_only_while_claims_are_held(gh):
    gh.issues.clear()
    gh.events.clear()
    _search_claim(gh, 6, "carol", 2)
    gh.add(gh_issue(8, "Flaky test", created_at=T(4), updated_at=T(4, 11)), [])
    source = make(gh)
    first = source.pull(None)
    gh.log.clear()
    _search_claim(gh, 7, "dave", 10)  # carol's issue is still open, not read again
    second = source.pull(first.cursor)
    assert [(e.type, e.fact) for e in second.events] == [
        ("revised", owners("search", "carol dave"))
    ]
    states = [r.args.get("state") for r in gh.log if r.path.endswith("/issues")]
    assert states.count("open") == 2  # the open issues (6, 7, 8), two to a page

    gh.issues.clear()  # no claim held by an issue of the first page
    gh.events.clear()
    gh.add(gh_issue(9, "Flaky test", created_at=T(4), updated_at=T(4, 11)), [])
    fresh = make(gh)
    gh.log.clear()
    assert fresh.pull(None).ok
    assert all(r.args.get("state") != "open" for r in gh.log)


def test_a_deleted_account_shown_as_ghost_owns_nothing(gh):
    """GitHub puts the placeholder user "ghost" in every event that named a deleted
    account, and drops the account from the issue's assignees."""
    gh.issues.clear()
    gh.events.clear()
    gh.add(
        gh_issue(12, "Invoices", labels=("area/billing",), created_at=T(1), updated_at=T(3)),
        [labeled(1201, T(1), "area/billing"), assigned(1202, T(2), "ghost")],
    )
    gh.add(
        gh_issue(
            13,
            "Refund audit",
            labels=("area/billing",),
            assignees=("alice",),
            created_at=T(4),
            updated_at=T(6),
        ),
        [
            labeled(1301, T(4), "area/billing"),
            assigned(1302, T(5), "alice"),
            assigned(1303, T(5, 12), "ghost"),
            assigned(1304, T(6), "ghost", unassign=True),
        ],
    )
    result = make(gh).pull(None)
    assert result.ok, result.error
    assert [(e.type, e.fact) for e in result.events] == [("added", owners("billing", "alice"))]


def test_a_deleted_issue_is_one_skipped_line_and_the_rest_is_read(gh):
    gh.fail(
        r"/issues/3/events$",
        times=3,  # deleted for good: every pass of the pull meets it
        status=410,
        body='{"message": "This issue was deleted", "documentation_url": '
        '"https://docs.github.com/rest/issues/events#list-issue-events"}',
    )
    result = make(gh).pull(None)
    assert result.ok, result.error
    assert result.skipped == [
        f"{REPO}#3: GET {gh.base_url}/repos/{REPO}/issues/3/events?per_page=2 returned "
        "HTTP 410: This issue was deleted; not read"
    ]
    assert {e.id.split(":")[1] for e in result.events} == {f"{REPO}#1", f"{REPO}#2", f"{REPO}#6"}


def test_a_close_event_without_a_reason_takes_the_reason_the_issue_gives():
    source = GitHubSource("tickets", GitHubOptions(repo=REPO, token_env=""))
    issue_raw = gh_issue(
        30, "Dark mode", state="closed", state_reason="not_planned", updated_at=T(5)
    )
    events = [
        labeled(3001, T(1), "requirement"),
        gh_event(3002, "closed", T(2)),  # an older close, reopened since: completed
        gh_event(3003, "reopened", T(3)),
        gh_event(3004, "closed", T(4)),  # the close the issue is in now
    ]
    from healthd.sources.github import _Issue

    out, _ = source.replay(_Issue(issue_raw), events, 0, [])
    assert [(e.type, e.fact.value, e.reason) for e in out] == [
        ("added", "Dark mode", None),
        ("revised", "done", None),  # (revisions carry no reason)
        ("revised", "Dark mode", None),
        ("invalidated", "Dark mode", "closed as not planned"),
    ]


def test_an_unchanged_one_page_open_list_is_asked_again_with_its_etag(gh):
    gh.issues.clear()
    gh.events.clear()
    _search_claim(gh, 6, "carol", 2)
    gh.add(gh_issue(8, "Flaky test", created_at=T(4), updated_at=T(4, 11)), [])
    source = make(gh, per_page=100)
    first = source.pull(None)
    second = source.pull(first.cursor)  # carol's claim held, her issue not read: listed
    gh.log.clear()
    third = source.pull(second.cursor)
    assert third.ok and third.events == []
    listed = [r for r in gh.log if r.args.get("state") == "open"]
    assert len(listed) == 1 and listed[0].headers.get("If-None-Match")
    assert json.loads(third.cursor)["open_etag"] == json.loads(second.cursor)["open_etag"]


def test_an_issue_whose_events_fill_one_page_is_read_again_whole_when_it_changes(gh):
    """Events are listed oldest first: a page holding exactly ``per_page`` of them stays as
    it was when the next one comes, which opens a page 2. Its ETag would answer 304 to every
    later run and hide the unassignment below for good; a full page's ETag is not kept."""
    alice_owns_x(gh, "Ledger")  # (two events: a full page at per_page 2)
    source = make(gh)
    first = source.pull(None)
    assert first.ok and [e.fact.value for e in first.events] == ["alice"]
    gh.issues[1].update(updated_at=T(3), assignees=[])
    gh.events[1].append(assigned(103, T(3), "alice", unassign=True))

    second = source.pull(first.cursor)

    assert second.ok, second.error
    assert [(e.type, e.fact.subject, e.reason) for e in second.events] == [
        ("invalidated", "x", "alice unassigned from acme/payments#1")
    ]


@pytest.mark.parametrize(
    ("state", "named"),
    [
        ({"since": "yesterday"}, "field 'since' is not an ISO 8601 timestamp: 'yesterday'"),
        ({"since": 1704067200}, "field 'since' is missing or not a timestamp string"),
        ({"seen": [1, 2]}, "field 'seen' is not an object of ints"),
        ({"seen": {"acme/payments#1": "101"}}, "field 'seen' is not an object of ints"),
        ({"event_page_etags": {"1": 7}}, "field 'event_page_etags' is not an object of strs"),
        ({"list_etag": ["W/1"]}, "field 'list_etag' is not a string"),
        (
            {"pending_claims": [["2024-01-01T00:00:00Z"]]},
            "field 'pending_claims' holds an item that is not a claim",
        ),
    ],
)
def test_a_cursor_with_a_field_of_the_wrong_shape_is_one_line_naming_it(gh, state, named):
    """A state edited by hand, or written by another tool: the pull fails with the line that
    says to reset the state, not a TypeError from deep inside it."""
    cursor = json.dumps({"kind": "github", **state})
    result = make(gh).pull(cursor)
    assert result.events == [] and result.cursor == cursor
    assert result.error == (
        f"github source 'tickets': unreadable cursor ({named}); reset the source's state to "
        "read from scratch"
    )


def test_a_next_page_on_another_host_is_not_followed_and_the_token_stays_home(gh):
    # the server answers on 127.0.0.1; "localhost" is another origin (it reaches the same
    # server here, so a request there would be in the log)
    port = gh.base_url.rsplit(":", 1)[1]
    for elsewhere in (
        f"http://localhost:{port}/elsewhere?page=2",
        # read as 127.0.0.1 by one URL parser, sent to localhost by requests
        f"http://localhost:{port}\\@127.0.0.1:{port}/elsewhere?page=2",
    ):
        gh.fail(
            f"^/repos/{REPO}/issues$",
            status=200,
            body="[]",
            headers={"Link": f'<{elsewhere}>; rel="next"'},
        )
        result = make(gh).pull(None)
        assert not result.ok
        assert (
            f"its next page is on http://localhost:{port}, not http://127.0.0.1:{port}; "
            "not followed"
        ) in result.error
        assert SECRET not in result.error
        assert not any("elsewhere" in path for path in gh.paths())


def test_a_next_link_back_to_a_page_already_read_is_an_error_not_a_loop(gh):
    again = f"{gh.base_url}/repos/{REPO}/issues?page=2"
    gh.fail(
        f"^/repos/{REPO}/issues$",
        status=200,
        body="[]",
        headers={"Link": f'<{again}>; rel="next"'},
        times=1000,
    )
    result = make(gh).pull(None)
    assert not result.ok and "its next page is one already read (a loop)" in result.error
    assert len(gh.log) == 2  # the first page and page 2, once each


def test_a_listing_longer_than_max_pages_is_one_error_naming_the_bound(gh):
    # 6 issues at 2 a page: three pages; issue 1's 7 events: four
    result = make(gh, max_pages=2).pull(None)
    assert not result.ok
    assert "more than max_pages=2 pages in one listing; raise max_pages" in result.error
    result = make(gh, max_pages=3).pull(None)
    assert not result.ok and "issues/1/events" in result.error
    assert make(gh, max_pages=4).pull(None).ok


def test_a_full_page_etag_a_cursor_kept_before_is_not_sent(gh):
    """A cursor written before the events ETag was kept only for a page with room left
    holds the ETag of a full page: sent, it answers 304 when the next event opens page 2.
    Such ETags are not read (the issues at the watermark are read once more)."""
    alice_owns_x(gh, "Ledger")  # (two events: a full page at per_page 2)
    source = make(gh)
    first = source.pull(None)
    state = json.loads(first.cursor)
    assert state["event_page_etags"] == {}  # a full page: no ETag kept
    state["event_etags"] = {"1": page_etag(gh, 1)}  # as the version before kept it
    del state["list_etag"]  # (the issue list is read again, as after any change)
    gh.issues[1].update(updated_at=T(3), assignees=[])
    gh.events[1].append(assigned(103, T(3), "alice", unassign=True))
    second = source.pull(json.dumps(state))
    assert second.ok, second.error
    assert [(e.type, e.fact.subject) for e in second.events] == [("invalidated", "x")]


def page_etag(gh: FakeGitHub, number: int) -> str:
    """The ETag the fake gives issue ``number``'s first page of events now."""
    import requests

    answer = requests.get(
        f"{gh.base_url}/repos/{REPO}/issues/{number}/events", params={"per_page": 2}
    )
    return answer.headers["ETag"]


def test_removing_an_area_label_renamed_since_it_was_put_on_ends_the_ownership_it_gave(gh):
    """GitHub's events name a label as it was named when each was written: area/pay was put
    on #50, renamed area/payments in the repository, then removed, and the unlabeled event
    names area/payments. It is the label put on as area/pay (the one the issue no longer
    carries that no later event names), so carol no longer owns pay through #50; the
    requirement label, removed later by its own name, is not taken for it."""
    gh.issues.clear()
    gh.events.clear()
    gh.add(
        gh_issue(50, "Payouts", assignees=("carol",), created_at=T(1), updated_at=T(4)),
        [
            labeled(5001, T(1), "requirement"),
            labeled(5002, T(1), "area/pay"),
            assigned(5003, T(1, 11), "carol"),
            labeled(5004, T(3), "area/payments", unlabel=True),
            labeled(5005, T(4), "requirement", unlabel=True),
        ],
    )
    result = make(gh).pull(None)
    assert result.ok, result.error
    assert shape(result.events) == [
        ("github:acme/payments#50:5001", "added", T(1), req("Payouts", 50), None, None),
        ("github:acme/payments#50:5003:owners:pay", "added", T(1, 11),
         owners("pay", "carol"), None, None),
        ("github:acme/payments#50:5004:owners:pay", "invalidated", T(3),
         owners("pay", "carol"), None, "label 'area/payments' removed from acme/payments#50"),
        ("github:acme/payments#50:5005", "invalidated", T(4), req("Payouts", 50), None,
         "label 'requirement' removed"),
    ]  # fmt: skip


def test_a_token_read_from_a_file_with_its_line_break_is_sent_without_it(gh):
    source = ticket_source(
        GitHubSource,
        GitHubOptions,
        "tickets",
        dict(repo=REPO, base_url=gh.base_url, token_env="GH_TEST_TOKEN"),
        {"GH_TEST_TOKEN": f"{SECRET}\n"},
    )
    result = source.pull(None)
    assert result.ok, result.error
    assert gh.log[0].headers["Authorization"] == f"Bearer {SECRET}"


def test_a_token_with_a_line_break_inside_is_one_line_naming_its_variable(gh):
    source = ticket_source(
        GitHubSource,
        GitHubOptions,
        "tickets",
        dict(repo=REPO, base_url=gh.base_url, token_env="GH_TEST_TOKEN"),
        {"GH_TEST_TOKEN": f"{SECRET}\nX-Other: 1"},
    )
    result = source.pull(None)
    assert not result.ok and gh.log == []
    assert "GH_TEST_TOKEN (token_env) holds a line break" in result.error
    assert "\n" not in result.error and SECRET not in result.error


def test_a_404_page_not_from_the_api_names_base_url(gh):
    """GitHub's API answers a 404 with its JSON message; a 404 without one came from no
    GitHub API at base_url (a GitHub Enterprise Server given without /api/v3, whose web
    pages answer the API's paths so): the repository and the token are not the suspects."""
    gh.fail(
        r"/repos/acme/payments/issues$",
        status=404,
        body="<html><body>Page not found</body></html>",
        headers={"Content-Type": "text/html"},
    )
    result = make(gh).pull(None)
    assert not result.ok
    assert "returned HTTP 404; no GitHub API answered at base_url" in result.error
    assert "https://<host>/api/v3" in result.error


def test_a_token_variable_holding_only_a_line_break_is_not_called_unset(gh):
    # an empty secret file read into the variable: it is set, so "not set" sent people
    # looking at the wrong thing
    source = ticket_source(
        GitHubSource,
        GitHubOptions,
        "tickets",
        dict(repo=REPO, base_url=gh.base_url, token_env="GH_TEST_TOKEN"),
        {"GH_TEST_TOKEN": "\n"},
    )
    result = source.pull(None)
    assert not result.ok and gh.log == []
    assert "GH_TEST_TOKEN (token_env) is set but holds only whitespace" in result.error


def test_a_second_unlabeled_event_for_a_label_put_on_is_not_taken_for_a_rename(gh):
    """An unlabeled event naming a label the issue's events did put on (here removed
    twice over, as two hands removing it at once leave it) is no renamed label's: area/pay,
    renamed area/payments since and still on #51, stays carol's. ff80253 took any unlabeled
    event naming a label not held for a rename, and ended her ownership."""
    gh.issues.clear()
    gh.events.clear()
    gh.add(
        gh_issue(
            51, "Payout fees", labels=("area/payments",), assignees=("carol",),
            created_at=T(1), updated_at=T(4),
        ),
        [
            labeled(5101, T(1), "area/pay"),
            assigned(5102, T(1, 11), "carol"),
            labeled(5103, T(2), "bug"),
            labeled(5104, T(3), "bug", unlabel=True),
            labeled(5105, T(4), "bug", unlabel=True),
        ],
    )  # fmt: skip
    result = make(gh).pull(None)
    assert result.ok, result.error
    owned = [
        (e.type, e.fact.subject, e.fact.value)
        for e in result.events
        if e.fact.predicate == "owners"
    ]
    assert owned == [("added", "pay", "carol")]
    assert json.loads(result.cursor)["areas"] == {"pay": {"acme/payments#51": "carol"}}


def test_a_label_renamed_only_in_case_is_removed_by_its_new_name(gh):
    gh.issues.clear()
    gh.events.clear()
    gh.add(
        gh_issue(52, "Payout caps", assignees=("carol",), created_at=T(1), updated_at=T(3)),
        [
            labeled(5201, T(1), "Area/Pay"),
            assigned(5202, T(1, 11), "carol"),
            labeled(5203, T(3), "area/pay", unlabel=True),
        ],
    )
    result = make(gh).pull(None)
    assert result.ok, result.error
    owned = [(e.type, e.fact.value) for e in result.events if e.fact.predicate == "owners"]
    assert owned == [("added", "carol"), ("invalidated", "carol")]
    assert json.loads(result.cursor)["areas"] == {}


def test_an_unlabeled_renamed_label_put_on_again_later_is_still_taken_off(gh):
    """area/pay, renamed area/payments, is removed (the event names its new name) and put
    on again later. Only a label put on BEFORE the unlabeled event makes it no renamed
    label's: 3d380b4 counted the later labeled event too, so area/pay was never taken off
    and carol held both areas, the issue carrying only area/payments."""
    gh.issues.clear()
    gh.events.clear()
    gh.add(
        gh_issue(
            53, "Payout holds", labels=("area/payments",), assignees=("carol",),
            created_at=T(1), updated_at=T(4),
        ),
        [
            labeled(5301, T(1), "area/pay"),
            assigned(5302, T(1, 11), "carol"),
            labeled(5303, T(3), "area/payments", unlabel=True),
            labeled(5304, T(4), "area/payments"),
        ],
    )  # fmt: skip
    result = make(gh).pull(None)
    assert result.ok, result.error
    assert json.loads(result.cursor)["areas"] == {"payments": {"acme/payments#53": "carol"}}


@pytest.mark.parametrize(
    ("userinfo", "secret"),
    [("bot:hunter@2wordpass", "2wordpass"), ("me@corp.com:t0kenpass", "t0kenpass")],
)
def test_a_404_page_not_from_the_api_shows_no_part_of_a_password_in_base_url(gh, userinfo, secret):
    """43ae389's message names base_url as configured. A password written into it with an
    '@' of its own (``bot:hunter@2wordpass@host``: the host is after the last '@', and
    requests sends it so) was redacted only up to its first '@', and the rest of it was in
    the error."""
    gh.fail(
        r"/repos/acme/payments/issues$",
        status=404,
        body="<html><body>Page not found</body></html>",
        headers={"Content-Type": "text/html"},
    )
    url = gh.base_url.replace("://", f"://{userinfo}@", 1)
    result = make(gh, base_url=url).pull(None)
    assert not result.ok
    assert "no GitHub API answered at base_url" in result.error
    assert secret not in result.error
