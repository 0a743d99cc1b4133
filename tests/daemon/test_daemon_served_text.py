"""The daemon scoring a memory that serves text: bad served items are failed runs."""

from __future__ import annotations

from daemon_helpers import toml_config
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from text_memory_service import TextMemoryService

from healthd.daemon.runner import Runner
from healthd.daemon.state import StateStore
from healthd.exporters.tracing import build_tracer_provider, get_tracer
from healthd.settings import load_settings


def test_the_daemon_counts_a_served_item_without_text_as_a_failed_run(tmp_path):
    """One bad answer is one failed run with the field named, never a crash; the other
    target's run succeeds."""
    with TextMemoryService() as service:
        service.bad_query_body = {"items": [{"record_id": "r1", "text": ""}]}
        config = toml_config(
            tmp_path,
            port=1,
            targets={
                "text": {
                    "kind": "http",
                    "shadow": True,
                    "base_url": service.url,
                    "namespace": "healthd/shadow",
                    "backoff_seconds": 0,
                },
                "naive": {"kind": "naive", "shadow": True},
            },
        )
        settings = load_settings(str(config))
        state = StateStore(settings.state_path)
        tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
        runner = Runner(settings, state, tracer)
        try:
            run = runner.run_once()
            assert run is not None
            assert run.targets["text"]["result"] == "failure"
            assert run.targets["naive"]["result"] == "success"
            row = runner.targets["text"].row
            assert row.runs_failure == 1 and "\n" not in row.last_error
            assert "field 'items[0].text'" in row.last_error
        finally:
            runner.close()
            state.close()
