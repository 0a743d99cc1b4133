"""The stand-in LLM answers like an OpenAI-compatible server, and never guesses."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from typing import Any

import pytest

from healthd.testing.standin_llm import StandInLLM


def _post(server: StandInLLM, path: str, body: Any) -> tuple[int, Any]:
    request = urllib.request.Request(
        server.base_url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        raw, status = error.read(), error.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


def test_a_prompt_no_responder_knows_is_refused_not_guessed() -> None:
    with StandInLLM() as server:
        status, body = _post(
            server,
            "/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "what is 2+2?"}]},
        )
    assert status == 400
    assert "no stand-in responder" in body["error"]["message"]


def test_embeddings_are_the_real_model() -> None:
    pytest.importorskip("tokenizers")
    texts = ["A man is eating food.", "A man is eating a piece of bread.", "The stock fell."]
    with StandInLLM() as server:
        status, body = _post(server, "/embeddings", {"model": "all-MiniLM-L6-v2", "input": texts})
    assert status == 200
    food, bread, stock = (item["embedding"] for item in body["data"])
    assert len(food) == 384

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
            sum(x * x for x in a) * sum(y * y for y in b)
        )

    assert cosine(food, bread) > 0.7 > cosine(food, stock)


@pytest.mark.parametrize(("fault", "status"), [("garbage", 200), ("error", 500)])
def test_faults_on_demand(fault: str, status: int) -> None:
    with StandInLLM(fault=fault) as server:
        got, body = _post(server, "/embeddings", {"model": "healthd-hashing", "input": "x"})
        assert server.requests[0]["model"] == "healthd-hashing"
    assert got == status
    if fault == "garbage":
        assert isinstance(body, bytes)


def test_a_body_that_is_not_json_is_refused() -> None:
    with StandInLLM() as server:
        request = urllib.request.Request(server.base_url + "/embeddings", data=b"{nope")
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(request, timeout=30)
    assert error.value.code == 400
