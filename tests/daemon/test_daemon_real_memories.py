"""The daemon with a Mem0 or Graphiti target whose store cannot be opened, or a Mem0 Platform
whose inference fails: the run fails as a metric and a log line, the other targets' runs go
on, and the next run recovers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from daemon_helpers import parse_metrics, sample, toml_config
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from healthd.daemon.runner import Runner
from healthd.daemon.state import StateStore
from healthd.exporters.prometheus import build_registry
from healthd.exporters.tracing import build_tracer_provider, get_tracer
from healthd.settings import load_settings

os.environ["MEM0_TELEMETRY"] = "False"
pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed")


def test_a_locked_kuzu_database_is_a_failed_run_metric_then_recovers(tmp_path):
    from prometheus_client import generate_latest

    store = tmp_path / "graph"
    store.mkdir()
    config = toml_config(
        tmp_path,
        port=1,
        targets={
            "reference": {"kind": "reference", "shadow": True},
            "graph": {"kind": "graphiti", "shadow": True, "path": str(store)},
        },
    )
    settings = load_settings(str(config))
    state = StateStore(settings.state_path)
    runner = Runner(
        settings, state, get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
    )
    registry, _ = build_registry(runner.view)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, kuzu; db = kuzu.Database(sys.argv[1]); "
            "print('open', flush=True); time.sleep(120)",
            str(store / "graph.kuzu"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        runner.run_once()
    finally:
        holder.kill()
        holder.wait(timeout=30)
    metrics = parse_metrics(generate_latest(registry).decode())
    assert sample(metrics, "healthd_runs_total", target="graph", result="failure") == 1
    assert sample(metrics, "healthd_runs_total", target="reference", result="success") == 1
    error = runner.view()["targets"]["graph"].last_error
    assert "cannot be opened" in error and "lock" in error.lower()

    runner.run_once()  # the lock is gone: the shadow opens and replays
    metrics = parse_metrics(generate_latest(registry).decode())
    assert sample(metrics, "healthd_runs_total", target="graph", result="success") == 1
    assert sample(metrics, "healthd_consistency_ratio", target="graph", domain="all") is not None
    runner.close()
    state.close()


def test_a_mem0_platform_whose_inference_fails_is_a_failed_run_then_recovers(tmp_path, monkeypatch):
    """The hosted platform (its imitation) answers, but its add events FAIL: the run fails
    as a metric naming the event, the reference's run goes on, and once the platform's
    inference works again the next run replays and scores."""
    from prometheus_client import generate_latest

    from healthd.testing.mem0_platform import DEFAULT_KEY, Mem0Platform
    from healthd.testing.standin_llm import StandInLLM

    with (
        StandInLLM(fault="error") as llm,
        Mem0Platform(
            llm_base_url=llm.base_url,
            embedding_model="healthd-hashing",
            embedding_dims=256,
            processing_seconds=0,
        ) as platform,
    ):
        monkeypatch.setenv("MEM0_API_KEY", DEFAULT_KEY)
        config = toml_config(
            tmp_path,
            port=1,
            targets={
                "reference": {"kind": "reference", "shadow": True},
                "hosted": {"kind": "mem0", "deployment": "platform", "shadow": True,
                           "host": platform.base_url},
            },
        )  # fmt: skip
        settings = load_settings(str(config))
        state = StateStore(settings.state_path)
        runner = Runner(
            settings, state, get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
        )
        registry, _ = build_registry(runner.view)
        runner.run_once()
        metrics = parse_metrics(generate_latest(registry).decode())
        assert sample(metrics, "healthd_runs_total", target="hosted", result="failure") == 1
        assert sample(metrics, "healthd_runs_total", target="reference", result="success") == 1
        error = runner.view()["targets"]["hosted"].last_error
        assert "add of event" in error and "FAILED" in error

        llm.fault = "none"  # the platform's inference is back
        runner.run_once()
        metrics = parse_metrics(generate_latest(registry).decode())
        assert sample(metrics, "healthd_runs_total", target="hosted", result="success") == 1
        assert sample(metrics, "healthd_consistency_ratio", target="hosted", domain="all") > 0
        runner.close()
        state.close()


@pytest.mark.slow
def test_a_zep_whose_extraction_fails_is_a_failed_run_then_recovers(tmp_path, monkeypatch):
    """Zep (its imitation) answers, but an episode's task fails: the run fails as a metric
    naming the event, the reference's run goes on, and once Zep's extraction works again the
    next run replays and scores (slow: the whole example through Graphiti's pipeline)."""
    pytest.importorskip("zep_cloud", reason="the zep extra is not installed")
    from prometheus_client import generate_latest

    from healthd.testing.standin_llm import StandInLLM
    from healthd.testing.zep import DEFAULT_KEY, Zep

    with (
        StandInLLM(fault="error") as llm,
        Zep(llm_base_url=llm.base_url, processing_seconds=0) as zep,
    ):
        monkeypatch.setenv("ZEP_API_KEY", DEFAULT_KEY)
        config = toml_config(
            tmp_path,
            port=1,
            targets={
                "reference": {"kind": "reference", "shadow": True},
                "zep": {"kind": "zep", "shadow": True, "base_url": zep.base_url},
            },
        )
        settings = load_settings(str(config))
        state = StateStore(settings.state_path)
        runner = Runner(
            settings, state, get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
        )
        registry, _ = build_registry(runner.view)
        runner.run_once()
        metrics = parse_metrics(generate_latest(registry).decode())
        assert sample(metrics, "healthd_runs_total", target="zep", result="failure") == 1
        assert sample(metrics, "healthd_runs_total", target="reference", result="success") == 1
        error = runner.view()["targets"]["zep"].last_error
        assert "add of event" in error and "failed" in error

        llm.fault = "none"  # Zep's extraction is back
        runner.run_once()
        metrics = parse_metrics(generate_latest(registry).decode())
        assert sample(metrics, "healthd_runs_total", target="zep", result="success") == 1
        assert sample(metrics, "healthd_consistency_ratio", target="zep", domain="all") > 0
        runner.close()
        state.close()
