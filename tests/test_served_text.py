"""Scoring what a memory serves: text read into facts by the reader."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from text_memory_service import TextMemoryService

from healthd.cli import example_timeline_path
from healthd.errors import MemoryAdapterError, ReaderError
from healthd.evaluator import Replay, evaluate
from healthd.memory import build_memory, parse_target
from healthd.memory.naive import NaiveMemory
from healthd.model import Answer, ChangeEvent, Fact, Probe, ServedItem
from healthd.probes import build_probe_set
from healthd.reading import Reading
from healthd.timeline import read_timeline

EVENTS = read_timeline(example_timeline_path())
PROBES = build_probe_set(EVENTS)


def _target(service: TextMemoryService) -> str:
    # top_k past any answer's size: the in-process twins return every record they hold.
    return (
        f"http:base_url={service.url},namespace=healthd/shadow,shadow=on,backoff_seconds=0,"
        "top_k=100"
    )


def _run(target: str, mode: str = "incremental"):
    spec = parse_target(target)
    memory = build_memory(spec)
    try:
        return evaluate(EVENTS, memory, PROBES, name=spec.label, kind=spec.kind, mode=mode)
    finally:
        memory.close()


@pytest.mark.parametrize(("forgets", "twin"), [(True, "reference"), (False, "naive")])
def test_a_text_only_memory_scores_exactly_like_the_memory_it_holds(forgets, twin):
    """The service answers with sentences in its own words and no structured field; read
    back, every stage's metrics are those of the memory it holds."""
    with TextMemoryService(forgets=forgets) as service:
        text_only = _run(_target(service))
    structured = _run(twin)
    assert [s.counts for s in text_only.stages] == [s.counts for s in structured.stages]
    assert text_only.metrics == structured.metrics
    assert text_only.reading.items > 0
    assert text_only.reading.unread == 0
    served = [r for p in text_only.probes for r in p.served]
    assert any("looks after" in r.item.text for r in served)


@pytest.mark.slow
def test_incremental_and_full_read_text_the_same():
    with TextMemoryService() as service:
        incremental = _run(_target(service))
        full = _run(_target(service), mode="full")
    assert [s.counts for s in incremental.stages] == [s.counts for s in full.stages]


T0 = datetime(2026, 3, 1, tzinfo=UTC)


class ServedMemory(NaiveMemory):
    """The naive memory's records, served as given texts with given metadata."""

    def __init__(self, items: list[ServedItem]) -> None:
        super().__init__()
        self.items = tuple(items)

    def answer(self, probe: Probe, at: datetime) -> Answer:
        return Answer(probe.id, (), self.items)


def _owner_events() -> list[ChangeEvent]:
    alice = Fact("billing", "owners", "@alice", "ownership")
    bob = Fact("billing", "owners", "@bob", "ownership")
    carol = Fact("billing", "owners", "@carol", "ownership")
    return [
        ChangeEvent("e1", "added", T0, "git", alice),
        ChangeEvent("e2", "revised", T0.replace(day=2), "git", bob, previous=alice),
        ChangeEvent("e3", "revised", T0.replace(day=3), "git", carol, previous=bob),
    ]


def test_an_extraction_that_contradicts_its_metadata_is_scored_by_its_text():
    """Mem0 with infer=True copies add()'s metadata onto every memory its LLM extracts: the
    extraction "Alice handed billing over to Carol" carries healthd's metadata for @bob.
    The text is what the assistant reads: it is scored as Carol, current, and the
    disagreement is counted."""
    events = _owner_events()
    item = ServedItem(
        "Alice handed billing over to Carol",
        "mem0:1",
        T0.replace(day=3),
        T0.replace(day=3),
        {"subject": "billing", "predicate": "owners", "value": "@bob", "domain": "ownership"},
    )
    result = evaluate(events, ServedMemory([item]), build_probe_set(events), name="m", kind="m")
    (probe,) = result.probes
    assert [(f.value, status) for f, status in probe.retrieved] == [("@carol", "current")]
    (reading,) = probe.served
    assert reading.read_as() == {
        "asserted": ["@carol"],
        "negated": ["@alice"],
        "unread": False,
        "mismatch": True,
        "other": [],
    }
    assert result.reading.metadata_mismatch == 1
    assert result.metrics["all"].consistency == 1.0
    assert result.metrics["all"].contamination == 0.0


def test_an_item_the_reader_cannot_read_is_counted_and_shown_not_scored():
    events = _owner_events()
    items = [
        ServedItem("Prefers dark mode in the IDE", "r1", T0),
        ServedItem("Carol looks after billing", "r2", T0.replace(day=3)),
    ]
    result = evaluate(events, ServedMemory(items), build_probe_set(events), name="m", kind="m")
    (probe,) = result.probes
    assert [r.reading.unread for r in probe.served] == [True, False]
    assert result.reading.unread == 1 and result.reading.items == 2
    assert [f.value for f, _ in probe.retrieved] == ["@carol"]


def test_a_value_the_text_presents_as_past_is_not_served_as_current():
    events = _owner_events()
    items = [ServedItem("Billing was owned by Bob until March", "r1", T0)]
    result = evaluate(events, ServedMemory(items), build_probe_set(events), name="m", kind="m")
    assert result.probes[0].retrieved == ()
    assert result.metrics["all"].contamination == 0.0
    assert result.metrics["all"].coverage == 0.0


def test_a_served_item_with_no_text_and_no_fact_is_one_clear_error():
    events = _owner_events()
    memory = ServedMemory([ServedItem("  ", "mem0:7", T0)])
    with pytest.raises(ReaderError, match="served item 'mem0:7' has no text and no fact"):
        evaluate(events, memory, build_probe_set(events), name="m", kind="m")


def test_an_http_item_without_text_names_the_field():
    with TextMemoryService() as service:
        memory = build_memory(parse_target(_target(service)))
        memory.reset()
        memory.apply(EVENTS[0])
        service.bad_query_body = {"items": [{"record_id": "r1", "written_at": None}]}
        with pytest.raises(MemoryAdapterError, match=r"field 'items\[0\].text'"):
            memory.answer(PROBES.probes[0], EVENTS[0].timestamp)
        service.bad_query_body = {"answers": []}
        with pytest.raises(MemoryAdapterError, match="'facts' or 'items' list"):
            memory.answer(PROBES.probes[0], EVENTS[0].timestamp)
        memory.close()


def test_the_applied_event_carries_its_statement():
    with TextMemoryService() as service:
        memory = build_memory(parse_target(_target(service)))
        memory.reset()
        bodies: list[dict] = []
        route = service.route

        def spy(method, path, body):
            if path.endswith("/events"):
                bodies.append(dict(body))
            return route(method, path, body)

        service.route = spy  # type: ignore[method-assign]
        revised = next(e for e in EVENTS if e.type == "revised" and e.fact.predicate == "language")
        memory.apply(revised)
        memory.close()
    assert bodies[0]["text"] == "Auth-service is written in go (replacing node)."


def test_the_contract_describes_items_and_the_statement():
    import yaml
    from jsonschema import Draft202012Validator
    from openapi_spec_validator import validate as validate_openapi

    from healthd.reading.render import statement
    from healthd.timeline import event_to_dict, format_timestamp

    document = yaml.safe_load(open("docs/memory-http-api.yaml"))
    validate_openapi(document)
    schemas = {"components": {"schemas": document["components"]["schemas"]}}

    def validator(name: str) -> Draft202012Validator:
        return Draft202012Validator({"$ref": f"#/components/schemas/{name}", **schemas})

    for event in EVENTS:
        validator("ChangeEvent").validate({**event_to_dict(event), "text": statement(event)})
    with TextMemoryService() as service:
        memory = build_memory(parse_target(_target(service)))
        memory.reset()
        for event in EVENTS:
            memory.apply(event)
        route = service.route
        status, payload = route(
            "POST",
            "/v1/namespaces/healthd%2Fshadow/query",
            {
                "probe": {
                    "id": "p",
                    "question": "Who owns billing?",
                    "subject": "billing",
                    "predicate": "owners",
                    "domain": "ownership",
                },
                "at": format_timestamp(EVENTS[-1].timestamp),
                "k": 5,
            },
        )
        memory.close()
    assert status == 200 and payload["items"] and "facts" not in payload
    validator("QueryResult").validate(payload)
    assert not validator("QueryResult").is_valid({"answers": []})


def test_the_drill_down_shows_what_was_served_and_how_it_was_read():
    from healthd.exporters.report import report_json
    from healthd.report.view import page_model
    from healthd.scoring import DEFAULT_WINDOWS

    with TextMemoryService(forgets=False) as service:
        result = _run(_target(service))
    report = report_json([result], "v", len(PROBES))
    model = page_model(report, events=EVENTS, windows=DEFAULT_WINDOWS)
    served = [s for p in model["probes"] for s in p[8]]
    assert served, "a text-only memory's failing probes show their served items"
    text, asserted, negated, unread, mismatch, invented, elsewhere = next(
        s for s in served if s[0] == "Alice looks after billing."
    )
    assert (asserted, negated, unread, mismatch, invented, elsewhere) == (
        ["@alice"],
        [],
        False,
        False,
        [],
        False,
    )


def test_the_page_shows_served_text_and_its_reading(browser, tmp_path):
    import json
    import subprocess
    import sys

    from browser_helpers import open_page

    from healthd.exporters.report import report_json

    with TextMemoryService(forgets=False) as service:
        result = _run(_target(service))
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(report_json([result], "v", len(PROBES))), encoding="utf-8")
    page_file = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "report", "--from", str(saved), "--html", str(page_file)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    visit = open_page(browser, page_file.as_uri())
    page = visit.page
    row = page.locator("#failures-body tr", has_text="Who owns billing?").first
    said = row.locator("ul.served li").all_inner_texts()
    assert any("Alice looks after billing." in s and "read as: asserts @alice" in s for s in said)
    assert visit.console_errors == []


def test_the_default_reader_reads_each_statement_healthd_sends_as_it_is_meant():
    """A memory that stores the applied event's ``text`` serves healthd's own words back:
    an ended value must read as past ("It is no longer true that ..."), a new one as held."""
    from collections import defaultdict

    from healthd.reading import build_reader
    from healthd.reading.render import statement

    reader = build_reader("default")
    held = defaultdict(set)
    for event in EVENTS:
        for f in (event.fact, event.previous):
            if f is not None:
                held[f.key].add(f.value)
    kinds = set()
    for event in EVENTS:
        text = statement(event)
        reading = reader.read(text, event.fact.key, sorted(held[event.fact.key]))
        if event.type == "invalidated":
            assert event.fact.value in reading.negated, text
            assert event.fact.value not in reading.asserted, text
        else:
            assert event.fact.value in reading.asserted, text
        if event.previous is not None and event.previous.value != event.fact.value:
            before = event.previous
            old = reader.read(text, before.key, sorted(held[before.key]))
            assert before.value in old.negated and before.value not in old.asserted, text
        kinds.add((event.type, event.previous is not None and event.previous.key != event.fact.key))
    assert ("invalidated", False) in kinds and ("revised", False) in kinds


class FixedTextMemory(ServedMemory):
    """Serves the same items whatever it is given, and so reports no key changed."""

    def changed_keys(self, at: datetime) -> set:
        return set()


def test_a_fixed_text_is_read_again_when_the_key_gains_the_value_it_names():
    """The item names Carol before the timeline does; once Carol owns billing the same item,
    never re-asked, serves her as current: incremental reads what full mode reads."""
    events = _owner_events()
    items = [ServedItem("Carol looks after billing", "r1", T0)]
    runs = {
        mode: evaluate(
            events, FixedTextMemory(items), build_probe_set(events), name="m", kind="m", mode=mode
        )
        for mode in ("full", "incremental")
    }
    assert [s.counts for s in runs["incremental"].stages] == [s.counts for s in runs["full"].stages]
    assert runs["incremental"].stages[0].metrics["all"].coverage == 0.0
    (probe,) = runs["incremental"].probes
    assert [(f.value, status) for f, status in probe.retrieved] == [("@carol", "current")]
    assert runs["incremental"].metrics["all"].coverage == 1.0


class ReadsNothing:
    """A reader that finds no value in any text."""

    name, version, label = "nothing", "1", "nothing-1"

    def read(self, text, key, values):
        return Reading()


def test_the_reader_given_is_the_one_that_reads():
    events = _owner_events()
    items = [ServedItem("Carol looks after billing", "r1", T0)]
    result = evaluate(
        events,
        ServedMemory(items),
        build_probe_set(events),
        name="m",
        kind="m",
        reader=ReadsNothing(),
    )
    assert result.reader == "nothing-1"
    assert result.reading.as_dict() == {
        "items": 1,
        "unread": 1,
        "metadata_mismatch": 0,
        "invented": 0,
        "irrelevant": 0,  # the reader given reads nothing
    }
    assert result.probes[0].retrieved == ()


def test_every_item_whose_text_contradicts_its_metadata_is_counted():
    events = _owner_events()
    meta = {"subject": "billing", "predicate": "owners", "domain": "ownership"}
    items = [
        ServedItem("Alice handed billing over to Carol", "r1", T0, None, {**meta, "value": "@bob"}),
        ServedItem("Carol looks after billing", "r2", T0, None, {**meta, "value": "@alice"}),
    ]
    result = evaluate(events, ServedMemory(items), build_probe_set(events), name="m", kind="m")
    assert result.reading.metadata_mismatch == 2


def test_more_unread_items_are_counted_though_what_is_read_from_them_is_the_same():
    events = _owner_events()
    note = ServedItem("Prefers dark mode in the IDE", "r1", T0)
    memory = ServedMemory([note])
    replay = Replay(memory, build_probe_set(events))
    replay.step(events[0])
    assert replay.reading_counts().as_dict() == {
        "items": 1,
        "unread": 1,
        "metadata_mismatch": 0,
        "invented": 0,
        "irrelevant": 1,  # a note naming no subject, for an owners key
    }
    memory.items = (note, ServedItem("Drinks tea at four", "r2", T0))  # no fact either way
    replay.step(events[1])
    assert replay.reading_counts().as_dict() == {
        "items": 2,
        "unread": 2,
        "metadata_mismatch": 0,
        "invented": 0,
        "irrelevant": 2,
    }


def test_items_a_memory_no_longer_serves_leave_the_reading_counts():
    events = _owner_events()
    memory = ServedMemory([ServedItem("Prefers dark mode in the IDE", "r1", T0)])
    replay = Replay(memory, build_probe_set(events))
    replay.step(events[0])
    assert replay.reading_counts().as_dict() == {
        "items": 1,
        "unread": 1,
        "metadata_mismatch": 0,
        "invented": 0,
        "irrelevant": 1,
    }
    memory.items = ()  # the next answer serves nothing
    replay.step(events[1])
    assert replay.reading_counts().as_dict() == {"items": 0, "unread": 0, "metadata_mismatch": 0}


META = {"subject": "billing", "predicate": "owners", "domain": "ownership"}
SERVED = {  # what a stage serves, and the reading counts that follow from it
    "alice": (
        (ServedItem("Alice looks after billing", "r1", T0, None, {**META, "value": "@alice"}),),
        {"items": 1, "unread": 0, "metadata_mismatch": 0, "invented": 0, "irrelevant": 0},
    ),
    "handover": (  # Carol read from the text, @bob in its metadata
        (
            ServedItem(
                "Alice handed billing over to Carol", "r2", T0, None, {**META, "value": "@bob"}
            ),
        ),
        {"items": 1, "unread": 0, "metadata_mismatch": 1, "invented": 0, "irrelevant": 0},
    ),
    "nothing": ((), {"items": 0, "unread": 0, "metadata_mismatch": 0}),
}


@pytest.mark.parametrize(
    "order", [("alice", "handover", "nothing"), ("alice", "nothing", "handover")]
)
def test_reading_counts_asked_after_each_stage_follow_what_each_answer_serves(order):
    """The daemon asks for the counts after every run: each run's counts are those of what
    the answers serve then, whichever way the served items changed, not the counts first asked."""
    events = _owner_events()
    memory = ServedMemory([])
    replay = Replay(memory, build_probe_set(events))
    for event, served in zip(events, order, strict=True):
        memory.items, counts = SERVED[served]
        replay.step(event)
        assert replay.reading_counts().as_dict() == counts, served
