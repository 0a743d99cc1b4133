"""merge_timelines: sources merged by event time, ties by source order, each source's own
order kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from healthd.model import ChangeEvent, Fact
from healthd.sources._merge import merge_timelines

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def ev(eid: str, minutes: int, source: str = "s") -> ChangeEvent:
    return ChangeEvent(
        id=eid,
        type="added",
        timestamp=T0 + timedelta(minutes=minutes),
        source=source,
        fact=Fact("x", "y", eid, "tech"),
    )


def test_orders_by_event_time_across_sources():
    files = [ev("f1", 0, "file"), ev("f2", 30, "file")]
    tickets = [ev("t1", 10, "tickets"), ev("t2", 40, "tickets")]
    assert [e.id for e in merge_timelines(files, tickets)] == ["f1", "t1", "f2", "t2"]


def test_ties_keep_source_order_then_each_source_own_order():
    a = [ev("a1", 5), ev("a2", 5)]
    b = [ev("b1", 5)]
    assert [e.id for e in merge_timelines(b, a)] == ["b1", "a1", "a2"]
    assert [e.id for e in merge_timelines(a, b)] == ["a1", "a2", "b1"]


def test_a_late_event_stays_where_its_source_delivered_it():
    est = timezone(timedelta(hours=-5))
    late = ChangeEvent(
        id="late",
        type="added",
        timestamp=datetime(2024, 1, 1, 0, 30, tzinfo=est),
        source="s",
        fact=Fact("x", "y", "v", "tech"),
    )  # 05:30 UTC
    ordered = merge_timelines([ev("a", 400), late, ev("b", 500)], [ev("t", 450, "tickets")])
    assert [e.id for e in ordered] == ["a", "late", "t", "b"]
    assert merge_timelines() == [] and merge_timelines([], []) == []


@given(st.lists(st.lists(st.integers(0, 20), max_size=8), max_size=4))
def test_sources_in_time_order_give_a_stable_sort_of_the_concatenation(lists):
    inputs = [[ev(f"{i}-{j}", m) for j, m in enumerate(sorted(lst))] for i, lst in enumerate(lists)]
    expected = sorted([e for lst in inputs for e in lst], key=lambda e: e.timestamp)
    assert merge_timelines(*inputs) == expected


@given(st.lists(st.lists(st.integers(0, 20), max_size=8), max_size=4))
def test_every_source_keeps_its_own_order(lists):
    inputs = [[ev(f"{i}-{j}", m) for j, m in enumerate(lst)] for i, lst in enumerate(lists)]
    merged = merge_timelines(*inputs)
    assert sorted(e.id for e in merged) == sorted(e.id for lst in inputs for e in lst)
    for lst in inputs:
        ids = {e.id for e in lst}
        assert [e for e in merged if e.id in ids] == lst


def test_a_duplicate_id_with_different_content_is_an_error_naming_both_events():
    import pytest

    from healthd.errors import SourceError
    from healthd.sources import unique_events

    at = datetime(2024, 1, 1, tzinfo=UTC)
    one = ChangeEvent("x", "added", at, "s", Fact("adr:1", "decision", "Use A", "decision"))
    other = ChangeEvent("x", "added", at, "s", Fact("adr:2", "decision", "Use B", "decision"))
    assert unique_events([one, one], "adr source 'd'") == ([one], 1)
    with pytest.raises(SourceError) as err:
        unique_events([one, other], "adr source 'd'")
    assert "'x'" in str(err.value) and "adr:1" in str(err.value) and "adr:2" in str(err.value)


def test_sources_giving_one_id_give_one_event_and_a_conflict_names_both_sources():
    from healthd.sources._merge import merge_sources

    same = ev("shared", 5, "a")
    one = ChangeEvent("x", "added", T0, "a", Fact("auth", "language", "go", "tech"))
    other = ChangeEvent(
        "x", "added", T0 + timedelta(hours=1), "b", Fact("billing", "language", "java", "tech")
    )
    conflicts: list[str] = []
    merged = merge_sources([("a", [one, same]), ("b", [same, other, ev("b1", 9, "b")])], conflicts)
    assert [e.id for e in merged] == ["x", "shared", "b1"]
    assert merged[0] is one
    assert len(conflicts) == 1
    assert "'x'" in conflicts[0] and "source 'a'" in conflicts[0] and "source 'b'" in conflicts[0]
    assert "auth language='go'" in conflicts[0] and "billing language='java'" in conflicts[0]
    assert conflicts[0].startswith("source 'b'") and conflicts[0].endswith("not taken")


def test_sources_without_a_shared_id_merge_as_merge_timelines_does():
    from healthd.sources._merge import merge_sources

    a, b = [ev("a1", 1, "a"), ev("a2", 7, "a")], [ev("b1", 3, "b")]
    conflicts: list[str] = []
    assert merge_sources([("a", a), ("b", b)], conflicts) == merge_timelines(a, b)
    assert conflicts == []


def test_one_event_two_sources_give_each_under_its_own_name_is_taken_once_unreported():
    """Sources stamp events with their own name (a Jira or GitHub source's ``source`` is
    its configured name): two sources whose queries overlap give one ticket's event under
    one id, each named for itself. That is one event, taken once without a warning; one
    that differs in what it says is still said, naming what differs."""
    from healthd.sources._merge import merge_sources

    conflicts: list[str] = []
    merged = merge_sources([("a", [ev("x", 5, "a")]), ("b", [ev("x", 5, "b")])], conflicts)
    assert [(e.id, e.source) for e in merged] == [("x", "a")] and conflicts == []

    tagged = ChangeEvent("x", "added", T0 + timedelta(minutes=5), "b", Fact("x", "y", "x", "tech"))
    tagged = ChangeEvent(**{**{f: getattr(tagged, f) for f in tagged.__slots__}, "reason": "r"})
    merge_sources([("a", [ev("x", 5, "a")]), ("b", [tagged])], conflicts)
    [said] = conflicts
    assert "other content (reason)" in said
