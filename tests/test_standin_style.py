"""The stand-ins' ``style``: ``verbatim`` answers exactly as the stand-ins did before styles
existed (the prompts and answers of the bundled example's runs, recorded before the change,
in ``tests/standin_verbatim/``); ``varied`` reads English, not healthd's grammar, and writes
each behaviour :mod:`healthd.testing.standin_style` documents, in about its documented share,
the same for a seed."""

from __future__ import annotations

import ast
import json
import lzma
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from healthd.testing import standin_style
from healthd.testing.agentcore_events import extract
from healthd.testing.standin_llm import StandInLLM, complete, responders
from healthd.testing.standin_style import NEIGHBOUR, PROPORTIONS, Claim, read, write

RECORDED = Path(__file__).parent / "standin_verbatim"


def recorded(name: str) -> Iterator[dict[str, Any]]:
    for line in lzma.decompress((RECORDED / f"{name}.jsonl.xz").read_bytes()).splitlines():
        if line.strip():
            yield json.loads(line)


# -- verbatim: today's answers, exactly ----------------------------------------------------------


@pytest.mark.parametrize("product", ["mem0", "graphiti"])
def test_verbatim_answers_every_recorded_prompt_as_before(product: str) -> None:
    """Every chat request Mem0 (135) and Graphiti (314) sent the stand-in on the bundled
    example, answered as the stand-in answered it before styles existed."""
    found = responders()
    pairs = list(recorded(product))
    assert len(pairs) > 100
    for pair in pairs:
        assert complete(pair["request"], found, "verbatim") == pair["answer"]


def test_verbatim_agentcore_extraction_is_as_before() -> None:
    pairs = list(recorded("agentcore"))
    assert len(pairs) == 135
    for pair in pairs:
        got = [[s.text, list(s.topic), s.negated] for s in extract(pair["text"])]
        assert got == pair["statements"]


def test_varied_is_the_default_everywhere_and_a_style_is_checked() -> None:
    from healthd.testing.agentcore import AgentCoreEmulator
    from healthd.testing.agentcore_events import EventPlane

    assert StandInLLM().style == "varied"
    with AgentCoreEmulator() as emulator:
        assert emulator.events.style == "varied"
        with pytest.raises(ValueError, match="style must be one of varied, verbatim"):
            EventPlane(emulator, style="poetic")
    with pytest.raises(ValueError, match="style must be one of varied, verbatim"):
        StandInLLM(style="poetic")


# -- varied reads English, not healthd's grammar -------------------------------------------------


def test_the_varied_reader_does_not_use_healthds_grammar() -> None:
    source = Path(standin_style.__file__).read_text()
    assert "healthd.memory" not in source and "healthd.reading" not in source
    assert "STATEMENT" not in source


@pytest.mark.parametrize(
    ("text", "subject", "relation", "value", "negated", "old"),
    [
        ("Kim runs the search service.", "Kim", "runs", "the search service", False, None),
        ("The exporter is written in Go", "The exporter", "written in", "Go", False, None),
        ("Checkout no longer depends on kafka 3.1.", "Checkout", "depends on kafka", "3.1",
         True, None),
        ("The team said that the broker of orders is Pulsar (formerly Kafka).", "orders",
         "broker", "Pulsar", False, "Kafka"),
        ('Its owner changed from "Ana" to "Ben".', "It", "owner", "Ben", False, "Ana"),
        ("@bob and @carol own billing, and Kim runs search.", "billing", "owned by",
         "@bob and @carol", False, None),
        ("It is not true that refunds exists.", "refunds", "exists", "true", True, None),
    ],
)  # fmt: skip
def test_clauses_are_read_as_english_whoever_wrote_them(
    text: str, subject: str, relation: str, value: str, negated: bool, old: str | None
) -> None:
    claim, *_ = read(text)
    assert (claim.subject, claim.relation, claim.value, claim.negated, claim.old) == (
        subject, relation, value, negated, old,
    )  # fmt: skip


def test_mem0_varied_reads_a_persons_turn_that_verbatim_refuses() -> None:
    prompts = pytest.importorskip("mem0.configs.prompts", reason="the mem0 extra is not installed")
    utils = pytest.importorskip("mem0.memory.utils")
    from healthd.testing.standin_llm.mem0 import UnreadableTurn, respond

    turns = [{"role": "user", "content": "Since 2026-02-01 Kim runs the search service."}]
    request = {
        "messages": [
            {"role": "system", "content": prompts.ADDITIVE_EXTRACTION_PROMPT},
            {
                "role": "user",
                "content": prompts.generate_additive_extraction_prompt(
                    existing_memories=[], new_messages=utils.parse_messages(turns),
                    last_k_messages=[],
                ),
            },
        ]
    }  # fmt: skip
    with pytest.raises(UnreadableTurn):
        respond(request, "verbatim")
    texts = [m["text"] for seed in range(6) for m in json.loads(respond(request, "varied", seed) or "")["memory"]]  # fmt: skip
    assert texts and any("search service" in t for t in texts)


# -- varied writes each behaviour, in about its documented share ---------------------------------

SUBJECTS = ["billing", "checkout", "payments-v1", "payments-v2", "auth-service", "search"]
SAID = [
    "{s} is owned by @alice",
    "{s} is written in go (replacing node)",
    "the broker of {s} is kafka",
    "it is no longer true that {s} depends on express 4.18.2",
    "{s} depends on postgres 16 (replacing 15)",
    "the source of truth of {s} is ledger-v2",
    "{s} exists",
    "{s} no longer exists",
]


def corpus(seed: int) -> list[tuple[Claim, list[standin_style.Memory], str]]:
    out = []
    for n in range(40):
        for subject in SUBJECTS:
            for shape in SAID:
                said = f"(2026-01-{1 + n % 28:02d}) " + shape.format(s=subject) + f" #{n}"
                (claim,) = read(shape.format(s=subject))
                context = [c for other in SUBJECTS if other != subject for c in read(
                    f"{other} is written in java")][: 1 + n % 3]  # fmt: skip
                memories = write(claim, seed=seed, key=said, context=context, said=said)
                out.append((claim, memories, said))
    return out


def test_varied_is_deterministic_for_a_seed_and_moves_with_it() -> None:
    first = [[m.text for m in ms] for _, ms, _ in corpus(7)]
    assert first == [[m.text for m in ms] for _, ms, _ in corpus(7)]
    assert first != [[m.text for m in ms] for _, ms, _ in corpus(8)]


def test_each_behaviour_in_about_its_documented_share_and_as_its_text_shows() -> None:
    items = corpus(0)
    counts: Counter[str] = Counter()
    for claim, memories, said in items:
        if not memories:
            counts["dropped"] += 1
            continue
        main, *extra = memories
        (kind,) = main.kinds
        counts[kind] += 1
        words = main.text.lower()
        if kind == "implicit":
            assert claim.subject.lower() not in words
            assert re.search(r"\b(it|its|they|their)\b", words)
        elif kind == "merged":
            assert claim.subject.lower() in words
            assert any(o in words for o in SUBJECTS if o != claim.subject), main.text
        elif kind == "invented":
            assert main.claim.value not in said and main.claim.value.lower() in words
        elif kind == "stale":
            if claim.old is not None:
                assert claim.old in main.text and claim.value not in main.text
            else:
                assert claim.negated and "no longer" not in words and "retired" not in words
        else:
            assert kind == "paraphrase"
            assert (claim.subject if claim.relation == "exists" else claim.value) in words
        for memory in extra:
            assert memory.kinds == {"neighbour"}
            assert memory.claim.subject != claim.subject and memory.claim.value == claim.value
            assert memory.claim.subject.lower() in memory.text.lower()
            counts["neighbour"] += 1
    total = len(items)
    changes = sum(1 for claim, _, _ in items if claim.old is not None or claim.negated)
    negated = sum(1 for claim, _, _ in items if claim.negated)
    share = dict(PROPORTIONS)
    assert counts["dropped"] / total == pytest.approx(share["dropped"], abs=0.02)
    valued = sum(1 for claim, _, _ in items if claim.relation != "exists")
    assert counts["invented"] / valued == pytest.approx(share["invented"], abs=0.02)
    assert counts["implicit"] / total == pytest.approx(share["implicit"], abs=0.03)
    assert counts["merged"] / total == pytest.approx(share["merged"], abs=0.03)
    assert counts["stale"] / changes == pytest.approx(share["stale"], abs=0.03)
    assert counts["neighbour"] / (total - negated) == pytest.approx(NEIGHBOUR, abs=0.03)
    registers = Counter(m.register for _, ms, _ in items for m in ms[:1])
    assert set(registers) == set(standin_style.REGISTERS)


def test_every_memory_reads_back_as_the_fact_it_states_its_subject_as_a_pronoun_if_implicit() -> (
    None
):
    """Whatever the register, the stand-in's own reading of a memory finds the fact it was
    written to state (a merged memory: first), so that consolidation can find it again."""
    checked = 0
    for _, memories, _ in corpus(3):
        for memory in memories:
            (got, *_) = read(memory.text)
            stated = memory.claim
            if "implicit" in memory.kinds:
                assert got.subject.casefold() in ("it", "they")
                assert (got.relation, got.value) == (stated.relation, stated.value)
            else:
                assert (got.topic, got.value.casefold(), got.negated) == (
                    stated.topic, stated.value.casefold(), stated.negated,
                ), memory.text  # fmt: skip
            checked += 1
    assert checked > 1500


# -- each target's stand-in writes them: the recorded prompts, answered varied ------------------


def _mem0_answers(seed: int = 0) -> list[tuple[str, list[str]]]:
    found = responders()
    out = []
    for pair in recorded("mem0"):
        user = pair["request"]["messages"][1]["content"]
        new = user.split("## New Messages", 1)[1].split("##", 1)[0]
        answer = complete(pair["request"], found, "varied", seed)
        texts = [m["text"] for m in json.loads(answer)["memory"]]
        out.append((new, texts))
    return out


def test_mem0_varied_memories_show_every_behaviour_on_the_bundled_examples_prompts() -> None:
    answers = _mem0_answers()
    texts = [t for _, ts in answers for t in ts]
    implicit = [t for t in texts if re.search(r"\b(it|its|they|their)\b", t, re.I)]
    merged = [t for t in texts if re.search(r"; |, and |\. Also, ", t)]
    invented = [t for t in texts if re.search(r"@(kim|lee|ana|ben|omar|priya|sven|yuki)\b|"
                r"Elixir|Pulsar|Rust\b|CockroachDB|Scala|RabbitMQ|NATS|Haskell|DynamoDB|Zig|"
                r"Clojure|Cassandra", t)]  # fmt: skip
    neighbour = [ts for _, ts in answers if len(ts) > 1]
    total = len(texts)  # the turns not already in an Existing Memory, about
    for found, share in [(implicit, 0.15), (merged, 0.15), (invented, 0.06),
                         (neighbour, NEIGHBOUR)]:  # fmt: skip
        assert 0.3 * share * total <= len(found) <= 2.5 * share * total + 3, (share, found)
    # a change is never in an Existing Memory yet: no memory of it is a dropped fact
    seeds = [answers, *(_mem0_answers(seed) for seed in range(1, 6))]
    changes = [
        (new, ts) for run in seeds for new, ts in run if re.search(r"replacing|no longer", new)
    ]
    dropped = [new for new, ts in changes if not ts]
    stale = [
        t
        for new, ts in changes
        for old in re.findall(r"\(replacing (@\w+|\w+)\)", new)
        for t in ts
        if re.search(rf"{re.escape(old)}\b", t) and "replacing" not in t
    ]
    assert 1 <= len(dropped) <= 0.15 * len(changes), dropped
    assert 1 <= len(stale) <= 0.2 * len(changes), stale
    assert answers == _mem0_answers()  # deterministic


def test_graphiti_varied_edges_show_the_behaviours_and_end_only_what_they_read() -> None:
    found = responders()
    facts: list[str] = []
    for pair in recorded("graphiti"):
        name = pair["request"]["response_format"]["json_schema"]["name"]
        if name == "ExtractedEdges":  # the entities recorded are verbatim's: left out
            messages = [
                {**m, "content": re.sub(r"<ENTITIES>.*?</ENTITIES>", "", m["content"], flags=re.S)}
                for m in pair["request"]["messages"]
            ]
            request = {**pair["request"], "messages": messages}
            answer = json.loads(complete(request, found, "varied"))
            facts.extend(edge["fact"] for edge in answer["edges"])
    assert any(re.match(r"(it|its|they|their)\b", f, re.I) for f in facts)
    assert any(re.search(r"; |, and |\. Also, ", f) for f in facts)
    assert any(re.search(r"Elixir|Pulsar|Rust\b|Scala|RabbitMQ|NATS|Haskell|@kim|@lee", f)
               or re.search(r"postgres (1[8-9]|2\d)\b", f) for f in facts)  # fmt: skip

    def ask(new: str, existing: list[str]) -> dict[str, Any]:
        listed = repr([{"idx": i, "fact": f} for i, f in enumerate(existing)])
        content = (f"<EXISTING FACTS>\n{listed}\n</EXISTING FACTS>\n"
                   f"<FACT INVALIDATION CANDIDATES>\n[]\n</FACT INVALIDATION CANDIDATES>\n"
                   f"<NEW FACT>\n{new}\n</NEW FACT>")  # fmt: skip
        request = {"messages": [{"role": "user", "content": content}],
                   "response_format": {"json_schema": {"name": "EdgeDuplicate"}}}  # fmt: skip
        return json.loads(complete(request, found, "varied"))

    assert ast.literal_eval(repr(ask("Billing is owned by @bob.", ["billing is owned by @alice."]))) == {
        "duplicate_facts": [], "contradicted_facts": [0]}  # fmt: skip
    assert ask("Billing is owned by @bob.", ["It is owned by @alice."]) == {
        "duplicate_facts": [], "contradicted_facts": []}  # fmt: skip


def test_agentcore_varied_records_show_the_behaviours_and_a_pronoun_record_is_never_updated() -> (
    None
):
    from healthd.testing.agentcore import AgentCoreEmulator
    from healthd.testing.agentcore_events import Strategy

    texts = [pair["text"] for pair in recorded("agentcore")]
    with AgentCoreEmulator() as emulator:
        emulator.events.configure(
            "healthd_shadow-a1b2c3d4e5",
            strategies=[Strategy("facts-a1b2c3d4e5", "healthd/{actorId}/facts")],
        )
        client_body = {"actorId": "shadow", "sessionId": "s1", "eventTimestamp": 1.0}
        for index, text in enumerate(texts):
            payload = [{"conversational": {"role": "USER", "content": {"text": text}}}]
            status, _ = emulator.events.route(
                "POST", ["", "memories", "healthd_shadow-a1b2c3d4e5", "events"],
                {**client_body, "eventTimestamp": float(index), "payload": payload},
            )  # fmt: skip
            assert status == 201
        emulator.events.consolidate_due()
        records = list(emulator.memories["healthd_shadow-a1b2c3d4e5"].records.values())
        decisions = Counter(d for _, d, _ in emulator.events.consolidations)
    contents = [r.content for r in records]
    live = [r.content for r in records if r.deleted_at is None]
    assert any(re.match(r"(it|its|they|their)\b", c, re.I) for c in live)
    assert any(re.search(r"; |, and |\. Also, ", c) for c in contents)
    assert decisions["ADD"] and decisions["UPDATE"] and decisions["NO-OP"]
    pronouns = [r for r in records if re.match(r"(it|they) ", r.content, re.I)]
    assert pronouns and all(r.deleted_at is None for r in pronouns)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["scripts/with_standin_llm.py", "--style", "poetic", "true"], "--style must be one of"),
        (["scripts/with_standin_llm.py", "--seed", "x", "true"], "is not a whole number"),
        (["scripts/with_standin_llm.py", "--noise", "2", "true"], "is not a share from 0 to 1"),
        (["-m", "healthd.testing.standin_llm", "--noise", "-0.5"], "must be a share from 0 to 1"),
        (["-m", "healthd.testing.standin_llm", "--style", "poetic"], "invalid choice: 'poetic'"),
        (["-m", "healthd.testing.agentcore_events", "--memory-id", "m", "--strategy-id", "s",
          "--style", "poetic"], "invalid choice: 'poetic'"),
    ],
)  # fmt: skip
def test_a_style_that_is_not_one_is_one_line_and_exit_2(argv: list[str], message: str) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, timeout=60, cwd=root
    )
    assert done.returncode == 2
    assert message in done.stderr and done.stdout == ""
