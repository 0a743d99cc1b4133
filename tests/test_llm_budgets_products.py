"""LLM budgets on the other LLM-backed targets (Graphiti's episodes, LangMem's manager, Zep,
Mem0 Platform), as on Mem0 (tests/test_llm_budgets.py): a run that would exceed
`max_llm_calls_per_run` stops before the call that would, fails with one line naming the
budget, and the next run resumes where it stopped; together the runs send the other end
exactly what an unbudgeted run sends (no event replayed twice or lost) and end on its scores.

The other end is checked for what it received: the stand-in LLM's own log of requests (for
Graphiti and LangMem, whose own clients healthd counts) and the imitation's log of adds and
episodes (for Zep and Mem0 Platform, whose own LLM calls are made inside the service and are
not seen: there the calls counted are healthd's requests, `ingest` and `search`). Each runs
the first events of the bundled example, as a file source, through a daemon."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from healthd.cli import example_timeline_path
from healthd.testing.standin_llm import StandInLLM

os.environ["MEM0_TELEMETRY"] = "False"
pytest.importorskip("mem0", reason="the mem0 extra is not installed")

from test_llm_accounting import KEY_VAR, sample
from test_llm_budgets import daemon_runs

pytestmark = pytest.mark.product

EVENTS = 10
NAME = "budgeted"


def config_for(directory: Path, target: str, budget: str = "") -> Path:
    """A daemon's config: the first events of the bundled example, and ``target`` (its
    TOML, with ``{budget}`` where the budget line goes) under [targets.budgeted]."""
    directory.mkdir()
    lines = Path(example_timeline_path()).read_text().splitlines()[:EVENTS]
    timeline = directory / "timeline.jsonl"
    timeline.write_text("\n".join(lines) + "\n")
    config = directory / "healthd.toml"
    config.write_text(
        f"""
state_path = {json.dumps(str(directory / "state.sqlite"))}

[sources.head]
kind = "file"
path = {json.dumps(str(timeline))}

[targets.{NAME}]
{target.format(budget=budget)}
"""
    )
    return config


def graphiti(base_url: str) -> str:
    return f"""kind = "graphiti"
shadow = true
ingest = "episodes"
search = "valid"
{{budget}}

[targets.{NAME}.graphiti.llm]
client = "openai_generic"
model = "standin"
small_model = "standin"
base_url = "{base_url}"

[targets.{NAME}.graphiti.embedder]
provider = "openai"
model = "healthd-hashing"
base_url = "{base_url}"
dimensions = 256
"""


def langmem(base_url: str) -> str:
    return f"""kind = "langmem"
shadow = true
embedder = "hashing"
{{budget}}

[targets.{NAME}.langmem]
enable_deletes = true

[targets.{NAME}.langmem.model]
model = "team-chat-7b"
model_provider = "openai"
base_url = "{base_url}"
api_key_env = "{KEY_VAR}"
temperature = 0
"""


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInLLM]:
    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with StandInLLM() as server:
        yield server


def resumes_to_the_unbudgeted_run(
    tmp_path: Path,
    target: str,
    budget: int,
    sent: Callable[[], int],
    runs: int = 3,
    stopped_before: str = "the call",
    calls_a_write: int = 1,
) -> list[dict[str, Any]]:
    """The unbudgeted run, then the budgeted ones until one succeeds: what the other end
    received (``sent``) and the final scores are the same; each failed run said one line
    naming the budget and left none of it."""
    (free,), _, _ = daemon_runs(config_for(tmp_path / "free", target), 1, target=NAME)
    assert free["result"] == "success"
    unbudgeted = sent()
    config = config_for(tmp_path / "budgeted", target, f"max_llm_calls_per_run = {budget}")
    outcomes, logs, scraped = daemon_runs(config, runs + 2, target=NAME)
    assert [o["result"] for o in outcomes[:-1]] == ["failure"] * (len(outcomes) - 1)
    assert outcomes[-1]["result"] == "success" and len(outcomes) >= 2
    assert sent() - unbudgeted == unbudgeted  # the budgeted runs sent it all, once
    assert outcomes[-1]["metrics"] == free["metrics"]
    for outcome, captured, (metrics, page) in zip(outcomes[:-1], logs, scraped, strict=False):
        (line,) = [e for e in captured if e["event"] == "run failed"]
        error = outcome["error"]
        assert error == line["error"] and "\n" not in error and error in page
        assert error.startswith("LLM budget max_llm_calls_per_run reached: ")
        assert f"calls this run, of {budget}: stopped before {stopped_before}" in error
        assert "the next run resumes from there" in error
        left = sample(metrics, "healthd_llm_budget_remaining", target=NAME)
        assert left < calls_a_write  # what is left is less than the refused write needed
    return outcomes


@pytest.mark.slow
def test_graphiti_episodes_past_a_calls_budget_resume_next_run(
    llm: StandInLLM, tmp_path: Path
) -> None:
    outcomes = resumes_to_the_unbudgeted_run(
        tmp_path, graphiti(llm.base_url), 30, lambda: len(llm.requests)
    )
    assert outcomes[-1]["llm"]["by_purpose"]["extraction"]["calls"] > 0


@pytest.mark.slow
def test_langmem_past_a_calls_budget_resumes_next_run(llm: StandInLLM, tmp_path: Path) -> None:
    outcomes = resumes_to_the_unbudgeted_run(
        tmp_path, langmem(llm.base_url), 4, lambda: len(llm.requests)
    )
    assert outcomes[-1]["llm"]["by_purpose"]["extraction"]["calls"] > 0


def test_mem0_platform_past_a_calls_budget_resumes_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from healthd.testing.mem0_platform import DEFAULT_KEY, Mem0Platform

    monkeypatch.setenv("MEM0_API_KEY", DEFAULT_KEY)
    hashing = {"embedding_model": "healthd-hashing", "embedding_dims": 256}
    with Mem0Platform(processing_seconds=0.05, style="verbatim", **hashing) as platform:
        user = f"shadow-{uuid.uuid4().hex[:8]}"
        target = f"""kind = "mem0"
deployment = "platform"
shadow = true
host = "{platform.base_url}"
user_id = "{user}"
{{budget}}
"""

        def adds() -> int:
            return sum(1 for r in platform.requests if r[1] == "/v3/memories/add/")

        # the budget counts searches too (never refused): it must leave room for an add
        resumes_to_the_unbudgeted_run(tmp_path, target, 40, adds)


@pytest.mark.slow
def test_zep_past_a_calls_budget_resumes_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from healthd.testing.zep import DEFAULT_KEY, Zep

    monkeypatch.setenv("ZEP_API_KEY", DEFAULT_KEY)
    with Zep(style="verbatim") as zep:
        target = f"""kind = "zep"
shadow = true
base_url = "{zep.base_url}"
user_id = "{uuid.uuid4().hex}"
{{budget}}
"""

        def episodes() -> int:
            return sum(1 for r in zep.requests if r[0] == "POST" and r[1].endswith("/episodes"))

        resumes_to_the_unbudgeted_run(tmp_path, target, 40, episodes)


@pytest.mark.slow
def test_a_letta_agents_turn_that_could_pass_a_calls_budget_waits_for_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """healthd learns of a turn's calls only from its answer: a turn is sent only while its
    max_steps calls fit in what is left, so no run passes the budget."""
    pytest.importorskip("letta_client", reason="the letta extra is not installed")
    from healthd.testing.letta import DEFAULT_PASSWORD, Letta

    monkeypatch.setenv("LETTA_API_KEY", DEFAULT_PASSWORD)
    with Letta(style="verbatim") as letta:
        target = f"""kind = "letta"
shadow = true
base_url = "{letta.base_url}"
agent_name = "shadow-{uuid.uuid4().hex[:8]}"
embedding = "openai/all-MiniLM-L6-v2"
max_steps = 3
{{budget}}
"""

        def turns() -> int:
            return sum(1 for r in letta.requests if r[0] == "POST" and r[1].endswith("/messages"))

        outcomes = resumes_to_the_unbudgeted_run(
            tmp_path,
            target,
            8,
            turns,
            stopped_before="an agent turn of up to 3 calls",
            calls_a_write=3,
        )
    assert 0 < outcomes[-1]["llm"]["calls"] <= 8  # the run that finished stayed within it


@pytest.mark.parametrize("kind", ["zep", "mem0:deployment=platform"])
def test_a_tokens_budget_on_a_hosted_target_is_one_line_and_exit_2(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Zep and Mem0 Platform report no tokens: a tokens budget cannot be kept, and is refused
    (a calls budget is kept on healthd's requests)."""
    from healthd.cli import main

    target = kind + ("," if ":" in kind else ":") + "shadow=on,max_llm_tokens_per_day=1000"
    assert main(["evaluate", "--target", target]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "max_llm_tokens_per_day" in line and "reports no tokens" in line
