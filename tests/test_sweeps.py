"""Revalidation sweeps (a source stamping every fact still true, on its schedule) reach an
LLM-backed target as its `sweeps` option says: `subject` (the default), one statement per
subject, so one write (one extraction) where there were as many as the subject's facts;
`each`, every sweep event written as any other; `off`, none written. The JSON report's
`llm.sweeps` says which. Counted at the other end: the stand-in LLM's own log of LangMem's
extraction calls, and the Mem0 Platform imitation's log of adds; through `evaluate` and a
daemon (where a budget reached at a sweep's group leaves the whole group to the next run)."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from healthd.evaluator import evaluate
from healthd.memory import build_memory, parse_target
from healthd.model import ChangeEvent, Fact
from healthd.probes import build_probe_set
from healthd.testing.standin_llm import StandInLLM

os.environ["MEM0_TELEMETRY"] = "False"
pytest.importorskip("mem0", reason="the mem0 extra is not installed")

pytestmark = pytest.mark.product

T0 = datetime(2026, 1, 5, 9, tzinfo=UTC)
FACTS = [
    ("auth-service", "language", "node", "tech"),
    ("auth-service", "dependency:express", "4.18.2", "tech"),
    ("auth-service", "sso", "SAML single sign-on for enterprise tenants", "requirement"),
    ("billing", "owners", "@alice", "ownership"),
    ("billing", "language", "go", "tech"),
]
SUBJECTS = 2


def timeline() -> list[ChangeEvent]:
    """The facts added one a day, then a sweep a month later re-stamping all of them (one
    time, ordered by subject, as a source's sweep comes)."""
    added = [
        ChangeEvent(f"a{i}", "added", T0 + timedelta(days=i), "git", Fact(s, p, v, d))
        for i, (s, p, v, d) in enumerate(FACTS)
    ]
    swept_at = T0 + timedelta(days=40)
    sweep = [
        ChangeEvent(
            f"s{i}",
            "revalidated",
            swept_at,
            "git",
            Fact(s, p, v, d),
            metadata={"revalidation": "sweep"},
        )
        for i, (s, p, v, d) in enumerate(FACTS)
    ]
    return added + sweep


def as_jsonl(events: list[ChangeEvent]) -> str:
    return "".join(
        json.dumps(
            {
                "id": e.id,
                "type": e.type,
                "timestamp": e.timestamp.isoformat().replace("+00:00", "Z"),
                "source": e.source,
                "fact": {
                    "subject": e.fact.subject,
                    "predicate": e.fact.predicate,
                    "value": e.fact.value,
                    "domain": e.fact.domain,
                },
                "depends_on": [],
                "metadata": dict(e.metadata),
            }
        )
        + "\n"
        for e in events
    )


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInLLM]:
    monkeypatch.setenv("TEAM_LLM_KEY_FOR_SWEEPS", "sk-standin-not-a-secret-0000")
    with StandInLLM(style="verbatim") as server:
        yield server


def langmem_target(base_url: str, sweeps: str | None) -> Any:
    from healthd.memory import TargetSpec

    model = {
        "model": "team-chat-7b",
        "model_provider": "openai",
        "base_url": base_url,
        "api_key_env": "TEAM_LLM_KEY_FOR_SWEEPS",
    }
    options: dict[str, Any] = {"langmem": {"model": model}, "embedder": "hashing"}
    if sweeps is not None:
        options["sweeps"] = sweeps
    return build_memory(TargetSpec("langmem", options, "team-langmem"))


def replay(memory: Any, kind: str) -> Any:
    events = timeline()
    try:
        return evaluate(events, memory, build_probe_set(events), name=kind, kind=kind)
    finally:
        memory.close()


@pytest.mark.parametrize(
    ("sweeps", "writes"),
    [(None, SUBJECTS), ("subject", SUBJECTS), ("each", len(FACTS)), ("off", 0)],
)
def test_langmem_is_told_a_sweep_once_per_subject_each_fact_or_not_at_all(
    llm: StandInLLM, sweeps: str | None, writes: int
) -> None:
    pytest.importorskip("langmem", reason="the langmem extra is not installed")
    result = replay(langmem_target(llm.base_url, sweeps), "langmem")
    chats = [r for r in llm.requests if r["path"].endswith("/chat/completions")]
    assert len(chats) == len(FACTS) + writes
    assert result.llm["calls"] == len(chats)
    assert result.llm["sweeps"] == (sweeps or "subject")
    assert result.events == 2 * len(FACTS)  # every sweep event is replayed into truth
    if sweeps in (None, "subject"):
        # one message per subject, every fact of it said
        from healthd.testing.standin_llm import message_text

        sessions = [
            re.search(r"<session_[^>]+>\n(.*?)\n</session_", message_text(r["messages"]), re.S)
            for r in chats[len(FACTS) :]
        ]
        said = [m.group(1) for m in sessions if m is not None]
        values = {s: [v for subject, _, v, _ in FACTS if subject == s] for s, *_ in FACTS}
        for text, subject in zip(said, values, strict=True):
            assert all(value in text for value in values[subject]), (subject, text)
            others = [v for other, vs in values.items() if other != subject for v in vs]
            assert not any(value in text for value in others), (subject, text)
        assert len(result.stages) == len(FACTS) + SUBJECTS  # a subject's group, one stage


def test_mem0_platform_is_sent_one_add_per_subject_of_a_sweep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from healthd.testing.mem0_platform import DEFAULT_KEY, Mem0Platform

    monkeypatch.setenv("MEM0_API_KEY", DEFAULT_KEY)
    hashing = {"embedding_model": "healthd-hashing", "embedding_dims": 256}
    with Mem0Platform(processing_seconds=0.02, style="verbatim", **hashing) as platform:
        counts = {}
        for sweeps in ("subject", "each", "off"):
            seen = len(platform.requests)
            target = (
                f"mem0:deployment=platform,shadow=on,host={platform.base_url},"
                f"user_id=u-{uuid.uuid4().hex[:8]},sweeps={sweeps}"
            )
            result = replay(build_memory(parse_target(target)), "mem0")
            adds = [r for r in platform.requests[seen:] if r[1] == "/v3/memories/add/"]
            counts[sweeps] = len(adds)
            assert result.llm["by_purpose"]["ingest"]["calls"] == len(adds)
            assert result.llm["sweeps"] == sweeps
    assert counts == {"subject": len(FACTS) + SUBJECTS, "each": 2 * len(FACTS), "off": len(FACTS)}


def test_a_letta_agent_is_sent_one_message_per_subject_of_a_sweep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("letta_client", reason="the letta extra is not installed")
    from healthd.testing.letta import DEFAULT_PASSWORD, Letta

    monkeypatch.setenv("LETTA_API_KEY", DEFAULT_PASSWORD)
    with Letta(style="verbatim") as letta:
        counts = {}
        for sweeps in ("subject", "each", "off"):
            seen = len(letta.requests)
            target = (
                f"letta:shadow=on,base_url={letta.base_url},embedding=openai/all-MiniLM-L6-v2,"
                f"agent_name=shadow-{uuid.uuid4().hex[:8]},sweeps={sweeps}"
            )
            result = replay(build_memory(parse_target(target)), "letta")
            sent = [
                r for r in letta.requests[seen:] if r[0] == "POST" and r[1].endswith("/messages")
            ]
            counts[sweeps] = len(sent)
            assert result.llm["sweeps"] == sweeps
    assert counts == {"subject": len(FACTS) + SUBJECTS, "each": 2 * len(FACTS), "off": len(FACTS)}


def test_a_sweeps_value_the_target_does_not_have_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from healthd.cli import main

    assert main(["evaluate", "--target", "mem0:sweeps=weekly"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "sweeps='weekly': expected one of subject, each, off" in line


@pytest.mark.slow
def test_a_daemon_groups_a_sweep_and_a_budget_stops_before_a_group_never_inside_it(
    llm: StandInLLM, tmp_path: Path
) -> None:
    """Through the daemon, LangMem budgeted one call short of the whole replay: the first
    run stops before the last subject's sweep statement, the next sends it; the stand-in
    received exactly the unbudgeted calls and the scores are the unbudgeted ones."""
    pytest.importorskip("langmem", reason="the langmem extra is not installed")
    from test_llm_budgets import daemon_runs

    def config(name: str, budget: str) -> Path:
        directory = tmp_path / name
        directory.mkdir()
        (directory / "timeline.jsonl").write_text(as_jsonl(timeline()))
        path = directory / "healthd.toml"
        path.write_text(
            f"""
state_path = {json.dumps(str(directory / "state.sqlite"))}

[sources.head]
kind = "file"
path = {json.dumps(str(directory / "timeline.jsonl"))}

[targets.lm]
kind = "langmem"
shadow = true
embedder = "hashing"
{budget}

[targets.lm.langmem.model]
model = "team-chat-7b"
model_provider = "openai"
base_url = "{llm.base_url}"
api_key_env = "TEAM_LLM_KEY_FOR_SWEEPS"
"""
        )
        return path

    (free,), _, _ = daemon_runs(config("free", ""), 1, target="lm")
    unbudgeted = len(llm.requests)
    assert free["result"] == "success" and unbudgeted == len(FACTS) + SUBJECTS
    budget = unbudgeted - 1
    outcomes, _, _ = daemon_runs(
        config("budgeted", f"max_llm_calls_per_run = {budget}"), 3, target="lm"
    )
    assert [o["result"] for o in outcomes] == ["failure", "success"]
    assert f"{2 * len(FACTS) - 2} of {2 * len(FACTS)} events replayed" in outcomes[0]["error"]
    assert len(llm.requests) == 2 * unbudgeted
    assert outcomes[-1]["metrics"] == free["metrics"]
