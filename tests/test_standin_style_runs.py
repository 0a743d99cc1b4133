"""The bundled example through each product's own pipeline, with the stand-ins in each style,
by the commands the docs give: ``verbatim`` scores exactly what the stand-ins scored before
styles existed (``tests/standin_verbatim/figures.json``, measured before the change);
``varied`` scores the figures in the docs' tables labelled "stand-in style varied"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.product]

ROOT = Path(__file__).resolve().parent.parent
BEFORE = json.loads((ROOT / "tests" / "standin_verbatim" / "figures.json").read_text())
COLUMNS = ("freshness", "consistency", "coverage", "forgetting", "contamination", "conflicts")
MEMORY = "healthd_shadow-a1b2c3d4e5"
STRATEGY = "facts-a1b2c3d4e5"
EVENTS = f"agentcore:mode=events,memory_id={MEMORY},actor_id=healthd-shadow,strategy_id={STRATEGY},shadow=on"  # fmt: skip

#: the docs' "stand-in style varied" rows (final stage, all domains)
VARIED = {
    "mem0-messages": (0.222, 0.481, 0.938, 0.0, 0.682, 10),
    "graphiti_episodes": (0.435, 0.478, 0.625, 0.412, 0.409, 3),
    EVENTS: (0.286, 0.762, 0.812, 0.706, 0.182, 0),
}


def rows(stdout: str, names: list[str]) -> dict[str, tuple[float, ...]]:
    final = {t["name"]: t["final"]["metrics"]["all"] for t in json.loads(stdout)["targets"]}
    return {n: tuple(round(final[n][c], 3) for c in COLUMNS) for n in names}


def expected(style: str, name: str) -> tuple[float, ...]:
    if style == "varied":
        return VARIED[name]
    return tuple(round(BEFORE[name][c], 3) for c in COLUMNS)


def evaluate(argv: list[str], env: Mapping[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", *argv, "--format", "json"],
        capture_output=True, text=True, timeout=1800, env=dict(env), cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextmanager
def served(argv: list[str], stream: str) -> Iterator[str]:
    """A stand-in started as the docs start it, on any free port; the URL it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", *argv, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        line = getattr(process, stream).readline().strip()
        yield line.rsplit(" ", 1)[-1]
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.parametrize("style", ["verbatim", "varied"])
def test_mem0_messages_on_the_bundled_example(style: str) -> None:
    pytest.importorskip("mem0", reason="the mem0 extra is not installed")
    env = {k: v for k, v in os.environ.items() if k != "MEM0_TELEMETRY"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "with_standin_llm.py"), "--style", style,
         sys.executable, "-m", "healthd", "evaluate", "--config",
         str(ROOT / "config" / "mem0-team.toml"), "--format", "json"],
        capture_output=True, text=True, timeout=1800, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = ["mem0-messages", "mem0-facts-managed", "mem0-facts-native"]
    assert rows(done.stdout, names) == {
        "mem0-messages": expected(style, "mem0-messages"),
        # healthd's own ingestions, the stand-in's style is nothing to them
        "mem0-facts-managed": expected("verbatim", "mem0-facts-managed"),
        "mem0-facts-native": expected("verbatim", "mem0-facts-native"),
    }


@pytest.mark.parametrize("style", ["verbatim", "varied"])
def test_graphiti_episodes_on_the_bundled_example(style: str) -> None:
    pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed")
    with served(["healthd.testing.standin_llm", "--style", style], "stdout") as url:
        env = dict(os.environ, HEALTHD_TARGETS__GRAPHITI_EPISODES__GRAPHITI__LLM__BASE_URL=url)
        out = evaluate(["--config", "config/graphiti-episodes.toml"], env)
    assert rows(out, ["graphiti_episodes"]) == {
        "graphiti_episodes": expected(style, "graphiti_episodes")
    }


@pytest.mark.parametrize("style", ["verbatim", "varied"])
def test_agentcore_events_on_the_bundled_example(style: str) -> None:
    pytest.importorskip("boto3", reason="the agentcore extra is not installed")
    command = [
        "healthd.testing.agentcore_events", "--memory-id", MEMORY, "--strategy-id", STRATEGY,
        "--indexed-key", "healthd_subject:STRING", "--indexed-key", "healthd_predicate:STRING",
        "--indexed-key", "healthd_validated_at:NUMBER", "--style", style,
    ]  # fmt: skip
    with served(command, "stderr") as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(
            AWS_ACCESS_KEY_ID="dummy", AWS_SECRET_ACCESS_KEY="dummy",
            AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL_BEDROCK_AGENTCORE=url,
            AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL=url,
        )  # fmt: skip
        out = evaluate(["--target", EVENTS], env)
    assert rows(out, [EVENTS]) == {EVENTS: expected(style, EVENTS)}
