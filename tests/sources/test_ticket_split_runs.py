"""Ticket sources over runs split in time: the area claims a cursor keeps end where a pull
of the whole history at once ends, whatever a listing missed or a query let go."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from _ticket_payloads import (  # noqa: F401
    _module_server,
    api_server,
    assigned,
    closed,
    gh_event,
    gh_issue,
    jira_history,
    jira_issue,
    jira_item,
    labeled,
    run_all,
)
from test_github_source import REPO, T, _search_claim, alice_owns_x, gh, make  # noqa: F401
from test_jira_source import T as JT
from test_jira_source import _billing, jira  # noqa: F401
from test_jira_source import make as make_jira
from werkzeug import Response


def test_an_issue_a_paged_open_list_misses_keeps_its_claim_as_a_pull_at_once_does(gh):  # noqa: F811
    """Issue 1 closes between two pages of the open list, so page 2 starts one issue late
    and #6 (carol, open) is not in it: asked for itself, #6 is still here and keeps its
    claim, and the runs split end where a pull at once does."""
    gh.issues.clear()
    gh.events.clear()
    # open issues 1..3, per_page=2; the fake sorts open list by updated asc
    gh.add(gh_issue(1, "a", created_at=T(1), updated_at=T(1, 11)), [])
    gh.add(gh_issue(8, "b", created_at=T(1), updated_at=T(1, 12)), [])  # page 1
    _search_claim(gh, 6, "carol", 2)  # updated T(2,11): page 2 first item
    _search_claim(gh, 9, "erin", 4)  # page 2
    source = make(gh)
    first = source.pull(None)
    # issue 1 is closed between page 1 and page 2 of the next open listing
    orig = gh.route

    def route(request):
        resp = orig(request)
        if request.args.get("state") == "open" and request.args.get("page") in (None, "1"):
            gh.issues[1]["state"] = "closed"
        return resp

    gh.route = route
    second = source.pull(first.cursor)
    gh.route = orig
    gh.issues[6]["updated_at"] = T(15)
    gh.events[6].append(
        gh_event(699, "renamed", T(15), rename={"from": "Search work 6", "to": "Search v2"})
    )
    gh.issues[6]["title"] = "Search v2"
    mid = source.pull(second.cursor)
    second = mid
    _search_claim(gh, 12, "dave", 20)
    third = source.pull(second.cursor)
    c3 = json.loads(third.cursor)
    fresh = make(gh).pull(None)
    assert c3["areas"] == json.loads(fresh.cursor)["areas"]


def test_a_passing_404_on_an_issues_events_is_read_again_next_run(gh):  # noqa: F811
    """A 404 that does not last: the next run reads the issue, nothing is lost."""
    gh.fail(r"/issues/3/events$", status=404, body='{"message": "Not Found"}', times=1)
    source = make(gh)
    first = source.pull(None)
    second = source.pull(first.cursor)
    got = {e.id for e in first.events + second.events}
    want = {e.id for e in make(gh).pull(None).events}
    assert want <= got


def owners(res):
    return [(e.type, e.fact.value) for e in res.events if e.fact.predicate == "owners"]


def test_an_issue_that_leaves_the_query_and_comes_back_claims_again(jira):  # noqa: F811
    """PAY-7 (alice, Billing) leaves the query (its label removed), which lapses her claim,
    then comes back unchanged: read again, it claims again, so bob's later claim joins
    hers as in a pull at once."""
    jira.issues.clear()
    jira.add(_billing("PAY-7", "alice", 2, labels=("team-a",)))
    source = make_jira(jira)
    first = source.pull(None)
    jira.issues.pop("PAY-7")  # label removed: out of the query
    second = source.pull(first.cursor)
    # label back (a labels history, no claim change), PAY-7 back in the query
    back = _billing(
        "PAY-7",
        "alice",
        2,
        labels=("team-a",),
        extra_histories=[
            jira_history(701, JT(20), jira_item("labels", None, "", None, "")),
            jira_history(702, JT(21), jira_item("labels", None, "", None, "team-a")),
        ],
        updated=JT(21),
    )
    jira.add(back)
    third = source.pull(second.cursor)
    jira.add(_billing("PAY-9", "bob", 25, labels=("team-a",)))
    fourth = source.pull(third.cursor)
    # at once: both issues open, assigned, in the query
    fresh = make_jira(jira).pull(None)
    assert json.loads(fourth.cursor)["areas"] == json.loads(fresh.cursor)["areas"]


def test_an_issue_the_paged_keys_list_misses_keeps_its_claim(jira):  # noqa: F811
    """The unresolved keys come two to a page, newest first: PAY-8, PAY-5 | PAY-7, PAY-1.
    PAY-8 is resolved between the pages, so the second starts one issue late and PAY-7
    (alice, open, in the query) is not in it: asked for itself, it keeps its claim."""
    jira.issues.clear()
    jira.add(jira_issue("PAY-1", "Old", created=JT(1), updated=JT(1, 11)))
    jira.add(_billing("PAY-7", "alice", 3, labels=("team-a",)))
    jira.add(jira_issue("PAY-5", "Mid", created=JT(4), updated=JT(4, 11)))
    jira.add(jira_issue("PAY-8", "New", created=JT(10), updated=JT(10, 11)))
    source = make_jira(jira)
    first = source.pull(None)
    original = jira.route

    def route(request):
        answer = original(request)
        if request.args.get("fields") == "resolution" and request.args.get("startAt") == "0":
            jira.issues["PAY-8"]["fields"]["resolution"] = {"id": "1", "name": "Done"}
        return answer

    jira.route = route
    second = source.pull(first.cursor)
    jira.route = original
    assert second.ok, second.error
    assert "PAY-7" in json.loads(second.cursor)["areas"]["Billing"]


def test_a_claim_put_back_after_its_issue_was_gone_has_an_id_of_its_own(gh):  # noqa: F811
    """#1 (alice, area x) answers 404 for a run, so its claim lapses and #3 claims x for
    bob; then #1 is back. Putting alice back is a change of its own: its id is not that of
    #1's first claim (which the daemon, having stored it, would drop unsaid)."""
    alice_owns_x(gh)
    gh.add(gh_issue(2, "two", updated_at=T(1)), [])
    source = make(gh, per_page=100)
    first = source.pull(None)
    issue, events = gh.issues.pop(1), gh.events.pop(1)  # transferred away, for a while
    gh.issues[2]["updated_at"] = T(2)
    _search_claim(gh, 3, "bob", 2)
    gh.issues[3]["labels"] = [{"name": "area/x"}]
    gh.events[3][0]["label"] = {"name": "area/x"}
    second = source.pull(first.cursor)
    gh.add({**issue, "updated_at": T(3)}, events)  # and back
    third = source.pull(second.cursor)

    runs = [first, second, third]
    assert all(run.ok for run in runs)
    said = [
        (e.id, e.type, e.fact.value)
        for run in runs
        for e in run.events
        if e.fact.predicate == "owners"
    ]
    assert [(kind, value) for _, kind, value in said] == [
        ("added", "alice"),
        ("revised", "bob"),  # alice's claim lapsed with her issue: bob's replaces it
        ("revised", "alice bob"),  # and hers is back
    ]
    assert len({event_id for event_id, _, _ in said}) == len(said)
    assert said[-1][0] == "github:acme/payments#1:102:read:1704276000:owners:x"


def _fail_once(fake, matches):
    """The fake answers 500 the first time a request ``matches``, then as before."""
    original, failed = fake.route, []

    def route(request):
        if not failed and matches(request):
            failed.append(request)
            return Response('{"message": "boom"}', status=500, content_type="application/json")
        return original(request)

    fake.route = route
    return failed


def _owners_after(source, cursor, failing):
    """Pulls from ``cursor`` until one passes (the first fails when ``failing``): the
    ownership events they give, and the areas, lapses and pending claims they leave."""
    events, cursor, results = run_all(source.pull, cursor)
    assert [r.ok for r in results] == ([False, True] if failing else [True])
    said = [(e.type, e.fact.value) for e in events if e.fact.predicate == "owners"]
    state = json.loads(cursor)
    return said, state["areas"], state["lapsed_areas"], "pending_claims" in state


def _github_close_then_claim(fake):
    """#1 (alice, area x) closes on day 5, so her claim lapses; #2 claims x for bob on day
    10, which replaces it."""
    fake.issues[1].update(state="closed", state_reason="completed", updated_at=T(5))
    fake.events[1].append(closed(103, T(5)))
    fake.add(
        gh_issue(
            2, "two", labels=("area/x",), assignees=("bob",), created_at=T(10), updated_at=T(10)
        ),
        [labeled(201, T(10), "area/x"), assigned(202, T(10), "bob")],
    )


def test_a_pull_failing_before_the_older_issues_folds_their_claims_in_time_order(gh):  # noqa: F811
    """Issues are listed newest first: a pull failing on page 2 has read bob's day-10 claim
    and not the day-5 close of alice's issue. Folded then and the close later, alice's
    lapse came after bob's claim and stayed: 'alice bob' for good, where a pull that did
    not fail says 'bob'. The failed pull keeps its claims for the next one."""
    outcomes = {}
    for failing in (False, True):
        alice_owns_x(gh)
        source = make(gh, per_page=1, max_retries=0)
        first = source.pull(None)
        _github_close_then_claim(gh)
        original = gh.route
        if failing:
            _fail_once(gh, lambda r: r.path.endswith("/issues") and r.args.get("page") == "2")
        outcomes[failing] = _owners_after(source, first.cursor, failing)
        gh.route = original
    assert (
        outcomes[True]
        == outcomes[False]
        == (
            [("revised", "bob")],
            {"x": {f"{REPO}#2": "bob"}},
            {},
            False,
        )
    )


def test_a_jira_pull_failing_before_the_older_issues_folds_their_claims_in_time_order(jira):  # noqa: F811
    outcomes = {}
    for failing in (False, True):
        jira.issues.clear()
        jira.add(_billing("PAY-1", "alice", 1))
        source = make_jira(jira, page_size=1, max_retries=0)
        first = source.pull(None)
        jira.issues["PAY-1"] = _billing(
            "PAY-1",
            "alice",
            1,
            extra_histories=[
                jira_history(
                    111,
                    JT(5),
                    jira_item("resolution", None, None, "1", "Done"),
                    jira_item("status", "1", "To Do", "3", "Done"),
                )
            ],
            updated=JT(5),
        )
        jira.issues["PAY-1"]["fields"].update(
            status={"name": "Done", "statusCategory": {"key": "done"}},
            resolution={"id": "1", "name": "Done"},
        )
        jira.add(_billing("PAY-2", "bob", 10))
        original = jira.route
        if failing:
            _fail_once(jira, lambda r: r.path.endswith("/search") and r.args.get("startAt") == "1")
        outcomes[failing] = _owners_after(source, first.cursor, failing)
        jira.route = original
    assert (
        outcomes[True]
        == outcomes[False]
        == (
            [("revised", "bob")],
            {"Billing": {"PAY-2": "bob"}},
            {},
            False,
        )
    )


def test_an_issue_leaving_the_listing_between_two_pages_hides_no_other(gh):  # noqa: F811
    """Newest first, one a page: #3, #2, #1. #3 is transferred away once page 1 is served,
    so page 2 starts at #1 and #2 is on no page read; past the new watermark no later run
    lists it. The window is listed again and #2 is read."""
    gh.issues.clear()
    gh.events.clear()
    for number in (1, 2, 3):
        gh.add(
            gh_issue(number, f"req {number}", labels=("requirement",), updated_at=T(number)),
            [labeled(number * 100 + 1, T(number), "requirement")],
        )
    original = gh.route

    def route(request):
        answer = original(request)
        if request.path.endswith("/issues") and request.args.get("page") is None:
            gh.issues.pop(3, None)  # transferred once the first page is served
        return answer

    gh.route = route
    source = make(gh, per_page=1)
    first = source.pull(None)
    gh.route = original
    later = source.pull(first.cursor)
    assert first.ok and later.ok
    read = {e.fact.subject for e in first.events + later.events}
    assert read == {f"{REPO}#1", f"{REPO}#2", f"{REPO}#3"}


@pytest.mark.parametrize("page_size", [1, 2])
def test_a_jira_issue_leaving_the_results_between_two_pages_hides_no_other(jira, page_size):  # noqa: F811
    """Newest first by `startAt`: PAY-3, PAY-2, PAY-1. PAY-3 is deleted once the first page
    is served, so every later issue moves up a place: one a page, `startAt=1` gives PAY-1
    and PAY-2 is on no page; two a page, `startAt=2` is empty and PAY-1 is on none. The
    total fell by one: the next page starts a place back, and the same pull reads it."""
    jira.issues.clear()
    for number, day in ((1, 1), (2, 5), (3, 9)):
        jira.add(jira_issue(f"PAY-{number}", f"req {number}", created=JT(day), updated=JT(day)))
    original = jira.route

    def route(request):
        answer = original(request)
        if request.path.endswith("/search") and request.args.get("startAt") == "0":
            jira.issues.pop("PAY-3", None)  # deleted once the first page is served
        return answer

    jira.route = route
    first = make_jira(jira, page_size=page_size).pull(None)
    jira.route = original
    assert first.ok
    assert {e.fact.subject for e in first.events} == {"PAY-1", "PAY-2", "PAY-3"}
    assert len({e.id for e in first.events}) == len(first.events)


def _failing_again_and_again(fake, source, cursor, fails) -> str:
    """Four pulls each failing where ``fails`` says: each keeps the failed pull's claims in
    its cursor once (the count stays), and a pull that does not fail folds them all."""
    original = fake.route

    def route(request):
        if fails(request):
            return Response('{"message": "boom", "errorMessages": ["boom"]}', status=500)
        return original(request)

    fake.route = route
    counts = []
    for _ in range(4):
        result = source.pull(cursor)
        assert not result.ok
        cursor = result.cursor
        counts.append(len(json.loads(cursor).get("pending_claims", [])))
    fake.route = original
    assert counts[0] >= 1 and counts == counts[:1] * 4
    final = source.pull(cursor)
    assert final.ok and "pending_claims" not in json.loads(final.cursor)
    return final.cursor


def test_pulls_failing_again_and_again_keep_each_pending_claim_once(jira):  # noqa: F811
    """A pull failing on the same page every run reads the same newest issues every run:
    their claims wait in the cursor once, not once a run (it grew by a claim a run)."""
    jira.issues.clear()
    jira.add(_billing("PAY-1", "alice", 1))
    source = make_jira(jira, page_size=1, max_retries=0)
    cursor = source.pull(None).cursor
    jira.add(_billing("PAY-2", "bob", 10))
    final = _failing_again_and_again(
        jira,
        source,
        cursor,
        lambda r: r.path.endswith("/search") and r.args.get("startAt") == "1",
    )
    assert json.loads(final)["areas"] == {"Billing": {"PAY-1": "alice", "PAY-2": "bob"}}


def test_github_pulls_failing_again_and_again_keep_each_pending_claim_once(gh):  # noqa: F811
    alice_owns_x(gh)
    source = make(gh, per_page=1, max_retries=0)
    cursor = source.pull(None).cursor
    gh.add(
        gh_issue(
            2, "two", labels=("area/x",), assignees=("bob",), created_at=T(10), updated_at=T(10)
        ),
        [labeled(201, T(10), "area/x"), assigned(202, T(10), "bob")],
    )
    _failing_again_and_again(
        gh, source, cursor, lambda r: r.path.endswith("/issues") and r.args.get("page") == "2"
    )


def test_a_jira_listing_that_keeps_shrinking_still_moves_forward(jira):  # noqa: F811
    """A bulk job resolving an issue while each page is served (an unresolved-only query):
    every page sees the total fall. The places it skipped are asked for once and the
    listing goes on (stepping back a place a page re-read the first pages hundreds of
    times); every issue still in the results is read."""
    jira.issues.clear()
    for n in range(1, 61):
        jira.add(
            jira_issue(
                f"PAY-{n}",
                f"req {n}",
                created=JT(1),
                updated=f"2024-01-{1 + n // 3:02d}T10:00:00.000+0000",
            )
        )
    original, searches, resolved = jira.route, [], []

    def route(request):
        answer = original(request)
        if request.path.endswith("/search"):
            searches.append(request.args.get("startAt"))
            newest = max(jira.issues, key=lambda k: int(k.split("-")[1]))
            resolved.append(jira.issues.pop(newest))  # resolved: out of the results
        return answer

    jira.route = route
    source = make_jira(jira, page_size=10)
    result = source.pull(None)
    jira.route = original
    assert result.ok, result.error
    assert len(searches) <= 2 * 6, searches
    # what moved under it is read by the next pull, which reads the window again
    later = source.pull(result.cursor)
    assert set(jira.issues) <= {e.fact.subject for e in result.events + later.events}


def test_a_jira_gap_page_cut_by_the_servers_cap_keeps_the_watermark(jira):  # noqa: F811
    """The server caps maxResults at 10 (Jira Cloud at 100, Data Center at 1,000) and a
    bulk job resolves the 15 newest issues after page 2: the page asked for the 15 places
    skipped gives 10. The pull keeps its watermark, and the next one reads the other five
    (they were never read, and the watermark went past them)."""
    jira.issues.clear()
    for n in range(1, 61):  # a day apart: the next pull's day of overlap reaches no other
        day = (datetime(2024, 1, 1) + timedelta(days=n)).strftime("%Y-%m-%dT10:00:00.000+0000")
        jira.add(jira_issue(f"PAY-{n}", f"req {n}", created=JT(1), updated=day))
    original, searches = jira.route, []

    def route(request):
        if not request.path.endswith("/search"):
            return original(request)
        args = request.args.copy()
        args["maxResults"] = str(min(10, int(args.get("maxResults", 50))))
        request.args = args
        answer = original(request)
        searches.append(request.args.get("startAt"))
        if len(searches) == 2:
            newest = sorted(jira.issues, key=lambda k: jira.issues[k]["fields"]["updated"])[-15:]
            for key in newest:
                jira.issues.pop(key)
        return answer

    jira.route = route
    source = make_jira(jira, page_size=10)
    first = source.pull(None)
    jira.route = original
    later = source.pull(first.cursor)
    assert first.ok and later.ok
    assert set(jira.issues) <= {e.fact.subject for e in first.events + later.events}
