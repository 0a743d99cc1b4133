"""The LLM reader against a local OpenAI-compatible endpoint."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fake_judge import FakeJudge
from text_memory_service import TextMemoryService

from healthd.errors import ReaderError
from healthd.model import FactKey
from healthd.reading import build_reader


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
        assert reader.label == "llm-1:fake-judge-1"
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
        assert done.stdout.startswith("reader llm-1:fake-judge-1 on ")
        target = f"http:base_url={service.url},namespace=healthd/shadow,shadow=on"
        done = healthd("evaluate", "--reader", spec, "--target", target, "--format", "json")
        assert done.returncode == 0, done.stderr
    assert '"version": "' in done.stdout and '+llm-1:fake-judge-1"' in done.stdout
    assert '"reader": "llm-1:fake-judge-1"' in done.stdout


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
