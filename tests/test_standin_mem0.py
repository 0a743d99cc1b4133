"""The stand-in's Mem0 responder answers Mem0 2.2's own extraction prompt (built here by
Mem0's own functions) in the JSON shape Mem0 parses, deterministically, and never guesses."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from healthd.testing.standin_llm import StandInLLM, UnknownPrompt, complete, responders
from healthd.testing.standin_llm.mem0 import UnreadableTurn
from healthd.testing.standin_llm.mem0 import respond as respond_any


def respond(request: dict[str, Any]) -> str | None:
    """The responder as it was before styles (``verbatim``), whose answers these pin."""
    return respond_any(request, "verbatim")


# mem0 reads MEM0_TELEMETRY once, when first imported: imported here before any target
# turns it off, the mem0 targets in this process would refuse to run
os.environ["MEM0_TELEMETRY"] = "False"
prompts = pytest.importorskip("mem0.configs.prompts", reason="the mem0 extra is not installed")
utils = pytest.importorskip("mem0.memory.utils")


def mem0_request(turns: list[str], existing: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The chat request Mem0's ``add(infer=True)`` sends, made as Mem0 makes it."""
    messages = [{"role": "user", "content": text} for text in turns]
    user = prompts.generate_additive_extraction_prompt(
        existing_memories=existing or [],
        new_messages=utils.parse_messages(messages),
        last_k_messages=[],
    )
    return {
        "model": "team-extractor",
        "messages": [
            {"role": "system", "content": prompts.ADDITIVE_EXTRACTION_PROMPT},
            {"role": "user", "content": user},
        ],
        "response_format": {"type": "json_object"},
    }


def test_one_grounded_memory_per_turn_in_mem0s_json_shape() -> None:
    answer = respond(
        mem0_request(
            [
                "(2026-03-01 09:00 UTC) Billing is owned by @alice and @bob.",
                "(2026-03-02 10:00 UTC) It is no longer true that auth-service depends on kafka 3.1.",
            ]
        )
    )
    assert answer is not None
    assert json.loads(answer) == {
        "memory": [
            {
                "id": "0",
                "text": "As of 2026-03-01, billing is owned by @alice and @bob.",
                "attributed_to": "user",
                "linked_memory_ids": [],
            },
            {
                "id": "1",
                "text": "As of 2026-03-02, auth-service no longer depends on kafka 3.1.",
                "attributed_to": "user",
                "linked_memory_ids": [],
            },
        ]
    }
    assert respond(mem0_request(["(2026-03-01 09:00 UTC) Billing is owned by @alice."])) == (
        respond(mem0_request(["(2026-03-01 09:00 UTC) Billing is owned by @alice."]))
    )


def test_what_an_existing_memory_already_says_is_not_extracted_again() -> None:
    existing = [
        {"id": "0", "text": "As of 2026-03-01, billing is owned by @bob (replacing @alice)."}
    ]
    again = respond(mem0_request(["(2026-04-01 09:00 UTC) Billing is owned by @bob."], existing))
    assert again is not None and json.loads(again) == {"memory": []}
    changed = respond(
        mem0_request(["(2026-04-01 09:00 UTC) Billing is owned by @carol."], existing)
    )
    assert changed is not None and len(json.loads(changed)["memory"]) == 1


def test_another_prompt_is_not_its_own_and_an_unknown_turn_is_refused() -> None:
    other = {"messages": [{"role": "user", "content": "What is the capital of France?"}]}
    assert respond(other) is None
    with pytest.raises(UnknownPrompt):
        complete(other, responders())
    with pytest.raises(UnreadableTurn, match="cannot read this turn"):
        respond(mem0_request(["I moved billing over to Carol last week"]))


def test_served_over_http_as_mem0s_openai_client_asks() -> None:
    from openai import OpenAI

    with StandInLLM(style="verbatim") as server:
        client = OpenAI(base_url=server.base_url, api_key="not-a-key", max_retries=0)
        request = mem0_request(["(2026-03-01 09:00 UTC) Auth-service is written in go."])
        done = client.chat.completions.create(
            model=request["model"],
            messages=request["messages"],
            response_format={"type": "json_object"},
        )
    content = done.choices[0].message.content
    assert content is not None
    assert json.loads(content)["memory"][0]["text"] == (
        "As of 2026-03-01, auth-service is written in go."
    )


def test_noise_varies_a_share_of_the_memories_from_one_replay_to_the_next() -> None:
    """`noise`: the n-th time the same turns are asked about, each memory is, with the
    share's probability (drawn from the seed, the turns and n), skipped or rephrased;
    replayed again with the same seed, the same draws; without noise, every replay alike."""
    from healthd.testing.standin_style import Noise

    turns = [f"(2026-01-0{d} 09:00 UTC) Service-{d} is owned by @owner{d}." for d in range(1, 10)]
    request = mem0_request(turns)

    def replays(share: float, seed: int = 0, n: int = 6) -> list[list[str]]:
        noise = Noise(share)
        return [
            [
                m["text"]
                for m in json.loads(respond_any(request, "varied", seed, noise=noise))["memory"]
            ]
            for _ in range(n)
        ]

    calm = replays(0.0)
    assert all(r == calm[0] for r in calm) and len(calm[0]) >= 9
    noisy = replays(0.5)
    assert len({tuple(r) for r in noisy}) > 1  # the replays differ
    assert replays(0.5) == noisy  # the same seed draws the same noise
    assert replays(0.5, seed=1) != noisy
    changed = sum(len(set(calm[0]) - set(r)) for r in noisy) / (len(noisy) * len(calm[0]))
    assert 0.25 < changed < 0.75  # about the share asked for
    with pytest.raises(ValueError, match="noise must be a share from 0 to 1"):
        Noise(1.5)
