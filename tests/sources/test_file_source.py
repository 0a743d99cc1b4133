"""The `file` source: a timeline file read as it grows, and rewritten (issue 10, point 4)."""

from __future__ import annotations

import json

from healthd.sources import build_source


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


def test_a_rewritten_line_reusing_an_id_with_new_content_is_reported_not_taken(tmp_path):
    path = tmp_path / "timeline.jsonl"
    path.write_text(line("ev-1", "go") + "\n" + line("ev-2", "rust", 2) + "\n")
    source = build_source("file", "tl", {"path": str(path)})
    first = source.pull(None)
    assert [e.id for e in first.events] == ["ev-1", "ev-2"]

    path.write_text(
        line("ev-1", "go") + "\n" + line("ev-2", "zig", 2) + "\n" + line("ev-3", "c", 3) + "\n"
    )
    second = source.pull(first.cursor)

    assert second.error is None
    assert [e.id for e in second.events] == ["ev-3"]  # ev-1 unchanged: not delivered twice
    assert any(
        "line 2" in note and "'ev-2'" in note and "other content" in note for note in second.skipped
    ), second.skipped
    assert any("read again from the top" in note for note in second.skipped)
    assert source.pull(second.cursor).events == []


def test_appended_lines_are_read_once(tmp_path):
    path = tmp_path / "timeline.jsonl"
    path.write_text(line("ev-1", "go") + "\n")
    source = build_source("file", "tl", {"path": str(path)})
    first = source.pull(None)
    with path.open("a") as handle:
        handle.write(line("ev-2", "rust", 2) + "\n")
    second = source.pull(first.cursor)
    assert [e.id for e in second.events] == ["ev-2"] and second.skipped == []
