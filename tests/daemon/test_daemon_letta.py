"""The daemon with a Letta target (its imitation) whose agent's LLM fails: the run fails as a
metric naming the event, the other targets' runs go on, and the next run recovers."""

from __future__ import annotations

import pytest
from daemon_helpers import parse_metrics, sample, toml_config
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from healthd.daemon.runner import Runner
from healthd.daemon.state import StateStore
from healthd.exporters.prometheus import build_registry
from healthd.exporters.tracing import build_tracer_provider, get_tracer
from healthd.settings import load_settings

pytest.importorskip("letta_client", reason="the letta extra is not installed")


@pytest.mark.slow
def test_a_letta_agent_whose_llm_fails_is_a_failed_run_then_recovers(tmp_path, monkeypatch):
    """Letta answers, but the agent's LLM endpoint fails its first step: the run fails as a
    metric naming the event, the reference's run goes on, and once the LLM answers again the
    next run replays and scores (slow: the whole example through the agent's turns)."""
    from prometheus_client import generate_latest

    from healthd.testing.letta import DEFAULT_PASSWORD, Letta
    from healthd.testing.standin_llm import StandInLLM

    with StandInLLM(fault="error") as llm, Letta(llm_base_url=llm.base_url) as letta:
        monkeypatch.setenv("LETTA_API_KEY", DEFAULT_PASSWORD)
        letta_table = {"kind": "letta", "shadow": True, "base_url": letta.base_url,
                       "embedding": "openai/all-MiniLM-L6-v2"}  # fmt: skip
        config = toml_config(
            tmp_path,
            port=1,
            targets={"reference": {"kind": "reference", "shadow": True}, "letta": letta_table},
        )
        settings = load_settings(str(config))
        state = StateStore(settings.state_path)
        runner = Runner(
            settings, state, get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
        )
        registry, _ = build_registry(runner.view)
        runner.run_once()
        metrics = parse_metrics(generate_latest(registry).decode())
        assert sample(metrics, "healthd_runs_total", target="letta", result="failure") == 1
        assert sample(metrics, "healthd_runs_total", target="reference", result="success") == 1
        error = runner.view()["targets"]["letta"].last_error
        assert "message of event" in error and "HTTP 500" in error

        llm.fault = "none"  # the team's LLM is back
        runner.run_once()
        metrics = parse_metrics(generate_latest(registry).decode())
        assert sample(metrics, "healthd_runs_total", target="letta", result="success") == 1
        assert sample(metrics, "healthd_consistency_ratio", target="letta", domain="all") > 0
        runner.close()
        state.close()
