"""Timeline JSONL: what `healthd timeline` prints and every source produces."""

from __future__ import annotations

import dataclasses
import json

import pytest
from timeline_builders import added, fact, invalidated, revised

from healthd.errors import TimelineError
from healthd.sources import build_source
from healthd.timeline import dumps_event, fitted, loads_timeline, read_timeline

GOOD = {
    "id": "ev-7",
    "type": "revised",
    "timestamp": "2026-02-01T10:00:00Z",
    "source": "file",
    "previous": {
        "subject": "auth-service",
        "predicate": "language",
        "value": "node",
        "domain": "tech",
    },
    "fact": {"subject": "auth-service", "predicate": "language", "value": "go", "domain": "tech"},
    "depends_on": [{"subject": "auth-service", "predicate": "exists"}],
    "metadata": {"pr": "42"},
}


def test_the_design_example_round_trips():
    [event] = loads_timeline(json.dumps(GOOD))
    assert event.previous is not None and event.previous.value == "node"
    assert event.depends_on[0].predicate == "exists"
    assert json.loads(dumps_event(event)) == GOOD


@pytest.mark.parametrize("breaks", ["\u2028", "\u2029", "\x85"])
def test_a_value_holding_a_unicode_line_break_is_read_back_as_written(breaks):
    """JSON lets a string hold U+2028, U+2029 and U+0085 unescaped, and dumps_event writes
    them so: they end no line of a timeline."""
    line = dict(GOOD, fact=dict(GOOD["fact"], value=f"go{breaks}1.22"))
    text = (
        dumps_event(loads_timeline(json.dumps(line))[0]) + "\r\n" + json.dumps(GOOD | {"id": "b"})
    )
    first, second = loads_timeline(text, origin="t.jsonl")
    assert first.fact.value == f"go{breaks}1.22" and second.id == "b"


def test_offsets_are_normalised_to_utc():
    line = dict(GOOD, timestamp="2026-02-01T12:00:00+02:00")
    [event] = loads_timeline(json.dumps(line))
    assert json.loads(dumps_event(event))["timestamp"] == "2026-02-01T10:00:00Z"


@pytest.mark.parametrize(
    "written, read",
    [
        ("2016-12-31T23:59:60Z", "2016-12-31T23:59:59.999999Z"),
        ("2016-12-31T18:59:60.5-05:00", "2016-12-31T23:59:59.999999Z"),
    ],
)
def test_a_leap_second_rfc_3339_allows_is_read_as_the_second_before_it(written, read):
    """RFC 3339 (section 5.6, time-second 00-60) lets a timestamp name a leap second; Python's
    datetime has no second 60, so it is read as the last instant of 23:59:59 it can hold,
    keeping its place between the seconds around it."""
    line = dict(GOOD, timestamp=written)
    [event] = loads_timeline(json.dumps(line))
    assert json.loads(dumps_event(event))["timestamp"] == read


def test_a_leap_second_keeps_its_place_after_every_instant_of_the_second_before_it():
    """23:59:60 comes after all of 23:59:59: read as 23:59:59 (its fraction kept) an event
    at the leap second was put before one at 23:59:59.5, and a merge by time replayed the
    later change first (the earlier value left as the fact's last)."""
    from healthd.timeline import parse_timestamp

    before = parse_timestamp("2016-12-31T23:59:59.5Z")
    for leap in ("2016-12-31T23:59:60Z", "2016-12-31T23:59:60.25Z", "2017-01-01T00:59:60+01:00"):
        assert before < parse_timestamp(leap) < parse_timestamp("2017-01-01T00:00:00Z")


def test_a_second_60_anywhere_but_the_end_of_a_utc_day_is_named_as_such():
    line = dict(GOOD, timestamp="2016-12-31T12:00:60Z")
    with pytest.raises(TimelineError) as info:
        loads_timeline(json.dumps(line), origin="t.jsonl")
    assert str(info.value).startswith("t.jsonl, line 1, field 'timestamp'")
    assert "leap second" in str(info.value) and "23:59:60 UTC" in str(info.value)
    assert "not an ISO 8601" not in str(info.value)


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"type": "deleted"}, "type", "unknown type 'deleted'"),
        ({"timestamp": "2026-02-01T10:00:00"}, "timestamp", "no timezone"),
        ({"timestamp": "yesterday"}, "timestamp", "not an ISO 8601"),
        (
            {"fact": {"subject": "a", "predicate": "b", "value": "c", "domain": "weather"}},
            "fact.domain",
            "unknown domain",
        ),
        ({"fact": {"subject": "a", "predicate": "b", "domain": "tech"}}, "fact.value", "missing"),
        ({"previous": None}, "previous", "required on a revised event"),
        ({"depends_on": [{"subject": "a"}]}, "depends_on[0].predicate", "missing"),
        ({"metadata": {"n": 3}}, "metadata.n", "expected a string"),
        ({"colour": "red"}, None, "unknown field(s) ['colour']"),
    ],
)
def test_a_bad_line_names_its_line_and_field(change, field, words):
    bad = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    text = json.dumps(GOOD | {"id": "ok"}) + "\n\n" + json.dumps(bad) + "\n"
    with pytest.raises(TimelineError) as info:
        loads_timeline(text, origin="t.jsonl")
    assert info.value.line == 3
    assert info.value.field == field
    assert words in str(info.value)
    assert str(info.value).startswith("t.jsonl, line 3")


@pytest.mark.parametrize(
    "change, field",
    [
        ({"fact": dict(GOOD["fact"], value=" ")}, "fact.value"),
        ({"fact": dict(GOOD["fact"], value=["go"])}, "fact.value"),
        ({"previous": dict(GOOD["previous"], colour="red")}, "previous"),
        ({"depends_on": [{"subject": "auth-service", "predicate": 1}]}, "depends_on[0].predicate"),
        (
            {"depends_on": [{"subject": "auth-service", "predicate": ["exists"]}]},
            "depends_on[0].predicate",
        ),
        (
            {"depends_on": [{"subject": "auth-service", "predicate": "exists", "x": ""}]},
            "depends_on[0]",
        ),
        ({"depends_on": [["auth-service", "exists"]]}, "depends_on[0]"),
        ({"fact": dict(GOOD["fact"], value="caf\udce9")}, "fact.value"),
    ],
)
def test_a_fact_or_dependency_read_before_is_checked_again_once_changed(change, field):
    """The first reading keeps each fact and dependency list it checked: a line that repeats
    them reads as the first did, and one that changes them is checked as any other."""
    text = json.dumps(GOOD) + "\n" + json.dumps(GOOD | {"id": "again"}) + "\n"
    first, again = loads_timeline(text)
    assert again == dataclasses.replace(first, id="again")
    bad = json.dumps(GOOD | {"id": "bad"} | change)
    with pytest.raises(TimelineError) as info:
        loads_timeline(text + bad)
    assert (info.value.line, info.value.field) == (3, field)


def test_invalid_json_and_duplicate_ids_are_errors_not_skips():
    with pytest.raises(TimelineError, match="line 2: invalid JSON"):
        loads_timeline(json.dumps(GOOD) + "\n{not json\n")
    with pytest.raises(TimelineError, match=r"duplicate id 'ev-7' \(first on line 1\)"):
        loads_timeline(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n")


def test_lines_already_checked_can_be_read_again_without_keeping_every_id():
    from healthd.timeline import iter_timeline

    lines = [json.dumps(GOOD), json.dumps(GOOD)]
    with pytest.raises(TimelineError, match="duplicate id"):
        list(iter_timeline(lines))
    assert [e.id for e in iter_timeline(lines, unique_ids=False)] == ["ev-7", "ev-7"]


def test_previous_is_refused_on_other_types():
    line = dict(GOOD, type="added")
    with pytest.raises(TimelineError, match="only a revised event has a previous"):
        loads_timeline(json.dumps(line))


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(TimelineError, match="cannot read timeline"):
        read_timeline(str(tmp_path / "nope.jsonl"))


def test_the_file_source_reads_only_what_was_appended(tmp_path):
    path = tmp_path / "t.jsonl"
    node, go = fact("auth", "language", "node"), fact("auth", "language", "go")
    path.write_text(dumps_event(added("e1", 0, node)) + "\n")
    source = build_source("file", "timeline", {"path": str(path)})
    first = source.pull(None)
    assert [e.id for e in first.events] == ["e1"]
    assert source.pull(first.cursor).events == []
    with path.open("a") as handle:
        handle.write(dumps_event(revised("e2", 1, node, go)) + "\n")
        handle.write(dumps_event(invalidated("e3", 2, go))[:20])  # still being written
    second = source.pull(first.cursor)
    assert [e.id for e in second.events] == ["e2"]
    with path.open("a") as handle:
        handle.write(dumps_event(invalidated("e3", 2, go))[20:] + "\n")
    assert [e.id for e in source.pull(second.cursor).events] == ["e3"]


def test_the_file_source_rereads_a_rewritten_file_and_reports_bad_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    node = fact("auth", "language", "node")
    path.write_text(dumps_event(added("e1", 0, node)) + "\n")
    source = build_source("file", "timeline", {"path": str(path)})
    cursor = source.pull(None).cursor
    path.write_text(dumps_event(added("x1", 0, node)) + "\n")
    again = source.pull(cursor)
    assert [e.id for e in again.events] == ["x1"] and again.skipped
    path.write_text(dumps_event(added("x1", 0, node)) + "\n{broken\n")
    refused = source.pull(again.cursor)
    assert refused.error is None and refused.events == []
    assert refused.skipped == [f"line refused: {path}, line 2: invalid JSON: {_bad_json_reason()}"]
    with path.open("a") as handle:  # the lines after a bad one are read: it does not wedge
        handle.write(dumps_event(added("x2", 1, node)) + "\n")
    assert [e.id for e in source.pull(refused.cursor).events] == ["x2"]


def _bad_json_reason() -> str:
    import json

    try:
        json.loads("{broken")
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at column {exc.colno}"
    raise AssertionError("'{broken' parsed")


def _timeline_text(n: int) -> str:
    lines = []
    for i in range(n):
        event = dict(GOOD, id=f"ev-{i}", timestamp=f"2026-02-01T10:{i // 60:02d}:{i % 60:02d}Z")
        lines.append(json.dumps(event))
    return "\n".join(lines) + "\n"


def test_a_timeline_copy_replays_what_its_first_reading_checked(tmp_path):
    """The first reading checks the file and keeps a copy; every later one gives the same
    events from the copy, even after the file was rewritten or removed."""
    import tempfile

    from healthd.timeline import TimelineCopy

    path = tmp_path / "t.jsonl"
    path.write_text(_timeline_text(5), encoding="utf-8")
    with tempfile.TemporaryFile("w+b") as copy:
        timeline = TimelineCopy(str(path), copy)
        first = list(timeline.read())
        assert first == read_timeline(str(path)) and len(timeline) == 5
        path.write_text(_timeline_text(2), encoding="utf-8")
        assert list(timeline) == first
        path.unlink()
        assert list(timeline) == first


def test_a_timeline_copy_gives_each_shared_name_and_value_as_one_object(tmp_path):
    """Names, values, reasons and dependencies repeat over a long history: read back from
    the copy, each is the one object the first reading kept (as truth and the memories
    keep them, one copy each), not a copy per event."""
    import tempfile

    from healthd.timeline import TimelineCopy

    path = tmp_path / "t.jsonl"
    path.write_text(_timeline_text(600), encoding="utf-8")  # over two blocks of the copy
    with tempfile.TemporaryFile("w+b") as copy:
        timeline = TimelineCopy(str(path), copy)
        first = list(timeline.read())
        for a, b in zip(first, timeline, strict=True):
            for fa, fb in ((a.fact, b.fact), (a.previous, b.previous)):
                if fa is not None:
                    assert fb.subject is fa.subject and fb.predicate is fa.predicate
                    assert fb.value is fa.value and fb.domain is fa.domain
            assert b.reason is a.reason or b.reason == a.reason is None
            assert b.depends_on == a.depends_on
            assert all(
                x.subject is y.subject for x, y in zip(a.depends_on, b.depends_on, strict=True)
            )


def test_a_timeline_copy_is_replayed_in_two_reads_a_block_not_one_a_value(tmp_path):
    """A replay reads the copy a block of events at a time (marshal reading a file object
    calls its read for every value: ten times the CPU of loading the block from bytes)."""
    import io
    import tempfile

    from healthd.timeline import _COPY_BLOCK, TimelineCopy

    class Counting(io.BufferedRandom):
        reads = 0

        def read(self, size=-1):
            Counting.reads += 1
            return super().read(size)

        def readinto(self, buffer):
            Counting.reads += 1
            return super().readinto(buffer)

    path = tmp_path / "t.jsonl"
    events = 2 * _COPY_BLOCK + 3
    path.write_text(_timeline_text(events), encoding="utf-8")
    with tempfile.TemporaryFile("w+b", buffering=0) as raw:
        copy = Counting(raw)
        timeline = TimelineCopy(str(path), copy)
        first = list(timeline.read())
        Counting.reads = 0
        assert list(timeline) == first and len(first) == events
        assert Counting.reads <= 2 * 3


def test_a_timeline_copy_refuses_a_bad_line_on_its_first_reading(tmp_path):
    import tempfile

    from healthd.timeline import TimelineCopy

    path = tmp_path / "t.jsonl"
    path.write_text(_timeline_text(3) + '{"id": "late"}\n', encoding="utf-8")
    with tempfile.TemporaryFile("w+b") as copy:
        timeline = TimelineCopy(str(path), copy)
        with pytest.raises(TimelineError, match=r"line 4.*type"):
            list(timeline.read())
        with pytest.raises(RuntimeError):
            list(timeline)


def test_repeated_names_and_dependencies_are_kept_once_across_lines():
    """What truth and the memories keep from each event (subjects, values, domains,
    dependencies) is one object per distinct value, not one per line."""
    first, second = loads_timeline(
        json.dumps(GOOD) + "\n" + json.dumps(dict(GOOD, id="ev-8", reason="again"))
    )
    assert first.fact.subject is second.fact.subject
    assert first.fact.value is second.fact.value
    assert first.previous is not None and second.previous is not None
    assert first.previous.value is second.previous.value
    assert first.fact.domain is second.fact.domain
    assert first.depends_on is second.depends_on


# What a source gives passes the daemon's door (and `timeline --config`'s) only as a line
# the reader takes back: a daemon stores each event and reads it again to replay.


def test_an_event_over_a_line_is_cut_the_same_way_each_time_and_read_back():
    long = "Use Postgres " * 100_000
    first = added("e1", 1, fact("adr:1", "decision", long, "decision"), deps=[("svc", "exists")])
    again = revised(
        "e2",
        2,
        fact("adr:1", "decision", long, "decision"),
        fact("adr:1", "decision", "Use Go", "decision"),
    )
    cut, said = fitted(first)
    assert cut is not None and said is not None and "a text of 1,300,000 characters" in said
    [read] = loads_timeline(dumps_event(cut))
    assert read == cut and len(read.fact.value) < 17_000
    assert fitted(again)[0].previous == cut.fact  # type: ignore[union-attr]
    assert fitted(added("e3", 1, fact("adr:2", "decision", "Use Go", "decision"))) == (
        added("e3", 1, fact("adr:2", "decision", "Use Go", "decision")),
        None,
    )


@pytest.mark.parametrize(
    ("event", "field"),
    [
        (added("e1", 1, fact("adr:1", "decision", " ")), "fact.value"),
        (added("e1", 1, fact("", "decision", "x")), "fact.subject"),
        (added("e1", 1, fact("svc", "owner", "x"), deps=[("svc", "")]), "depends_on[0].predicate"),
        (revised("e1", 1, fact("svc", "", "a"), fact("svc", "owner", "b")), "previous.predicate"),
    ],
)
def test_an_event_with_a_field_the_reader_refuses_as_empty_is_refused_in_one_line(event, field):
    with pytest.raises(TimelineError):
        loads_timeline(dumps_event(event))
    assert fitted(event) == (None, f"event 'e1' refused: {field} is empty")
