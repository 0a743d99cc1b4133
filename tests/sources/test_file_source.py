"""The `file` source: a timeline file read as it grows, and rewritten (issue 10, point 4)."""

from __future__ import annotations

import json

import pytest

from healthd.sources import build_source, pull_from_start


def line(ident: str, value: str, day: int = 1) -> str:
    return json.dumps(
        {
            "id": ident,
            "type": "added",
            "timestamp": f"2024-01-{day:02d}T00:00:00Z",
            "source": "file",
            "fact": {
                "subject": "billing",
                "predicate": "language",
                "value": value,
                "domain": "tech",
            },
        }
    )


def test_a_rewritten_file_is_read_again_from_the_top_with_each_event_s_line(tmp_path):
    path = tmp_path / "timeline.jsonl"
    path.write_text(line("ev-1", "go") + "\n" + line("ev-2", "rust", 2) + "\n")
    source = build_source("file", "tl", {"path": str(path)})
    first = source.pull(None)
    assert [e.id for e in first.events] == ["ev-1", "ev-2"]

    path.write_text(
        line("ev-1", "go") + "\n\n" + line("ev-2", "zig", 2) + "\n" + line("ev-3", "c", 3) + "\n"
    )
    second = source.pull(first.cursor)

    assert second.error is None
    # the daemon, which keeps what it took, sorts out what it had (tests/daemon)
    assert [e.id for e in second.events] == ["ev-1", "ev-2", "ev-3"]
    assert any("read again from the top" in note for note in second.skipped)
    assert second.places == {
        "ev-1": f"{path} line 1",
        "ev-2": f"{path} line 3",
        "ev-3": f"{path} line 4",
    }
    assert source.pull(second.cursor).events == []


def test_the_cursor_does_not_grow_with_the_file(tmp_path):
    path = tmp_path / "timeline.jsonl"
    source = build_source("file", "tl", {"path": str(path)})
    path.write_text(line("ev-0", "go") + "\n")
    cursor = source.pull(None).cursor
    small = len(cursor)
    with path.open("a") as handle:
        handle.writelines(line(f"ev-{n}", f"v{n}", 1 + n % 28) + "\n" for n in range(1, 3000))
    result = source.pull(cursor)
    assert len(result.events) == 2999
    assert len(result.cursor) <= small + 10  # offset and line number grew a few digits


def test_a_change_at_either_edge_of_what_was_read_is_a_rewrite(tmp_path):
    path = tmp_path / "timeline.jsonl"
    lines = [line(f"ev-{n}", f"v{n}", 1 + n % 28) for n in range(200)]  # well over 2 x 4 KiB
    path.write_text("\n".join(lines) + "\n")
    source = build_source("file", "tl", {"path": str(path)})
    cursor = source.pull(None).cursor
    for changed in (0, 199):  # the first line, then the last line read
        edited = list(lines)
        edited[changed] = line(f"ev-{changed}", "changed", 1)
        path.write_text("\n".join(edited) + "\n")
        again = source.pull(cursor)
        assert len(again.events) == 200, changed
        assert any("read again from the top" in note for note in again.skipped)
        path.write_text("\n".join(lines) + "\n")
        cursor = source.pull(None).cursor


def test_a_cursor_from_before_the_bounded_check_resumes_where_it_was(tmp_path):
    import hashlib

    path = tmp_path / "timeline.jsonl"
    first = line("ev-1", "go") + "\n"
    path.write_text(first + line("ev-2", "rust", 2) + "\n")
    old = json.dumps(
        {
            "offset": len(first),
            "sha256": hashlib.sha256(first.encode()).hexdigest(),
            "ids": {"ev-1": "0" * 12},
        }
    )
    source = build_source("file", "tl", {"path": str(path)})
    result = source.pull(old)
    assert [e.id for e in result.events] == ["ev-2"] and result.skipped == []
    assert result.places == {"ev-2": f"{path} line 2"}
    assert "ids" not in json.loads(result.cursor)


def test_appended_lines_are_read_once(tmp_path):
    path = tmp_path / "timeline.jsonl"
    path.write_text(line("ev-1", "go") + "\n")
    source = build_source("file", "tl", {"path": str(path)})
    first = source.pull(None)
    with path.open("a") as handle:
        handle.write(line("ev-2", "rust", 2) + "\n")
    second = source.pull(first.cursor)
    assert [e.id for e in second.events] == ["ev-2"] and second.skipped == []


def test_a_backlog_is_read_in_slices_of_whole_lines(tmp_path):
    from healthd.sources.file import FileSource

    path = tmp_path / "timeline.jsonl"
    lines = [line(f"ev-{n}", f"v{n}", 1 + n % 28) for n in range(40)]
    path.write_text("\n".join(lines) + "\n")
    source = FileSource("tl", str(path), slice_bytes=1000)  # about 4 lines a slice
    cursor, ids, pulls = None, [], 0
    while True:
        result = source.pull(cursor)
        assert result.error is None and result.skipped == []
        ids += [e.id for e in result.events]
        cursor, pulls = result.cursor, pulls + 1
        if not result.more:
            break
    assert ids == [f"ev-{n}" for n in range(40)] and pulls > 5
    assert source.pull(cursor).events == []


def test_an_id_reused_with_other_content_in_a_later_slice_is_named_by_its_line(tmp_path):
    """One slice refuses a repeated id itself; across slices the repeat is met only when the
    pieces are put together (`healthd timeline` and `evaluate --config`), and the warning
    names the line it was read on, not its position among the events (blank lines and
    refused lines make the two differ)."""
    from healthd.sources import unique_events
    from healthd.sources.file import FileSource

    path = tmp_path / "timeline.jsonl"
    lines = [line(f"ev-{n}", f"v{n}", 1 + n % 28) for n in range(12)]
    lines[3:3] = ["", "not json"]
    lines.append(line("ev-2", "zig", 20))  # line 15: ev-2 was "v2" on line 3
    path.write_text("\n".join(lines) + "\n")
    whole = pull_from_start(FileSource("tl", str(path), slice_bytes=1000))
    assert whole.error is None

    kept, repeats = unique_events(whole.events, "source 'tl'", whole.skipped, whole.repeat_places)

    assert [e.id for e in kept] == [f"ev-{n}" for n in range(12)] and repeats == 0
    assert whole.skipped[-1] == (
        "duplicate event id 'ev-2' with different content: added billing language='v2' at "
        f"2024-01-03T00:00:00+00:00 and, on {path} line 15, added billing language='zig' at "
        "2024-01-20T00:00:00+00:00; the first kept"
    )


def test_a_line_longer_than_a_slice_is_refused_naming_it_and_the_next_lines_read(tmp_path):
    from healthd.sources.file import FileSource

    path = tmp_path / "timeline.jsonl"
    path.write_text(line("ev-1", "go") + "\n" + line("ev-2", "x" * 3000, 2) + "\n")
    source = FileSource("tl", str(path), slice_bytes=1000)
    first = source.pull(None)
    assert [e.id for e in first.events] == ["ev-1"] and first.more
    long_line = line("ev-3", "y" * 3000, 3)
    with path.open("a") as handle:
        handle.write(long_line[:2000])  # a long line still being written is waited for
    second = source.pull(first.cursor)
    assert second.error is None and second.events == [] and second.skipped
    assert second.skipped == [f"line refused: {path}, line 2: longer than 1000 bytes"]
    waiting = source.pull(second.cursor)
    assert (waiting.events, waiting.skipped, waiting.cursor) == ([], [], second.cursor)
    with path.open("a") as handle:
        handle.write(long_line[2000:] + "\n" + line("ev-4", "zig", 4) + "\n")
    third = source.pull(second.cursor)
    assert third.skipped == [f"line refused: {path}, line 3: longer than 1000 bytes"]
    fourth = source.pull(third.cursor)
    assert [e.id for e in fourth.events] == ["ev-4"] and fourth.skipped == []
    assert fourth.places == {"ev-4": f"{path} line 4"}


def test_a_line_not_utf8_is_refused_naming_it_and_the_lines_around_it_read(tmp_path):
    path = tmp_path / "timeline.jsonl"
    path.write_bytes(
        (line("ev-1", "go") + "\n").encode()
        + b'{"id": "caf\xe9"}\n'
        + (line("ev-2", "rust", 2) + "\n").encode()
    )
    source = build_source("file", "tl", {"path": str(path)})
    first = source.pull(None)
    assert first.error is None and [e.id for e in first.events] == ["ev-1", "ev-2"]
    assert first.skipped == [
        f"line refused: {path}, line 2: not UTF-8 text (invalid continuation byte)"
    ]
    assert first.places == {"ev-1": f"{path} line 1", "ev-2": f"{path} line 3"}
    with path.open("a") as handle:
        handle.write(line("ev-3", "zig", 3) + "\n")
    second = source.pull(first.cursor)  # the bad line is behind the cursor: not said again
    assert [e.id for e in second.events] == ["ev-3"] and second.skipped == []
    assert second.places == {"ev-3": f"{path} line 4"}


def test_a_line_separator_inside_a_json_string_does_not_split_the_line(tmp_path):
    path = tmp_path / "timeline.jsonl"
    raw = line("ev-1", "go").replace('"go"', '"go\u2028\u2029\x85and more"')
    path.write_text(raw + "\n" + line("ev-2", "rust", 2) + "\n", encoding="utf-8")
    result = build_source("file", "tl", {"path": str(path)}).pull(None)
    assert result.skipped == [] and [e.id for e in result.events] == ["ev-1", "ev-2"]
    assert result.events[0].fact.value == "go\u2028\u2029\x85and more"
    assert result.places == {"ev-1": f"{path} line 1", "ev-2": f"{path} line 2"}


def test_an_unknown_or_missing_option_is_one_line_naming_it(tmp_path):
    import pytest

    from healthd.errors import ConfigError

    path = tmp_path / "timeline.jsonl"
    path.write_text(line("ev-1", "go") + "\n")
    with pytest.raises(ConfigError) as unknown:
        build_source("file", "w", {"path": str(path), "bogus": 1})
    assert str(unknown.value) == "source 'w': field 'bogus': Extra inputs are not permitted"
    with pytest.raises(ConfigError) as missing:
        build_source("file", "w", {})
    assert str(missing.value) == "source 'w': field 'path': Field required"


def test_a_last_line_with_no_end_of_line_waits_and_a_one_shot_pull_says_so(tmp_path):
    path = tmp_path / "timeline.jsonl"
    path.write_text(line("ev-1", "go") + "\n" + line("ev-2", "rust", 2))  # still being written
    source = build_source("file", "tl", {"path": str(path)})
    first = source.pull(None)
    assert [e.id for e in first.events] == ["ev-1"] and first.skipped == []  # the daemon waits
    with path.open("a") as handle:
        handle.write("\n")
    assert [e.id for e in source.pull(first.cursor).events] == ["ev-2"]

    path.write_text(line("ev-1", "go") + "\n" + line("ev-2", "rust", 2))
    once = pull_from_start(source)  # `timeline --config`, `evaluate --config`: no next pull
    assert [e.id for e in once.events] == ["ev-1"]
    assert once.skipped == [
        f"{path} line 2 has no end of line yet: not read (no more is coming in one run)"
    ]
    path.write_bytes((line("ev-1", "go") + "\r" + line("ev-2", "rust", 2) + "\r").encode())
    assert pull_from_start(source).skipped == [
        f"{path} line 1 has no end of line yet (a lone carriage return ends no line here): "
        "not read (no more is coming in one run)"
    ]


def test_an_id_read_three_times_is_named_by_the_line_of_the_reading_that_differs(tmp_path):
    """ev-2 is 'v2' on line 3, 'zig' on line 13 and 'v2' again on line 22 (a harmless
    repeat): the warning names line 13, the reading that differs, not the last one."""
    from healthd.sources import unique_events
    from healthd.sources.file import FileSource

    path = tmp_path / "timeline.jsonl"
    lines = [line(f"ev-{n}", f"v{n}", 1 + n % 28) for n in range(20)]
    lines.insert(12, line("ev-2", "zig", 20))  # line 13
    lines.insert(21, lines[2])  # line 22: line 3 again
    path.write_text("\n".join(lines) + "\n")
    whole = pull_from_start(FileSource("tl", str(path), slice_bytes=1000))
    assert whole.error is None
    kept, repeats = unique_events(whole.events, "source 'tl'", whole.skipped, whole.repeat_places)
    assert repeats == 1 and len(kept) == 20
    (said,) = [s for s in whole.skipped if s.startswith("duplicate event id")]
    assert f"on {path} line 13, added billing language='zig'" in said


def test_a_reading_refused_as_from_the_future_moves_no_other_readings_line(tmp_path):
    """ev-2 is 'v2' on line 3, dated 2099 on line 13 (refused: from the future) and 'zig'
    on line 22: the warning names line 22, not the refused line 13."""
    from datetime import UTC, datetime

    from healthd.sources import kept_repeat_places, unique_events
    from healthd.sources.file import FileSource
    from healthd.timeline import admitted

    path = tmp_path / "timeline.jsonl"
    lines = [line(f"ev-{n}", f"v{n}", 1 + n % 28) for n in range(20)]
    lines.insert(12, line("ev-2", "v2", 1).replace("2024-01-01", "2099-01-01"))  # line 13
    lines.insert(21, line("ev-2", "zig", 20))  # line 22
    path.write_text("\n".join(lines) + "\n")
    whole = pull_from_start(FileSource("tl", str(path), slice_bytes=1000))
    kept = admitted(whole.events, whole.skipped, datetime(2030, 1, 1, tzinfo=UTC))
    places = kept_repeat_places(whole.events, kept, whole.repeat_places)
    unique_events(kept, "source 'tl'", whole.skipped, places)
    (said,) = [s for s in whole.skipped if s.startswith("duplicate event id")]
    assert f"on {path} line 22, added billing language='zig'" in said


@pytest.mark.parametrize(
    "foreign",
    [
        '{"commit": "0123abcd", "seen": {}}',  # a git source's, the source's kind changed
        "zlib:eJwrSS0uAQAEXQHB",  # a backstage source's
        '{"offset": -1, "line": 1, "head": "", "tail": ""}',
        '{"offset": "12", "line": 1, "head": "", "tail": ""}',
        "null",
        "not json",
    ],
)
def test_a_cursor_this_source_did_not_write_reads_the_file_from_the_top_once(tmp_path, foreign):
    """A state file may keep a cursor under the source's name that another kind wrote (the
    configuration changed the source's kind) or that was edited: the file is read from the
    top, as after a rewrite, each event with its line (so the daemon takes none twice), and
    the next pull goes on from the cursor this one wrote; not an error every run."""
    path = tmp_path / "timeline.jsonl"
    path.write_text(line("ev-1", "go") + "\n" + line("ev-2", "rust", 2) + "\n")
    source = build_source("file", "tl", {"path": str(path)})

    again = source.pull(foreign)

    assert again.error is None
    assert [e.id for e in again.events] == ["ev-1", "ev-2"]
    assert again.places == {"ev-1": f"{path} line 1", "ev-2": f"{path} line 2"}
    assert [note for note in again.skipped if "cursor" in note] == [
        f"{path}: cursor not understood; read from the top"
    ]
    with path.open("a") as handle:
        handle.write(line("ev-3", "zig", 3) + "\n")
    assert [e.id for e in source.pull(again.cursor).events] == ["ev-3"]
