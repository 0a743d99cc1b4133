"""Retrieved but irrelevant (issue 38 item 1): an item that speaks only of another subject is
unread for the probe's key and marked ``irrelevant``: counted in the JSON report, shown in the
drill-down apart from (after) the items scored as facts, never scored as a fact.

The memory here is a team's HTTP memory serving text (tests/text_memory_service.py) over
127.0.0.1, run through ``healthd evaluate`` as a user runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from text_memory_service import TextMemoryService

from healthd.model import FactKey
from healthd.reading import Reading, build_reader

CHECKOUT = ("checkout", "owners")  # held @kim, then @lee
KIM = "Kim runs the search service."
RIGHT = "Lee looks after checkout."  # how the text memory words checkout's current owner

TIMELINE = [
    {
        "id": "t-001",
        "type": "added",
        "timestamp": "2026-01-05T09:00:00Z",
        "source": "git",
        "fact": {
            "subject": "checkout",
            "predicate": "owners",
            "value": "@kim",
            "domain": "ownership",
        },
    },
    {
        "id": "t-002",
        "type": "added",
        "timestamp": "2026-01-06T09:00:00Z",
        "source": "git",
        "fact": {
            "subject": "search",
            "predicate": "owners",
            "value": "@kim",
            "domain": "ownership",
        },
    },
    {
        "id": "t-003",
        "type": "revised",
        "timestamp": "2026-01-10T09:00:00Z",
        "source": "git",
        "previous": {
            "subject": "checkout",
            "predicate": "owners",
            "value": "@kim",
            "domain": "ownership",
        },
        "fact": {
            "subject": "checkout",
            "predicate": "owners",
            "value": "@lee",
            "domain": "ownership",
        },
    },
    {
        "id": "t-004",
        "type": "added",
        "timestamp": "2026-01-12T09:00:00Z",
        "source": "git",
        "fact": {"subject": "search", "predicate": "language", "value": "go", "domain": "tech"},
    },
]


def read(text: str, subject: str, predicate: str, values: tuple[str, ...]) -> Reading:
    return build_reader().read(text, FactKey(subject, predicate), values)


@pytest.mark.parametrize(
    ("text", "subject", "predicate", "values"),
    [
        # a people-valued key whose subject the text does not name
        ("Kim runs the search service", "checkout", "owners", ("@kim", "@lee")),
        ("Lee has been away since Monday", "checkout", "owners", ("@kim", "@lee")),
        # another subject whose name starts with the key's
        ("auth-service-v2 is written in Go", "auth-service", "language", ("go", "node")),
        # another package's version
        ("auth-service depends on flask 2.0", "auth-service", "dependency:gin", ("1.9.1",)),
        # every clause about another subject, the key's never named
        ("the exporter is written in Go", "gateway", "language", ("go", "node")),
        ("inventory service CONSUMES FROM Kafka", "orders", "broker", ("kafka", "rabbitmq")),
    ],
)
def test_a_text_about_another_subject_is_unread_and_irrelevant(text, subject, predicate, values):
    reading = read(text, subject, predicate, values)
    assert reading.unread and reading.irrelevant
    assert reading == Reading(irrelevant=True)


@pytest.mark.parametrize(
    ("text", "subject", "predicate", "values"),
    [
        ("unclear whether Kim or Lee owns checkout", "checkout", "owners", ("@kim", "@lee")),
        ("checkout might move to payments-v2 in spring", "checkout", "owners", ("@kim", "@lee")),
        ("The weather is nice today", "gateway", "language", ("go", "node")),
        ("gateway is a service", "gateway", "language", ("go", "node")),
    ],
)
def test_a_hedge_a_plan_or_a_text_naming_no_value_is_unread_but_not_irrelevant(
    text, subject, predicate, values
):
    reading = read(text, subject, predicate, values)
    assert reading.unread and not reading.irrelevant


def test_a_text_read_for_the_key_is_never_irrelevant():
    reading = read("Lee looks after checkout.", "checkout", "owners", ("@kim", "@lee"))
    assert reading.asserted == ("@lee",) and not reading.irrelevant


def test_the_semantic_reader_keeps_the_flag_of_the_rules_it_wraps():
    """An unread text is the rules' reading as it is: the model is never asked."""
    from healthd.reading.semantic import SemanticReader

    class NoModel:
        def encode(self, texts: list[str]) -> list[list[float]]:
            raise AssertionError("the model is not asked about an unread text")

    reader = SemanticReader(NoModel())
    reading = reader.read("Kim runs the search service", FactKey(*CHECKOUT), ("@kim", "@lee"))
    assert reading.unread and reading.irrelevant


def _target(service: TextMemoryService) -> str:
    return (
        f"http:base_url={service.url},namespace=healthd/shadow,shadow=on,backoff_seconds=0,"
        "top_k=100"
    )


def _timeline(tmp_path: Path) -> Path:
    path = tmp_path / "timeline.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in TIMELINE), encoding="utf-8")
    return path


def _evaluate_json(service: TextMemoryService, timeline: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--target", _target(service)]
        + ["--timeline", str(timeline), "--format", "json", *args],
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


def test_an_item_about_another_subject_is_counted_irrelevant_and_scores_nothing(tmp_path):
    """Beside the right item, "Kim runs the search service." for "Who owns checkout?" (Kim
    owned checkout once): read as irrelevant, counted, and every score at every stage as for
    the same memory not serving it."""
    timeline = _timeline(tmp_path)
    with TextMemoryService() as service:
        plain = _evaluate_json(service, timeline)
    with TextMemoryService(says={CHECKOUT: KIM}) as service:
        beside = _evaluate_json(service, timeline)
    before, after = plain["targets"][0], beside["targets"][0]
    assert [s["metrics"] for s in after["stages"]] == [s["metrics"] for s in before["stages"]]
    assert after["final"]["metrics"] == before["final"]["metrics"]

    probe = _probe(beside, CHECKOUT)
    assert [(f["value"], f["status"]) for f in probe["retrieved"]] == [("@lee", "current")]
    served = {s["text"]: s["read_as"] for s in probe["served"]}
    assert served[KIM] == {
        "asserted": [],
        "negated": [],
        "unread": True,
        "mismatch": False,
        "other": [],
        "irrelevant": True,
    }
    assert served[RIGHT] == {
        "asserted": ["@lee"],
        "negated": [],
        "unread": False,
        "mismatch": False,
        "other": [],
    }
    assert after["reading"]["irrelevant"] == 1 and after["reading"]["unread"] == 1
    assert before["reading"]["irrelevant"] == 0
    assert after["reading"]["items"] == before["reading"]["items"] + 1


def _model_and_page(tmp_path: Path) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """A memory that forgets nothing (so checkout's probe fails as contaminated and is in
    the drill-down) serving the item about search beside its own."""
    from healthd.report.html import render_document
    from healthd.report.view import page_model
    from healthd.timeline import read_timeline

    timeline = _timeline(tmp_path)
    with TextMemoryService(forgets=False, says={CHECKOUT: KIM}) as service:
        report = _evaluate_json(service, timeline, "--html", str(tmp_path / "report.html"))
    model = page_model(report, events=read_timeline(timeline))
    return model, render_document(model), report


def test_the_drill_down_marks_an_irrelevant_item_and_lists_it_after_those_scored(tmp_path):
    model, page, _ = _model_and_page(tmp_path)
    (probe,) = (p for p in model["probes"] if p[4] == "checkout · owners")
    texts = [s[0] for s in probe[8]]
    assert texts[-1] == KIM and set(texts[:-1]) == {RIGHT, "Kim looks after checkout."}
    assert [s[6] for s in probe[8]] == [False, False, True]
    assert probe[8][-1][1:] == [[], [], True, False, [], True]
    assert KIM in page and "about another subject" in page


def test_the_page_shows_an_irrelevant_item_apart_marked_about_another_subject(browser, tmp_path):
    from browser_helpers import open_page

    _model_and_page(tmp_path)
    visit = open_page(browser, (tmp_path / "report.html").as_uri())
    row = visit.page.locator("#failures-body tr", has_text="checkout").filter(has_text=KIM)
    scored = row.first.locator("ul.served:not(.irrelevant) li").all_inner_texts()
    apart = row.first.locator("ul.served.irrelevant li").all_inner_texts()
    assert all(KIM not in s for s in scored) and len(scored) == 2
    assert len(apart) == 1 and KIM in apart[0] and "about another subject" in apart[0]
    assert visit.console_errors == []
