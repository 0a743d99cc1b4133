"""`healthd reader-check` and the default reader on the labelled set shipped in the repo."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from healthd.errors import ReaderError
from healthd.model import FactKey
from healthd.reading import build_reader, reader_names
from healthd.reading.labelled import check_reader, load_labelled, parse_labelled


def healthd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, COLUMNS="120"),
    )


def test_the_shipped_labelled_set_is_large_and_from_every_kind_of_source():
    items = load_labelled()
    assert len(items) >= 300
    sources = {item.source for item in items}
    assert {"mem0", "graphiti", "agentcore", "adr", "ticket"} <= sources
    assert {"transition", "negation", "near-miss"} <= sources
    assert sum(1 for i in items if i.negates) >= 100
    assert sum(1 for i in items if not i.asserts and not i.negates) >= 50


def test_the_default_reader_meets_its_targets_on_asserted_values():
    result = check_reader(build_reader("default"), load_labelled())
    asserts = result.classes["asserts"]
    assert asserts.precision is not None and asserts.precision >= 0.97
    assert asserts.recall is not None and asserts.recall >= 0.95


def test_reader_check_prints_precision_and_recall_per_class():
    done = healthd("reader-check")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("reader default-9 on ") and "mem0" in lines[0]
    assert [line.split()[0] for line in lines[2:6]] == ["asserts", "negates", "other", "unread"]
    as_json = json.loads(healthd("reader-check", "--format", "json").stdout)
    assert as_json["reader"] == "default-9"
    assert set(as_json["classes"]) == {"asserts", "negates", "other", "unread"}
    assert as_json["items"] == len(load_labelled())
    assert "readings" not in as_json


def test_show_all_lists_every_items_reading_with_other(tmp_path):
    path = tmp_path / "set.jsonl"
    lines = [
        '{"id": "a", "source": "graphiti", "style": "Graphiti EntityEdge fact", "kind": "invented",'
        ' "subject": "gateway", "predicate": "language", "values": ["go", "node"],'
        ' "text": "gateway is implemented in Elixir", "asserts": [], "negates": [],'
        ' "other": ["Elixir"]}',
        '{"id": "b", "source": "mem0", "subject": "gateway", "predicate": "language",'
        ' "values": ["go", "node"], "text": "gateway is written in Go", "asserts": ["go"],'
        ' "negates": []}',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = healthd("reader-check", "--labelled", str(path), "--format", "json", "--show-all")
    assert done.returncode == 0, done.stderr
    as_json = json.loads(done.stdout)
    assert as_json["classes"]["other"]["labelled"] == 1
    assert as_json["kinds"] == {"invented": {"items": 1, "wrong": len(as_json["errors"])}}
    assert [r["id"] for r in as_json["readings"]] == ["a", "b"]
    assert as_json["readings"][1]["read"] == {"asserts": ["go"], "negates": [], "other": []}
    assert set(as_json["readings"][0]["read"]) == {"asserts", "negates", "other"}
    table = healthd("reader-check", "--labelled", str(path), "--show-all").stdout
    assert "  b: 'gateway is written in Go'" in table


def test_an_other_value_among_values_is_refused():
    line = (
        '{"id": "x", "source": "s", "subject": "s", "predicate": "p", "values": ["a"], '
        '"text": "a", "asserts": [], "negates": [], "other": ["a"]}'
    )
    with pytest.raises(ReaderError, match="field 'other': \\['a'\\] among 'values'"):
        parse_labelled([line], "set.jsonl")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: invalid JSON"),
        ('["a list"]', "line 2: expected a JSON object"),
        (
            '{"id": "x", "source": "mem0", "subject": "s", "predicate": "p", "values": ["a"],'
            ' "text": "t", "asserts": ["b"], "negates": []}',
            "line 2, field 'asserts': ['b'] not among 'values'",
        ),
        (
            '{"id": "x", "source": "mem0", "subject": "s", "predicate": "p", "values": ["a"],'
            ' "text": "t", "asserts": []}',
            "line 2: missing field(s) ['negates']",
        ),
    ],
)
def test_a_malformed_labelled_line_is_one_line_and_exit_2(tmp_path, line, message):
    good = (
        '{"id": "ok", "source": "mem0", "subject": "billing", "predicate": "owners", '
        '"values": ["@bob"], "text": "Bob owns billing", "asserts": ["@bob"], "negates": []}'
    )
    path = tmp_path / "set.jsonl"
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    done = healthd("reader-check", "--labelled", str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert message in done.stderr and str(path) in done.stderr


def test_an_unknown_reader_is_one_line_and_exit_2():
    done = healthd("reader-check", "--reader", "oracle")
    assert done.returncode == 2
    assert done.stderr == (
        "healthd: error: reader 'oracle': unknown reader 'oracle'; known: default, llm, semantic\n"
    )
    assert reader_names() == ["default", "llm", "semantic"]
    done = healthd("evaluate", "--reader", "oracle")
    assert done.returncode == 2 and "unknown reader 'oracle'" in done.stderr


def test_a_duplicate_id_is_refused():
    line = (
        '{"id": "x", "source": "mem0", "subject": "s", "predicate": "p", "values": ["a"], '
        '"text": "a", "asserts": ["a"], "negates": []}'
    )
    with pytest.raises(ReaderError, match="line 2, field 'id': 'x' is used twice"):
        parse_labelled([line, line], "set.jsonl")


@pytest.mark.parametrize(
    ("text", "values", "asserted", "negated"),
    [
        ("auth-service moved from node to go", ("node", "go"), ("go",), ("node",)),
        (
            "Handed auth-service over to the Go rewrite; Node is gone",
            ("node", "go"),
            ("go",),
            ("node",),
        ),
        ("The auth service runs on Node.js", ("node", "go"), ("node",), ()),
        ("auth-service-v2 is written in go", ("node", "go"), (), ()),
        ("Might move auth-service to Go", ("node", "go"), (), ()),
    ],
)
def test_the_default_reader_reads_transitions_negations_and_near_misses(
    text, values, asserted, negated
):
    reading = build_reader().read(text, FactKey("auth-service", "language"), values)
    assert (reading.asserted, reading.negated) == (asserted, negated)


@pytest.mark.parametrize(
    ("text", "asserted"),
    [
        ("payments-v2 depends on PostgreSQL 17.0", ("17",)),
        ("payments-v2 runs on postgres v17", ("17",)),
        ("payments-v2 uses pgbouncer 1.17", ()),
        ("payments-v2 depends on postgres 170", ()),
    ],
)
def test_versions_match_through_their_spellings_and_never_inside_another(text, asserted):
    key = FactKey("payments-v2", "dependency:postgres")
    assert build_reader().read(text, key, ("16", "17")).asserted == asserted


def test_handles_match_bare_names_and_lists_in_either_order():
    key = FactKey("billing", "owners")
    values = ("@alice", "@bob", "@bob @carol")
    reader = build_reader()
    assert reader.read("Carol and Bob own billing", key, values).asserted == ("@bob @carol",)
    assert reader.read("billing: @BOB", key, values).asserted == ("@bob",)
    assert reader.read("Alicia owns billing", key, values).asserted == ()
