"""A value the memory invented: what the reader finds as ``other`` is a retrieved fact that
is not current (DESIGN.md's status ``unknown``), shown as invented with the text it came from.

The memory here is a team's HTTP memory serving text (tests/text_memory_service.py), run
through `healthd evaluate` as a user runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from text_memory_service import TextMemoryService

from healthd.cli import example_timeline_path
from healthd.evaluator import evaluate
from healthd.memory import build_memory, parse_target
from healthd.model import CARDINALITY, INVENTED, MULTI, ChangeEvent, Fact, FactKey, ServedItem
from healthd.probes import build_probe_set
from healthd.reading import build_reader, read_facts
from healthd.timeline import read_timeline

EVENTS = read_timeline(example_timeline_path())
PROBES = build_probe_set(EVENTS)
LANGUAGE = ("auth-service", "language")  # held node, then go
ELIXIR = "auth-service is written in Elixir."


def _target(service: TextMemoryService) -> str:
    return (
        f"http:base_url={service.url},namespace=healthd/shadow,shadow=on,backoff_seconds=0,"
        "top_k=100"
    )


def _evaluate_json(service: TextMemoryService, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--target", _target(service)]
        + ["--format", "json", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _probe(report: dict[str, Any], key: tuple[str, str]) -> dict[str, Any]:
    (target,) = report["targets"]
    (probe,) = (p for p in target["final"]["probes"] if (p["subject"], p["predicate"]) == key)
    return probe


def test_a_memory_that_serves_an_invented_value_scores_lower_consistency_than_one_that_serves_nothing():
    """The same memory, silent on the gateway's language in one run, and in the other
    saying it is written in Elixir (the key held node, then go): the invented value is a
    retrieved fact that is not current, so consistency falls, overall and for its domain;
    what it is not (a current fact, an ended one) moves nothing else."""
    with TextMemoryService(silent_on={LANGUAGE}) as service:
        silent = _evaluate_json(service)
    with TextMemoryService(silent_on={LANGUAGE}, says={LANGUAGE: ELIXIR}) as service:
        inventing = _evaluate_json(service)
    quiet = silent["targets"][0]["final"]["metrics"]
    said = inventing["targets"][0]["final"]["metrics"]
    for bucket in ("all", "tech"):
        assert said[bucket]["consistency"] < quiet[bucket]["consistency"], bucket
        assert said[bucket]["coverage"] == quiet[bucket]["coverage"]
        assert said[bucket]["contamination"] == quiet[bucket]["contamination"]
        assert said[bucket]["conflicts"] == quiet[bucket]["conflicts"]
    assert said["ownership"] == quiet["ownership"]

    assert _probe(silent, LANGUAGE)["retrieved"] == []
    probe = _probe(inventing, LANGUAGE)
    (fact,) = probe["retrieved"]
    assert fact["value"] == "elixir" and fact["status"] == "unknown"
    assert fact["flags"] == [INVENTED] and fact["text"] == ELIXIR
    (item,) = probe["served"]
    assert item["text"] == ELIXIR
    assert item["read_as"] == {
        "asserted": [],
        "negated": [],
        "unread": False,
        "mismatch": False,
        "other": ["Elixir"],
    }
    reading = inventing["targets"][0]["reading"]
    assert reading["invented"] == 1 and silent["targets"][0]["reading"]["invented"] == 0


def test_an_invented_value_beside_the_current_one_of_a_single_valued_key_is_a_conflict():
    """The memory serves go (current) and also says Elixir: two values for a key that
    holds one, so the probe is a conflict; served with nothing beside it, it is none."""
    with TextMemoryService() as service:
        plain = _evaluate_json(service)
    with TextMemoryService(says={LANGUAGE: ELIXIR}) as service:
        beside = _evaluate_json(service)
    before = plain["targets"][0]["final"]["metrics"]
    after = beside["targets"][0]["final"]["metrics"]
    for bucket in ("all", "tech"):
        assert after[bucket]["conflicts"] == before[bucket]["conflicts"] + 1, bucket
        assert after[bucket]["consistency"] < before[bucket]["consistency"]
        assert after[bucket]["coverage"] == before[bucket]["coverage"]
    statuses = sorted((f["value"], f["status"]) for f in _probe(beside, LANGUAGE)["retrieved"])
    assert statuses == [("elixir", "unknown"), ("go", "current")]


T0 = datetime(2026, 3, 1, tzinfo=UTC)


def test_read_facts_carries_an_invented_value_as_a_fact_flagged_invented():
    """One fact per invented value an item reads, filed under the probe's domain, with the
    item's times and flags and ``invented`` added; spelled as one value however its case and
    spacing differ, so two items saying Elixir are one value, not a conflict."""
    key = FactKey(*LANGUAGE)
    items = (
        ServedItem("auth-service is written in Elixir.", "r1", T0, None, {}, frozenset({"x"})),
        ServedItem("auth-service is implemented in  ELIXIR.", "r2", T0),
        ServedItem("auth-service is written in Go.", "r3", T0),
    )
    readings, facts = read_facts(
        build_reader(), key, {"node": "tech", "go": "tech"}, items, domain="tech"
    )
    assert [r.reading.other for r in readings] == [("Elixir",), ("ELIXIR",), ()]
    assert [(f.value, f.record_id, f.domain, sorted(f.flags)) for f in facts] == [
        ("elixir", "r1", "tech", [INVENTED, "x"]),
        ("elixir", "r2", "tech", [INVENTED]),
        ("go", "r3", "tech", []),
    ]


@pytest.mark.parametrize("multi", [False, True])
def test_an_invented_value_is_a_conflict_only_for_a_single_valued_key(multi):
    """Go is current and Elixir invented: half the pool is current either way, and the two
    values conflict only where the key holds one value."""
    from test_served_text import ServedMemory

    metadata = {CARDINALITY: MULTI} if multi else {}
    fact = Fact("checkout", "language", "go", "tech")
    events = [ChangeEvent("e1", "added", T0, "git", fact, metadata=metadata)]
    texts = ["checkout is written in Go.", "checkout is written in Elixir."]
    items = [ServedItem(t, f"r{i}", T0) for i, t in enumerate(texts)]
    result = evaluate(events, ServedMemory(items), build_probe_set(events), name="m", kind="m")
    (probe,) = result.probes
    assert sorted((f.value, s) for f, s in probe.retrieved) == [
        ("elixir", "unknown"),
        ("go", "current"),
    ]
    assert result.metrics["all"].consistency == 0.5
    assert result.metrics["all"].coverage == 1.0
    assert result.metrics["all"].conflicts == (0 if multi else 1)


@pytest.mark.slow
def test_incremental_and_full_agree_on_a_memory_that_invents():
    with TextMemoryService(silent_on={LANGUAGE}, says={LANGUAGE: ELIXIR}) as service:
        runs = {}
        for mode in ("incremental", "full"):
            spec = parse_target(_target(service))
            memory = build_memory(spec)
            try:
                runs[mode] = evaluate(EVENTS, memory, PROBES, name="t", kind=spec.kind, mode=mode)
            finally:
                memory.close()
    assert [s.counts for s in runs["incremental"].stages] == [s.counts for s in runs["full"].stages]
    assert runs["incremental"].reading.invented == 1


def test_the_drill_down_and_the_report_show_an_invented_value_with_its_text(tmp_path):
    """The failing probe is failing as ``invented``; its fact is flagged invented with the
    text it was read from, and the served item reads as ``invented Elixir``; the HTML
    report carries both."""
    from healthd.exporters.report import report_json
    from healthd.report.html import render_document
    from healthd.report.view import page_model
    from healthd.scoring import DEFAULT_WINDOWS

    with TextMemoryService(says={LANGUAGE: ELIXIR}) as service:
        spec = parse_target(_target(service))
        memory = build_memory(spec)
        try:
            result = evaluate(EVENTS, memory, PROBES, name="team", kind=spec.kind)
        finally:
            memory.close()
    report = report_json([result], "v", len(PROBES))
    model = page_model(report, events=EVENTS, windows=DEFAULT_WINDOWS)
    kinds = model["kinds"]
    (slot,) = (i for i, p in enumerate(model["probes"]) if p[4] == "auth-service · language")
    (row,) = (r for r in model["failures"] if r[0] == slot)
    assert {"invented", "conflicting"} <= {kinds[k] for k, _ in row[1]}
    probe = model["probes"][slot]
    invented = [f for f in probe[6] if f[0] == "elixir"]
    assert [(f[1], f[5], f[8]) for f in invented] == [("unknown", [INVENTED], ELIXIR)]
    (said,) = (s for s in probe[8] if s[0] == ELIXIR)
    assert said[1:] == [[], [], False, False, ["Elixir"], False]
    page = render_document(model)
    assert "auth-service is written in Elixir." in page and "invented" in page


def test_the_page_shows_an_invented_value_as_invented_with_its_text(browser, tmp_path):
    from browser_helpers import open_page

    with TextMemoryService(says={LANGUAGE: ELIXIR}) as service:
        report = _evaluate_json(service, "--html", str(tmp_path / "report.html"))
    assert report["targets"][0]["reading"]["invented"] == 1
    visit = open_page(browser, (tmp_path / "report.html").as_uri())
    page = visit.page
    row = page.locator("#failures-body tr", has_text="auth-service").filter(has_text="Elixir")
    text = row.first.inner_text()
    assert "invented" in text
    said = row.first.locator("ul.served li").all_inner_texts()
    assert any(
        ELIXIR in s and "read as: asserts go" not in s and "invented Elixir" in s for s in said
    )
    assert visit.console_errors == []
