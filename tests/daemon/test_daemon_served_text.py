"""The daemon scoring a memory that serves text: bad served items are failed runs."""

from __future__ import annotations

from daemon_helpers import EXAMPLE, sample, toml_config
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


def test_a_bad_reader_in_the_config_is_one_line_and_a_new_reader_re_baselines(tmp_path, capsys):
    from healthd.cli import main as cli_main

    config = toml_config(tmp_path, port=1, extra='reader = "oracle"')
    assert cli_main(["check-config", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "reader: reader 'oracle': unknown reader 'oracle'; known: default, llm, semantic" in err

    settings = load_settings(str(toml_config(tmp_path, port=1)))
    state = StateStore(settings.state_path)
    tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
    runner = Runner(settings, state, tracer)
    runner.run_once()
    before = runner.targets["reference"].row.results
    assert before["reader"] == "default-9" and "+default-9-" in before["info_version"]
    fingerprint = runner.targets["reference"].fingerprint
    runner.close()
    state.close()

    from fake_judge import FakeJudge

    with FakeJudge() as judge:
        extra = f'reader = "llm:base_url={judge.url},model=fake-judge-1"'
        settings = load_settings(str(toml_config(tmp_path, port=1, extra=extra)))
        state = StateStore(settings.state_path)
        runner = Runner(settings, state, tracer)
        try:
            assert runner.targets["reference"].fingerprint != fingerprint
            assert "configuration changed" in (runner.targets["reference"].note or "")
            runner.run_once()
            after = runner.targets["reference"].row.results
            assert after["reader"] == "llm-2:fake-judge-1"
            assert after["metrics"] == before["metrics"]  # structured answers: nothing to read
            assert after["info_version"] != before["info_version"]
        finally:
            runner.close()
            state.close()


def test_evaluate_with_the_config_reads_with_the_configs_reader_as_the_daemon_does(
    tmp_path, capsys
):
    """`healthd evaluate --config FILE` shows the numbers the daemon exports, so it reads
    served text with the reader the file names; --reader still picks another."""
    import json

    from fake_judge import FakeJudge

    from healthd.cli import main as cli_main

    with FakeJudge() as judge:
        extra = f'reader = "llm:base_url={judge.url},model=fake-judge-1"'
        config = str(toml_config(tmp_path, port=1, extra=extra))
        settings = load_settings(config)
        state = StateStore(settings.state_path)
        tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
        runner = Runner(settings, state, tracer)
        try:
            runner.run_once()
            daemon = runner.targets["reference"].row.results
        finally:
            runner.close()
            state.close()
        capsys.readouterr()  # the run's log lines
        assert cli_main(["evaluate", "--config", config, "--format", "json"]) == 0
        configured = json.loads(capsys.readouterr().out)
        assert (
            cli_main(["evaluate", "--config", config, "--format", "json", "--reader", "default"])
            == 0
        )
        flag = json.loads(capsys.readouterr().out)
    reference = next(t for t in configured["targets"] if t["name"] == "reference")
    assert reference["reader"] == daemon["reader"] == "llm-2:fake-judge-1"
    assert "+llm-2:fake-judge-1" in configured["probe_set"]["version"]
    assert next(t for t in flag["targets"] if t["name"] == "reference")["reader"] == "default-9"


LANGUAGE = ("auth-service", "language")  # held node, then go
ELIXIR = "auth-service is written in Elixir."


def test_a_memory_serving_an_invented_value_has_lower_consistency_gauges_and_shows_it(
    start_daemon,
):
    """Two team memories silent on the gateway's language, one of them saying it is written
    in Elixir: its consistency gauges are lower, its other gauges the same, and `/` shows
    the value as invented with the text it was read from."""
    with (
        TextMemoryService(silent_on={LANGUAGE}) as silent,
        TextMemoryService(silent_on={LANGUAGE}, says={LANGUAGE: ELIXIR}) as inventing,
    ):
        team = {"kind": "http", "namespace": "shadow", "shadow": True, "backoff_seconds": 0}
        daemon = start_daemon(
            sources={"example": {"kind": "file", "path": str(EXAMPLE)}},
            targets={
                "silent": {**team, "base_url": silent.url},
                "inventing": {**team, "base_url": inventing.url},
            },
        )
        daemon.wait_ready(timeout=60)
        daemon.wait_runs("silent", timeout=60)
        metrics = daemon.wait_runs("inventing", timeout=60)
        for domain in ("all", "tech"):
            quiet = sample(metrics, "healthd_consistency_ratio", target="silent", domain=domain)
            said = sample(metrics, "healthd_consistency_ratio", target="inventing", domain=domain)
            assert quiet is not None and said is not None and said < quiet, domain
            for name in ("healthd_coverage_ratio", "healthd_contamination_ratio"):
                assert sample(metrics, name, target="inventing", domain=domain) == sample(
                    metrics, name, target="silent", domain=domain
                ), (name, domain)
        page = daemon.wait_until(
            lambda: (r := daemon.get("/")).status_code == 200 and ELIXIR in r.text and r.text,
            what="the invented text on /",
        )
        assert '"invented"' in page
        assert daemon.stop()[0] == 0
