"""The LLM reader against a local OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_judge import FakeJudge
from text_memory_service import TextMemoryService

from healthd.errors import ReaderError
from healthd.model import FactKey
from healthd.reading import build_reader
from healthd.reading.labelled import check_reader, load_labelled

OTHERS = str(Path(__file__).parents[1] / "healthd" / "data" / "reader_labelled_others.jsonl")


def healthd(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, COLUMNS="120", **env),
    )


def test_the_judge_is_asked_at_temperature_0_with_a_token_and_its_label_names_the_model(
    monkeypatch,
):
    monkeypatch.setenv("JUDGE_TEST_TOKEN", "s3cret")
    with FakeJudge(token="s3cret") as judge:
        reader = build_reader(
            f"llm:base_url={judge.url},model=fake-judge-1,token_env=JUDGE_TEST_TOKEN"
        )
        assert reader.label == "llm-2:fake-judge-1"
        reading = reader.read(
            "Alice handed billing over to Bob", FactKey("billing", "owners"), ["@alice", "@bob"]
        )
    assert (reading.asserted, reading.negated) == (("@bob",), ("@alice",))
    assert judge.requests[0]["model"] == "fake-judge-1"


@pytest.mark.slow
def test_reader_check_and_evaluate_run_the_judge_and_name_it_in_the_version():
    with FakeJudge() as judge, TextMemoryService() as service:
        spec = f"llm:base_url={judge.url},model=fake-judge-1"
        done = healthd("reader-check", "--reader", spec)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("reader llm-2:fake-judge-1 on ")
        target = f"http:base_url={service.url},namespace=healthd/shadow,shadow=on"
        done = healthd("evaluate", "--reader", spec, "--target", target, "--format", "json")
        assert done.returncode == 0, done.stderr
    assert '"version": "' in done.stdout and '+llm-2:fake-judge-1"' in done.stdout
    assert '"reader": "llm-2:fake-judge-1"' in done.stdout


def test_a_judge_that_is_down_is_one_line_and_exit_2():
    done = healthd(
        "reader-check", "--reader", "llm:base_url=http://127.0.0.1:1/v1,model=m,max_retries=0"
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("healthd: error: reader 'llm' at http://127.0.0.1:1/v1: ")


@pytest.mark.parametrize(
    ("garbage", "message"),
    [
        ("The owner is Bob.", "the answer is not JSON: 'The owner is Bob.'"),
        ('{"asserts": "@bob"}', "'asserts' is not a list of strings"),
        ('{"asserts": ["@carol"]}', "'asserts' names ['@carol'], not among the key's values"),
    ],
)
def test_a_judge_that_answers_garbage_is_one_clear_error(garbage, message):
    with FakeJudge() as judge:
        judge.garbage = garbage
        reader = build_reader(f"llm:base_url={judge.url},model=fake-judge-1")
        with pytest.raises(ReaderError) as caught:
            reader.read("Bob owns billing", FactKey("billing", "owners"), ["@alice", "@bob"])
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_wrong_model_or_missing_token_names_the_problem_without_the_token():
    with FakeJudge(token="s3cret") as judge:
        reader = build_reader(f"llm:base_url={judge.url},model=fake-judge-1,max_retries=0")
        with pytest.raises(ReaderError, match="401"):
            reader.read("Bob owns billing", FactKey("billing", "owners"), ["@bob"])
    with pytest.raises(ReaderError, match=r"token_env\) is not set"):
        build_reader("llm:base_url=http://127.0.0.1:1/v1,model=m,token_env=NOPE_NOT_SET")
    with pytest.raises(ReaderError, match="option model"):
        build_reader("llm:base_url=http://127.0.0.1:1/v1")


def _labels(path: str | None) -> dict[tuple[str, str, str, tuple[str, ...]], str]:
    """What a judge that read every item of a labelled set exactly as labelled would answer."""
    return {
        (item.text, item.key.subject, item.key.predicate, item.values): json.dumps(
            {
                "asserts": sorted(item.asserts),
                "negates": sorted(item.negates),
                "other": list(item.other),
            }
        )
        for item in load_labelled(path)
    }


@pytest.mark.parametrize("path", [None, OTHERS])
def test_the_prompt_carries_each_labelled_item_and_a_judge_reading_as_labelled_scores_1(path):
    """The measurable half of the LLM judge without a model: every shipped item reaches the
    judge whole (its text, subject, predicate and values), and a judge that answers each as
    labelled, `other` included, scores 1.000 on every class: what a real model scores
    through this path is the model's alone."""
    labels = _labels(path)
    asked: list[dict[str, object]] = []

    def as_labelled(question: dict[str, object]) -> str:
        asked.append(question)
        values = question["values"]
        assert isinstance(values, list)
        key = (question["text"], question["subject"], question["predicate"], tuple(values))
        return labels[key]  # type: ignore[index]

    items = load_labelled(path)
    with FakeJudge(answer=as_labelled) as judge:
        result = check_reader(build_reader(f"llm:base_url={judge.url},model=fake-judge-1"), items)
        system = judge.requests[0]["messages"][0]["content"]
    assert [(q["text"], q["subject"], q["predicate"], q["values"]) for q in asked] == [
        (i.text, i.key.subject, i.key.predicate, list(i.values)) for i in items
    ]
    assert '"other"' in system and "not among the listed ones" in system
    assert result.errors == []
    for name, counts in result.classes.items():
        assert counts.precision == counts.recall == 1.0, name
    assert result.classes["other"].labelled == (7 if path is None else 49)


def test_the_stand_in_judge_by_default_scores_the_default_reader_again():
    """Why the README gives no accuracy for the LLM judge: the stand-in answers with the
    default reader, so reader-check through it is the default reader's figures."""
    items = load_labelled(OTHERS)
    with FakeJudge() as judge:
        through = check_reader(build_reader(f"llm:base_url={judge.url},model=fake-judge-1"), items)
    direct = check_reader(build_reader("default"), items)
    assert through.as_dict()["classes"] == direct.as_dict()["classes"]


_READ = '{"asserts": ["@bob"], "negates": ["@alice"], "other": ["Carol Diaz"]}'


@pytest.mark.parametrize(
    "content",
    [
        _READ,
        f"```json\n{_READ}\n```",  # an endpoint ignoring response_format (Anthropic's layer)
        f"<think>Bob took billing over from Alice.</think>\n\n{_READ}",  # a reasoning model
        f"<think>\nok\n</think>\n```\n{_READ}\n```\n",
    ],
)
def test_the_answer_is_read_as_real_endpoints_write_it(content):
    with FakeJudge(answer=lambda question: content) as judge:
        reader = build_reader(f"llm:base_url={judge.url},model=fake-judge-1")
        reading = reader.read(
            "Bob and Carol Diaz took billing over from Alice",
            FactKey("billing", "owners"),
            ["@alice", "@bob"],
        )
    assert (reading.asserted, reading.negated, reading.other) == (
        ("@bob",),
        ("@alice",),
        ("Carol Diaz",),
    )


def test_an_answer_without_other_still_reads():
    with FakeJudge(answer=lambda question: '{"asserts": ["go"], "negates": []}') as judge:
        reader = build_reader(f"llm:base_url={judge.url},model=fake-judge-1")
        reading = reader.read("gateway is written in Go", FactKey("gateway", "language"), ["go"])
    assert (reading.asserted, reading.other) == (("go",), ())


@pytest.mark.parametrize(
    ("message", "finish_reason", "content", "error"),
    [
        (
            {"content": None, "refusal": "I'm sorry, I cannot assist with that request."},
            "stop",
            "",
            'the judge refused: "I\'m sorry, I cannot assist with that request."',
        ),
        ({}, "length", '{"asserts": ["@b', "cut off at the token limit (finish_reason 'length')"),
        ({}, "stop", '{"other": ["@bob"]}', "'other' names ['@bob'], which are the key's values"),
        ({}, "stop", "```json\nnot json\n```", "the answer is not JSON"),
        # (json.loads raises neither as JSONDecodeError: a plain ValueError, RecursionError)
        ({}, "stop", '{"asserts": [], "n": ' + "7" * 5000 + "}", "the answer is not JSON"),
        ({}, "stop", "[" * 100_000 + "]" * 100_000, "the answer is not JSON"),
    ],
)
def test_a_refusal_a_cut_off_answer_or_a_listed_value_as_other_is_one_clear_error(
    message, finish_reason, content, error
):
    with FakeJudge(answer=lambda question: content) as judge:
        judge.message = message
        judge.finish_reason = finish_reason
        reader = build_reader(f"llm:base_url={judge.url},model=fake-judge-1")
        with pytest.raises(ReaderError) as caught:
            reader.read("Bob owns billing", FactKey("billing", "owners"), ["@alice", "@bob"])
    assert error in str(caught.value) and "\n" not in str(caught.value)
