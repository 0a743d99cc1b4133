"""In-process checks of the daemon's parts: schedules, config, redaction, the runner with
its state file, and the span tree of one run."""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from browser_helpers import page_data
from daemon_helpers import (
    EXAMPLE,
    PYTHON,
    clean_env,
    free_port,
    parse_metrics,
    run_cli,
    sample,
    toml_config,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from healthd.cli import main as cli_main
from healthd.daemon.runner import Runner
from healthd.daemon.scheduler import parse_schedule, translate_day_of_week
from healthd.daemon.state import StateStore
from healthd.errors import ConfigError
from healthd.evaluator import evaluate
from healthd.exporters.prometheus import build_registry
from healthd.exporters.report import metrics_json
from healthd.exporters.tracing import build_tracer_provider, get_tracer, traces_endpoint
from healthd.logging import REDACTED, configure_logging, get_logger, redact, redact_text
from healthd.memory import build_memory, parse_target
from healthd.probes import build_probe_set
from healthd.report.live import LiveSite
from healthd.settings import load_settings
from healthd.timeline import read_timeline

# -- schedules -------------------------------------------------------------------------------


def test_five_six_field_and_macro_schedules_fire_when_expected():
    base = datetime(2026, 3, 2, 10, 15, 30, 500000, tzinfo=UTC)  # a Monday
    cases = {
        "*/15 * * * *": datetime(2026, 3, 2, 10, 30, tzinfo=UTC),
        "0 0 * * * *": datetime(2026, 3, 2, 11, 0, tzinfo=UTC),  # Spring hourly
        "*/1 * * * * *": datetime(2026, 3, 2, 10, 15, 31, tzinfo=UTC),
        "@hourly": datetime(2026, 3, 2, 11, 0, tzinfo=UTC),
        "@daily": datetime(2026, 3, 3, 0, 0, tzinfo=UTC),
        "0 9 * * 0": datetime(2026, 3, 8, 9, 0, tzinfo=UTC),  # 0 = Sunday
        "0 9 * * 7": datetime(2026, 3, 8, 9, 0, tzinfo=UTC),  # 7 = Sunday
        "0 0 9 ? * SUN": datetime(2026, 3, 8, 9, 0, tzinfo=UTC),
        "0 0 9 * * 6": datetime(2026, 3, 7, 9, 0, tzinfo=UTC),  # 6 = Saturday
    }
    for expression, expected in cases.items():
        trigger = parse_schedule(expression).trigger
        assert trigger.get_next_fire_time(None, base) == expected, expression


def test_misfire_grace_is_about_half_the_period():
    assert parse_schedule("* * * * *").misfire_grace_seconds == 30
    assert parse_schedule("@hourly").misfire_grace_seconds == 1800
    assert parse_schedule("*/1 * * * * *").misfire_grace_seconds == 1


def test_cron_day_of_week_numbers_become_names():
    assert translate_day_of_week("1-5") == "mon,tue,wed,thu,fri"
    assert translate_day_of_week("*/2") == "sun,tue,thu,sat"
    assert translate_day_of_week("mon-fri") == "mon-fri"


@pytest.mark.parametrize("bad", ["* * *", "61 * * * *", "@often", "* * * * 8", "0 0 L * *"])
def test_bad_schedules_are_refused(bad):
    with pytest.raises(ValueError):
        parse_schedule(bad)


# -- configuration ---------------------------------------------------------------------------


def test_environment_overrides_the_file(tmp_path, monkeypatch):
    config = toml_config(tmp_path, port=1234)
    monkeypatch.setenv("HEALTHD_SERVER__PORT", "4321")
    monkeypatch.setenv("HEALTHD_TARGETS__REFERENCE__TTL", "off")
    monkeypatch.setenv("HEALTHD_STALENESS__OWNERSHIP", "7d")
    settings = load_settings(str(config))
    assert settings.server.port == 4321
    assert settings.targets["reference"].options == {"shadow": "on", "ttl": "off"}
    assert settings.staleness.ownership == timedelta(days=7)


@pytest.mark.parametrize("host_first", [True, False])
def test_a_table_and_one_of_its_keys_from_the_environment_are_both_kept(
    tmp_path, monkeypatch, host_first
):
    # the host was dropped when the table came later: the daemon listened on every interface
    config = toml_config(tmp_path, port=1234)
    variables = [("HEALTHD_SERVER__HOST", "localhost"), ("HEALTHD_SERVER", '{"port": 4321}')]
    for name, value in variables if host_first else variables[::-1]:
        monkeypatch.setenv(name, value)
    settings = load_settings(str(config))
    assert (settings.server.host, settings.server.port) == ("localhost", 4321)


def test_a_key_under_a_variable_that_is_no_table_is_one_error_naming_both(tmp_path, monkeypatch):
    monkeypatch.setenv("HEALTHD_SERVER", "local")
    monkeypatch.setenv("HEALTHD_SERVER__HOST", "127.0.0.1")
    with pytest.raises(ConfigError, match="HEALTHD_SERVER__HOST: HEALTHD_SERVER makes server a"):
        load_settings(str(toml_config(tmp_path, port=1234)))


def test_no_config_is_the_bundled_example_every_minute(monkeypatch):
    for name in list(__import__("os").environ):
        if name.upper().startswith("HEALTHD_"):
            monkeypatch.delenv(name)
    settings = load_settings(None)
    assert settings.sources["example"].options["path"].endswith("example_timeline.jsonl")
    assert {n: t.kind for n, t in settings.targets.items()} == {
        "reference": "reference",
        "naive": "naive",
    }
    assert settings.schedule.cron == "* * * * *"


def test_config_errors_name_field_and_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        '[targets.x]\nkind = "reference"\nshadow = true\nttl = "maybe"\n'
        '[sources.s]\nkind = "nope"\n'
    )
    with pytest.raises(ConfigError) as info:
        load_settings(str(path))
    text = str(info.value)
    assert f"{path}: targets.x" in text and "ttl" in text
    assert f"{path}: sources.s" in text and "unknown kind" in text


def test_check_config_exit_codes(tmp_path, capsys):
    good = toml_config(tmp_path, port=1)
    assert cli_main(["check-config", "--config", str(good)]) == 0
    bad = tmp_path / "bad.toml"
    bad.write_text("[schedule]\ncron = '* *'\n")
    assert cli_main(["check-config", "--config", str(bad)]) == 2
    assert "schedule.cron" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("table", "value"),
    [
        ('[sources.s]\nkind = "github"\nrepo = "a/b"\n', "nan"),
        ('[sources.s]\nkind = "backstage"\nbase_url = "http://127.0.0.1:1"\n', "inf"),
        (
            'example = true\n[targets.s]\nkind = "http"\nurl = "http://127.0.0.1:1"\nshadow = true\n',
            "nan",
        ),
    ],
)
def test_a_bound_that_is_not_a_number_is_named_as_such(tmp_path, capsys, table, value):
    # TOML has nan and inf; "should be less than or equal to 300" would misname the fault
    bad = tmp_path / "bad.toml"
    bad.write_text(f"{table}timeout_seconds = {value}\n")
    assert cli_main(["check-config", "--config", str(bad)]) == 2
    where = "targets" if "targets" in table else "sources"
    assert f"{where}.s.timeout_seconds: Input should be a finite number" in capsys.readouterr().err


def test_timeline_with_config_and_source(tmp_path, capsys):
    other = tmp_path / "other.jsonl"
    other.write_text(
        EXAMPLE.read_text().splitlines(keepends=True)[0].replace('"id": "', '"id": "o-')
    )
    config = toml_config(
        tmp_path,
        port=1,
        sources={
            "example": {"kind": "file", "path": str(EXAMPLE)},
            "other": {"kind": "file", "path": str(other)},
        },
    )
    assert cli_main(["timeline", "--config", str(config), "--source", "other"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert cli_main(["timeline", "--config", str(config)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 136
    assert cli_main(["timeline", "--config", str(config), "--source", "nope"]) == 2


# -- redaction -------------------------------------------------------------------------------

SECRETS = ["ghp_0123456789abcdefghijABCDEFGHIJ012345", "hunter2-password", "s3cr3t-t0k3n-value"]


def test_redaction_of_tokens_passwords_and_credential_urls():
    text = (
        f"GET https://alice:{SECRETS[1]}@git.example/repo token={SECRETS[2]} "
        f"Authorization: Bearer {SECRETS[2]} and {SECRETS[0]}"
    )
    out = redact_text(text)
    for secret in SECRETS:
        assert secret not in out
    assert "https://[REDACTED]@git.example/repo" in out
    assert redact({"password": "x", "nested": {"api_key": "y"}, "n": 3}) == {
        "password": REDACTED,
        "nested": {"api_key": REDACTED},
        "n": 3,
    }


def test_a_key_naming_the_variable_that_holds_a_secret_is_not_itself_redacted():
    line = "target 'mem': api_key_env: environment variable MEM0_API_KEY is not set"
    assert redact_text(line) == line
    assert redact({"api_key_env": "MEM0_API_KEY", "api_key": "y"}) == {
        "api_key_env": "MEM0_API_KEY",
        "api_key": REDACTED,
    }
    assert redact_text(f"api_key: {SECRETS[2]}") == f"api_key: {REDACTED}"


def test_logs_are_json_lines_without_secrets():
    stream = io.StringIO()
    configure_logging("info", "auto", stream)  # StringIO is not a terminal: JSON
    get_logger().info(
        "pulling",
        url=f"https://bob:{SECRETS[1]}@jira.example",
        token=SECRETS[2],
        note=f"header Bearer {SECRETS[0]}",
    )
    try:
        raise RuntimeError(f"failed with password={SECRETS[1]}")
    except RuntimeError:
        get_logger().exception("boom")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert lines[0]["event"] == "pulling" and lines[0]["token"] == REDACTED
    for secret in SECRETS:
        assert secret not in stream.getvalue()
    configure_logging("info", "console", io.StringIO())


def test_a_librarys_log_is_a_json_line_beside_healthds_own(capsys):
    import logging

    configure_logging("info", "json", io.StringIO())
    try:
        raise ValueError("export failed")
    except ValueError:
        logging.getLogger("opentelemetry.exporter").exception(
            "Failed to export to https://u:%s@otel.example", SECRETS[1]
        )
    (line,) = capsys.readouterr().err.splitlines()
    logged = json.loads(line)
    assert logged["level"] == "error" and logged["logger"] == "opentelemetry.exporter"
    assert "Failed to export" in logged["event"] and "ValueError" in logged["event"]
    assert SECRETS[1] not in line
    configure_logging("info", "console", io.StringIO())
    logging.getLogger("opentelemetry.exporter").warning("plain again")
    assert capsys.readouterr().err == "WARNING opentelemetry.exporter: plain again\n"


# -- the runner ------------------------------------------------------------------------------


def _runner(tmp_path, exporter=None, **kw):
    config = toml_config(tmp_path, port=1, **kw)
    settings = load_settings(str(config))
    provider = build_tracer_provider(exporter=exporter or InMemorySpanExporter())
    state = StateStore(settings.state_path)
    return Runner(settings, state, get_tracer(provider)), state


def _expected(path, target):
    events = read_timeline(str(path))
    spec = parse_target(target)
    result = evaluate(
        events,
        build_memory(spec),
        build_probe_set(events),
        name=target,
        kind=spec.kind,
        keep_stages=False,
    )
    return metrics_json(result.metrics)


def test_runner_incremental_runs_restart_and_config_change(tmp_path):
    timeline = tmp_path / "t.jsonl"
    lines = EXAMPLE.read_text().splitlines(keepends=True)
    timeline.write_text("".join(lines[:60]))
    kw = dict(sources={"t": {"kind": "file", "path": str(timeline)}})
    runner, state = _runner(tmp_path, **kw)
    first = runner.run_once()
    assert first.new_events == 60
    assert all(o["replayed"] == 60 for o in first.targets.values())
    second = runner.run_once()
    assert second.new_events == 0 and all(o["replayed"] == 0 for o in second.targets.values())
    timeline.write_text("".join(lines))
    third = runner.run_once()
    assert all(o["replayed"] == 75 for o in third.targets.values())
    for name in ("reference", "naive"):
        assert runner.targets[name].row.results["metrics"] == _expected(EXAMPLE, name)
    runner.close()
    state.close()

    # restart: the stored results are served at once and the reference shadow's replay is
    # read back by the first run, not replayed; naive replays from scratch
    runner, state = _runner(tmp_path, **kw)
    assert runner.ready() and runner.targets["reference"].replay is None
    assert (
        runner.targets["naive"].replay is None and "process memory" in runner.targets["naive"].note
    )
    run = runner.run_once()
    assert runner.targets["reference"].replay is None  # nothing new: its results stand
    assert run.new_events == 0
    assert run.targets["reference"]["replayed"] == 0 and run.targets["naive"]["replayed"] == 135
    assert all(o["events"] == 0 for o in run.targets.values())  # nothing counted twice
    assert runner.targets["reference"].row.events_replayed == 135
    for name in ("reference", "naive"):
        assert runner.targets[name].row.results["metrics"] == _expected(EXAMPLE, name)
    info_before = runner.targets["reference"].row.results["info_version"]
    runner.close()
    state.close()

    # a changed staleness policy: fresh replay, visible in the probe-set info version
    runner, state = _runner(tmp_path, extra='[staleness]\nownership = "3d"', **kw)
    assert "configuration changed" in runner.targets["reference"].note
    run = runner.run_once()
    assert run.targets["reference"]["replayed"] == 135 and run.targets["reference"]["events"] == 0
    assert runner.targets["reference"].row.results["info_version"] != info_before
    assert (
        runner.targets["reference"].row.results["info_version"].split("-")[0]
        == info_before.split("-")[0]
    )
    runner.close()
    state.close()


def test_metrics_from_the_runner_leave_nulls_out(tmp_path):
    runner, state = _runner(tmp_path)
    registry, _ = build_registry(runner.view)
    from prometheus_client import generate_latest

    before = parse_metrics(generate_latest(registry).decode())
    assert not any(n == "healthd_freshness_ratio" for n, _ in before)
    runner.run_once()
    after = parse_metrics(generate_latest(registry).decode())
    expected = _expected(EXAMPLE, "reference")
    for bucket, values in expected.items():
        for ratio in ("freshness", "consistency", "coverage", "forgetting", "contamination"):
            assert (
                sample(after, f"healthd_{ratio}_ratio", target="reference", domain=bucket)
                == values[ratio]
            )
    for target in ("reference", "naive"):
        for bucket, values in _expected(EXAMPLE, target).items():  # conflicts too, per domain
            assert (
                sample(after, "healthd_conflicts", target=target, domain=bucket)
                == (values["conflicts"])
            )
    runner.close()
    state.close()


def test_span_tree_of_one_run_in_memory(tmp_path):
    exporter = InMemorySpanExporter()
    runner, state = _runner(tmp_path, exporter=exporter)
    runner.run_once()
    spans = exporter.get_finished_spans()
    root = [s for s in spans if s.name == "healthd.run"]
    assert len(root) == 1
    children = [
        s for s in spans if s.parent is not None and s.parent.span_id == root[0].context.span_id
    ]
    names = [s.name for s in children]
    assert names.count("pull") == 1 and names.count("export") == 1
    assert names.count("replay") == 2 and names.count("score") == 2
    assert {s.attributes["healthd.target"] for s in children if s.name == "replay"} == {
        "reference",
        "naive",
    }
    pull = next(s for s in children if s.name == "pull")
    assert any(s.name == "pull example" and s.parent.span_id == pull.context.span_id for s in spans)
    runner.close()
    state.close()


def test_otlp_endpoint_resolution(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert traces_endpoint(None) is None
    assert traces_endpoint("http://c:4318") == "http://c:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://e:4318/")
    assert traces_endpoint(None) == "http://e:4318/v1/traces"


@pytest.mark.slow
def test_daemon_exports_the_span_tree_over_otlp(start_daemon, tmp_path, httpserver):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    httpserver.expect_request("/v1/traces", method="POST").respond_with_data(
        b"", content_type="application/x-protobuf"
    )
    port = free_port()
    config = toml_config(tmp_path, port=port)
    from daemon_helpers import Daemon

    daemon = Daemon(
        config,
        port,
        tmp_path / "otlp.log",
        OTEL_EXPORTER_OTLP_ENDPOINT=httpserver.url_for("/").rstrip("/"),
    )
    try:
        daemon.wait_ready()
        deadline = time.monotonic() + 10
        spans = []
        while time.monotonic() < deadline:
            spans = []
            for request, _ in httpserver.log:
                message = ExportTraceServiceRequest()
                message.ParseFromString(request.get_data())
                for rs in message.resource_spans:
                    for ss in rs.scope_spans:
                        spans.extend(ss.spans)
            # a run's root span ends after its children, so once it is exported they are
            # too (an "export" child alone could be in a batch sent before its root ended)
            if any(s.name == "healthd.run" for s in spans):
                break
            time.sleep(0.2)
        root = next(s for s in spans if s.name == "healthd.run")
        kids = {
            s.name
            for s in spans
            if s.parent_span_id == root.span_id and s.trace_id == root.trace_id
        }
        assert kids == {"pull", "replay", "score", "export"}
        assert daemon.stop()[0] == 0
    finally:
        if daemon.proc.poll() is None:
            daemon.proc.kill()


def _exported_service_names(httpserver) -> set[str]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    names = set()
    for request, _ in httpserver.log:
        message = ExportTraceServiceRequest()
        message.ParseFromString(request.get_data())
        for rs in message.resource_spans:
            for attribute in rs.resource.attributes:
                if attribute.key == "service.name":
                    names.add(attribute.value.string_value)
    return names


@pytest.mark.slow
def test_otel_service_name_names_the_traces_unless_the_config_does(tmp_path, httpserver):
    """OTEL_SERVICE_NAME "sets the value of the service.name resource attribute" (the
    OpenTelemetry SDK's environment variables): a sidecar configured the standard way, as
    OTEL_EXPORTER_OTLP_ENDPOINT already is, is told apart from its neighbours; a
    `[tracing] service_name` in the file still wins, as the file's endpoint does."""
    from daemon_helpers import Daemon

    httpserver.expect_request("/v1/traces", method="POST").respond_with_data(
        b"", content_type="application/x-protobuf"
    )
    endpoint = httpserver.url_for("/").rstrip("/")
    for table, expected in (("", "healthd-eu-1"), ('service_name = "from-file"', "from-file")):
        httpserver.clear_log()
        port = free_port()
        config = toml_config(tmp_path, port=port)
        config.write_text(config.read_text() + f"\n[tracing]\n{table}\n")
        daemon = Daemon(
            config,
            port,
            tmp_path / "otlp.log",
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            OTEL_SERVICE_NAME="healthd-eu-1",
        )
        try:
            daemon.wait_ready()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not _exported_service_names(httpserver):
                time.sleep(0.2)
            assert daemon.stop()[0] == 0
        finally:
            if daemon.proc.poll() is None:
                daemon.proc.kill()
        assert _exported_service_names(httpserver) == {expected}


def test_bundled_config_examples_validate(capsys, monkeypatch):
    from daemon_helpers import ROOT

    monkeypatch.chdir(ROOT / "deploy")  # relative paths are relative to the config file
    assert cli_main(["check-config", "--config", "../config/default.toml"]) == 0
    monkeypatch.chdir(ROOT)
    for variable in ("GITHUB_TOKEN", "JIRA_TOKEN", "JIRA_USER"):
        monkeypatch.setenv(variable, "x")
    # the example's checkout is not on this machine: checked as a run would, it is refused
    assert cli_main(["check-config", "--config", "config/git-tickets.toml"]) == 2
    err = capsys.readouterr().err
    assert "sources.repo.path: /srv/checkout/payments does not exist" in err
    assert len(err.strip().splitlines()) == 2  # repo and adr: nothing else is wrong
    monkeypatch.delenv("MEMORY_SERVICE_TOKEN", raising=False)
    assert cli_main(["check-config", "--config", "config/http-memory.toml"]) == 2
    assert (
        "targets.team-memory: environment variable 'MEMORY_SERVICE_TOKEN'"
        in capsys.readouterr().err
    )
    monkeypatch.setenv("MEMORY_SERVICE_TOKEN", "t0ken")
    assert cli_main(["check-config", "--config", "config/http-memory.toml"]) == 2
    err = capsys.readouterr().err  # only the timeline file, which is not on this machine
    assert err.strip().endswith(
        "sources.timeline.path: /var/lib/healthd/timeline.jsonl does not exist or is not a file"
    )
    assert len(err.strip().splitlines()) == 1


def test_a_run_whose_state_write_fails_loses_no_events(tmp_path, monkeypatch):
    lines = EXAMPLE.read_text().splitlines(True)
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text("".join(lines[:50]))
    config = toml_config(
        tmp_path,
        port=free_port(),
        sources={"ex": {"kind": "file", "path": str(timeline)}},
        targets={"naive": {"kind": "naive", "shadow": True}},
    )
    settings = load_settings(str(config))

    def start():
        state = StateStore(settings.state_path)
        tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
        return Runner(settings, state, tracer), state

    runner, state = start()
    runner.run_once()
    timeline.write_text("".join(lines[:80]))
    # the state file is replaced under the running process: its writes fail, and the run
    # counts as a failure for every target instead of raising
    path = Path(settings.state_path)
    path.rename(path.with_name("kept.sqlite"))
    path.write_bytes(b"not a database")
    failed = runner.run_once()
    assert failed is not None and {o["result"] for o in failed.targets.values()} == {"failure"}
    row = runner.targets["naive"].row
    assert row.runs_failure == 1 and row.runs_success == 1 and row.last_result == "failure"
    assert "replaced while healthd ran" in row.last_error
    path.with_name("kept.sqlite").replace(path)
    timeline.write_text("".join(lines[:100]))
    runner.run_once()
    assert runner.event_count == 100
    assert len(state.events()) == 100 and state.targets()["naive"].applied == 100
    runner.close()
    state.close()
    runner, state = start()
    runner.run_once()
    assert runner.event_count == 100
    assert runner.targets["naive"].row.applied == 100
    runner.close()
    state.close()


def _file_event(ident, value, day=1):
    return json.dumps(
        {
            "id": ident,
            "type": "added",
            "timestamp": f"2024-01-{day:02d}T00:00:00Z",
            "source": "file",
            "fact": {
                "subject": "billing",
                "predicate": "language",
                "value": value,
                "domain": "tech",
            },
        }
    )


def test_a_rewritten_line_reusing_an_id_with_new_content_is_reported_not_taken(tmp_path):
    """The file source reads a rewritten file again; the daemon takes none of the events it
    had twice, and reports (with its line) a line that reuses an id with other content."""
    path = tmp_path / "timeline.jsonl"
    path.write_text(_file_event("ev-1", "go") + "\n" + _file_event("ev-2", "rust", 2) + "\n")
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    kw = dict(
        sources={"tl": {"kind": "file", "path": str(path)}},
        targets={"naive": {"kind": "naive", "shadow": True}},
    )
    runner, state = _runner(tmp_path, **kw)
    assert runner.run_once().new_events == 2
    runner.close()
    state.close()
    path.write_text(
        _file_event("ev-1", "go")
        + "\n"
        + _file_event("ev-2", "zig", 2)
        + "\n"
        + _file_event("ev-3", "c", 3)
        + "\n"
    )
    runner, state = _runner(tmp_path, **kw)  # after a restart: nothing kept in memory
    run = runner.run_once()
    assert run.new_events == 1
    assert [e.id for e in state.iter_events()] == ["ev-1", "ev-2", "ev-3"]
    assert [e.fact.value for e in state.iter_events()][1] == "rust"
    reasons = [
        json.loads(entry).get("reason", "")
        for entry in stream.getvalue().splitlines()
        if json.loads(entry).get("event") == "source skipped input"
    ]
    assert any("read again from the top" in r for r in reasons), reasons
    assert any(f"{path} line 2" in r and "'ev-2'" in r and "other content" in r for r in reasons), (
        reasons
    )
    assert any("1 events read before were not taken again" in r for r in reasons), reasons
    assert runner.run_once().new_events == 0
    runner.close()
    state.close()


def test_one_event_two_sources_give_under_their_own_names_is_taken_once_unreported(tmp_path):
    """Two sources whose queries overlap (two Jira sources, one JQL within the other) give
    one ticket's event under one id, each with its own name as the event's source: one
    event, taken once, and no line says they differ, in this run or the next."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(_file_event("ev-1", "go").replace('"file"', '"a"') + "\n")
    b.write_text(_file_event("ev-1", "go").replace('"file"', '"b"') + "\n")
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    kw = dict(
        sources={"a": {"kind": "file", "path": str(a)}, "b": {"kind": "file", "path": str(b)}},
        targets={"naive": {"kind": "naive", "shadow": True}},
    )
    runner, state = _runner(tmp_path, **kw)
    assert runner.run_once().new_events == 1
    with b.open("a") as handle:
        handle.write(_file_event("ev-2", "rust", 2).replace('"file"', '"b"') + "\n")
    assert runner.run_once().new_events == 1
    assert [(e.id, e.source) for e in state.iter_events()] == [("ev-1", "a"), ("ev-2", "b")]
    said = [
        json.loads(entry).get("reason", "")
        for entry in stream.getvalue().splitlines()
        if json.loads(entry).get("event") == "source skipped input"
    ]
    assert not [r for r in said if "given first" in r]
    runner.close()
    state.close()


def test_events_a_failed_write_left_unstored_are_not_all_serialised_for_each_pull(
    tmp_path, monkeypatch
):
    """A state write that fails (a full disk) leaves every event pulled since in memory,
    until a write succeeds: checking a source's few new ids against them is a lookup, not
    each of them serialised again for every source in every run."""
    from healthd.daemon import pull
    from healthd.sources import PullResult
    from healthd.timeline import loads_timeline

    path = tmp_path / "a.jsonl"
    path.write_text(_file_event("ev-0", "go") + "\n")
    runner, state = _runner(tmp_path, sources={"a": {"kind": "file", "path": str(path)}})
    lines = [_file_event(f"ev-{n}", f"v{n}") for n in range(2000)]
    runner._unpersisted = [("a", e) for e in loads_timeline("\n".join(lines))]
    [mine] = loads_timeline(_file_event("ev-7", "v7").replace('"file"', '"b"'))
    calls = []
    real = pull.dumps_event
    monkeypatch.setattr(pull, "dumps_event", lambda e: calls.append(e) or real(e))
    kept = runner._not_given_elsewhere("b", [mine], PullResult([mine], None), {})
    assert kept == [] and len(calls) < 10
    runner.close()
    state.close()


def test_an_id_another_source_gave_first_is_taken_once_and_a_different_one_reported(tmp_path):
    """Ids are each source's own, and a memory applies an event once per id: an event
    another source gave first under its id is not taken again (the same) nor silently (with
    other content: reported with its line and both sources), in the run that reads both and
    in a later one."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(_file_event("ev-1", "go") + "\n")
    b.write_text(_file_event("ev-1", "go") + "\n" + _file_event("ev-2", "rust", 2) + "\n")
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    kw = dict(
        sources={"a": {"kind": "file", "path": str(a)}, "b": {"kind": "file", "path": str(b)}},
        targets={"naive": {"kind": "naive", "shadow": True}},
    )
    runner, state = _runner(tmp_path, **kw)
    assert runner.run_once().new_events == 2
    with b.open("a") as handle:
        handle.write(_file_event("ev-1", "zig", 3) + "\n" + _file_event("ev-3", "c", 4) + "\n")
    assert runner.run_once().new_events == 1
    assert [(e.id, e.fact.value) for e in state.iter_events()] == [
        ("ev-1", "go"),
        ("ev-2", "rust"),
        ("ev-3", "c"),
    ]
    reasons = [
        json.loads(entry).get("reason", "")
        for entry in stream.getvalue().splitlines()
        if json.loads(entry).get("event") == "source skipped input"
    ]
    [conflict] = [r for r in reasons if "'ev-1'" in r]
    assert conflict.startswith(f"{b} line 3: ") and "given first by source 'a'" in conflict
    assert "'go'" in conflict and "'zig'" in conflict
    runner.close()
    state.close()


def _example_on_a_reference_shadow(tmp_path):
    """The runner's settings for the bundled example, from a file, on a reference shadow."""
    timeline = tmp_path / "t.jsonl"
    timeline.write_text(EXAMPLE.read_text())
    return dict(
        sources={"t": {"kind": "file", "path": str(timeline)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )


def _the_example_s_first_70_on_a_reference_shadow(tmp_path):
    """A timeline file holding the bundled example's first 70 lines (the rest appended by
    the test), its lines, and the runner's settings for it on a reference shadow."""
    timeline = tmp_path / "t.jsonl"
    lines = EXAMPLE.read_text().splitlines(keepends=True)
    timeline.write_text("".join(lines[:70]))
    kw = dict(
        sources={"t": {"kind": "file", "path": str(timeline)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    return timeline, lines, kw


def test_a_new_fact_changes_the_probe_sets_version_and_not_its_setup(tmp_path):
    """healthd_probe_set_info's version follows every key (a probe per key); its setup only
    what is configured. HealthdConsistencyDropped holds off for a day after a new setup, not
    after a new fact, which an active project adds every day."""
    from healthd.exporters.prometheus import build_registry

    for part in ("a", "b"):
        (tmp_path / part).mkdir()
    timeline, lines, kw = _the_example_s_first_70_on_a_reference_shadow(tmp_path / "a")
    runner, state = _runner(tmp_path / "a", **kw)
    first = runner.run_once().targets["reference"]
    before = state.targets()["reference"].results
    new_service = json.loads(lines[0])
    new_service.update(id="new-service", fact={**new_service["fact"], "subject": "ledger-v9"})
    with timeline.open("a") as out:
        out.write(json.dumps(new_service) + "\n")
    assert runner.run_once().targets["reference"]["result"] == first["result"] == "success"
    after = state.targets()["reference"].results
    assert after["info_version"] != before["info_version"]
    assert after["probe_setup"] == before["probe_setup"]
    registry, _ = build_registry(runner.view)
    (info,) = [m for m in registry.collect() if m.name == "healthd_probe_set_info"]
    assert [s.labels["setup"] for s in info.samples] == [after["probe_setup"]]
    runner.close()
    state.close()

    probes = tmp_path / "probes.jsonl"
    probes.write_text(
        json.dumps(
            {"id": "stack", "question": "What is auth built with?", "subject": "auth",
             "predicate": "language", "domain": "tech"}
        ) + "\n"
    )  # fmt: skip
    _, _, kw = _the_example_s_first_70_on_a_reference_shadow(tmp_path / "b")
    runner, state = _runner(tmp_path / "b", extra=f"probes = {json.dumps(str(probes))}", **kw)
    runner.run_once()
    assert state.targets()["reference"].results["probe_setup"] != before["probe_setup"]
    runner.close()
    state.close()


def test_a_run_with_nothing_new_replays_and_writes_nothing_of_the_history(tmp_path):
    kw = _example_on_a_reference_shadow(tmp_path)
    runner, state = _runner(tmp_path, **kw)
    runner.run_once()
    memory = runner.targets["reference"].memory
    checkpoint = memory.checkpoint()
    cursor = state.sources()["t"].cursor
    idle = runner.run_once()
    assert idle.targets["reference"]["replayed"] == 0
    assert memory.checkpoint() == checkpoint  # the shadow was not committed again
    assert state.sources()["t"].cursor == cursor
    row = state._db.execute("SELECT snapshot FROM targets WHERE name = 'reference'").fetchone()
    assert row == (None,)  # no snapshot whose size grows with history in the state file
    assert state.targets()["reference"].results["metrics"] == _expected(EXAMPLE, "reference")
    runner.close()
    state.close()


def test_the_observed_run_duration_covers_the_state_write(tmp_path, monkeypatch):
    timeline = tmp_path / "t.jsonl"
    timeline.write_text(EXAMPLE.read_text())
    config = toml_config(
        tmp_path,
        port=1,
        sources={"t": {"kind": "file", "path": str(timeline)}},
        targets={"naive": {"kind": "naive", "shadow": True}},
    )
    settings = load_settings(str(config))
    state = StateStore(settings.state_path)
    observed = []
    tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
    runner = Runner(settings, state, tracer, observe_duration=lambda t, d: observed.append(d))
    record_run = state.record_run

    shown_during_write = []

    def slow_write(record):
        shown_during_write.append(runner.view()["targets"]["naive"].runs_success)
        time.sleep(0.3)
        record_run(record)

    monkeypatch.setattr(state, "record_run", slow_write)
    run = runner.run_once()
    assert observed and observed[0] >= 0.3
    assert run.targets["naive"]["duration_seconds"] >= 0.3
    # a scrape during the write does not see the run counted without its duration
    assert shown_during_write == [0]
    assert runner.view()["targets"]["naive"].runs_success == 1
    runner.close()
    state.close()


def test_a_targets_observed_duration_leaves_the_other_targets_replays_out(tmp_path, monkeypatch):
    """Targets replay in turn: each one's duration is the run's shared part (pull, state
    write) and its own replay, so the slow one stands out (each used to be given the whole
    run's time, the same for all)."""
    from healthd.daemon import target_run

    timeline = tmp_path / "t.jsonl"
    timeline.write_text(EXAMPLE.read_text())
    config = toml_config(
        tmp_path,
        port=1,
        sources={"t": {"kind": "file", "path": str(timeline)}},
        targets={
            "slow": {"kind": "naive", "shadow": True},
            "quick": {"kind": "naive", "shadow": True},
        },
    )
    settings = load_settings(str(config))
    state = StateStore(settings.state_path)
    observed: dict[str, float] = {}
    tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
    runner = Runner(settings, state, tracer, observe_duration=observed.__setitem__)
    build = target_run.build_shadow

    def slow_to_build(t):
        if t.name == "slow":
            time.sleep(0.5)
        return build(t)

    monkeypatch.setattr(target_run, "build_shadow", slow_to_build)
    run = runner.run_once()
    assert observed["slow"] >= 0.5 > observed["quick"], observed
    assert run.duration >= observed["slow"] and run.duration >= 0.5 + observed["quick"] - 0.05
    assert run.targets["quick"]["duration_seconds"] == round(observed["quick"], 6)
    runner.close()
    state.close()


def test_a_restart_resumes_the_reference_shadow_from_its_own_state_not_the_events(tmp_path):
    """Restored from the rows kept beside the shadow (no event parsed, no probe asked), the
    replay goes on to report exactly what one replay over every event reports."""
    from healthd.exporters.report import probe_json

    timeline, lines, kw = _the_example_s_first_70_on_a_reference_shadow(tmp_path)
    runner, state = _runner(tmp_path, **kw)
    runner.run_once()
    queries = runner.targets["reference"].replay.stats.probe_queries
    runner.close()
    state.close()

    stream = io.StringIO()
    configure_logging("info", "json", stream)
    runner, state = _runner(tmp_path, **kw)
    timeline.write_text("".join(lines))
    run = runner.run_once()
    restored = [
        json.loads(entry)
        for entry in stream.getvalue().splitlines()
        if json.loads(entry).get("event") == "shadow restored"
    ]
    assert restored and restored[0]["events"] == 70  # read back by the run
    assert restored[0]["truth_folded_from_events"] == 0
    assert run.targets["reference"]["replayed"] == len(lines) - 70
    assert runner.targets["reference"].row.results["metrics"] == _expected(EXAMPLE, "reference")
    page = runner.view()["pages"]["reference"]["target"]["final"]
    events = read_timeline(str(EXAMPLE))
    straight = evaluate(
        events,
        build_memory(parse_target("reference")),
        build_probe_set(events),
        name="reference",
        kind="reference",
        keep_stages=False,
    )
    assert json.dumps(page["probes"]) == json.dumps([probe_json(p) for p in straight.probes])
    assert runner.targets["reference"].replay.stats.probe_queries > queries
    runner.close()
    state.close()


def test_a_restart_serves_the_stored_results_and_reads_the_shadow_when_first_needed(tmp_path):
    """Starting up reads no replay state (at a million events that takes seconds, and the
    listener starts only after the runner): the stored results are served at once; the
    page at / reads the shadow's replay back when first asked, as a run would."""
    kw = _example_on_a_reference_shadow(tmp_path)
    runner, state = _runner(tmp_path, **kw)
    runner.run_once()
    page_before = runner.view()["pages"]["reference"]["target"]["final"]
    runner.close()
    state.close()

    stream = io.StringIO()
    configure_logging("info", "json", stream)
    runner, state = _runner(tmp_path, **kw)
    assert runner.ready() and runner.targets["reference"].replay is None
    assert "shadow restored" not in stream.getvalue()
    results = runner.view()["targets"]["reference"].results
    assert results["metrics"] == _expected(EXAMPLE, "reference")
    page = runner.view()["pages"]["reference"]["target"]["final"]
    assert json.dumps(page) == json.dumps(page_before)
    assert "shadow restored" in stream.getvalue()
    run = runner.run_once()
    assert run.targets["reference"]["replayed"] == 0  # read back once, not replayed
    assert stream.getvalue().count("shadow restored") == 1
    runner.close()
    state.close()


def test_a_run_with_nothing_new_after_a_restart_serves_the_stored_results_as_they_stand(
    tmp_path,
):
    """Reading a shadow's replay back takes seconds at a million events and changes no
    number when there is nothing to replay: the run counts, the results stand, and the
    shadow is read back by the first run with events to replay."""
    timeline, lines, kw = _the_example_s_first_70_on_a_reference_shadow(tmp_path)
    runner, state = _runner(tmp_path, **kw)
    runner.run_once()
    before = runner.view()["targets"]["reference"].results
    runner.close()
    state.close()

    stream = io.StringIO()
    configure_logging("info", "json", stream)
    runner, state = _runner(tmp_path, **kw)
    run = runner.run_once()
    assert run.targets["reference"]["result"] == "success"
    assert run.targets["reference"]["metrics"] == before["metrics"]["all"]
    row = runner.view()["targets"]["reference"]
    assert row.runs_success == 2 and row.results["run_id"] == run.run_id
    assert {k: v for k, v in row.results.items() if k not in ("run_id", "duration_seconds")} == {
        k: v for k, v in before.items() if k not in ("run_id", "duration_seconds")
    }
    assert "shadow restored" not in stream.getvalue()
    timeline.write_text("".join(lines))
    run = runner.run_once()
    assert stream.getvalue().count("shadow restored") == 1
    assert run.targets["reference"]["replayed"] == len(lines) - 70
    assert runner.view()["targets"]["reference"].results["metrics"] == _expected(
        EXAMPLE, "reference"
    )
    runner.close()
    state.close()


def test_a_shadow_lost_while_the_daemon_was_down_is_rebuilt_by_the_next_run_with_nothing_new(
    tmp_path,
):
    kw = _example_on_a_reference_shadow(tmp_path)
    runner, state = _runner(tmp_path, **kw)
    runner.run_once()
    shadow = Path(runner.targets["reference"].options["path"])
    runner.close()
    state.close()
    shadow.unlink()

    runner, state = _runner(tmp_path, **kw)
    run = runner.run_once()
    assert run.targets["reference"]["replayed"] == len(EXAMPLE.read_text().splitlines())
    assert runner.view()["targets"]["reference"].results["metrics"] == _expected(
        EXAMPLE, "reference"
    )
    runner.close()
    state.close()


@pytest.mark.parametrize(
    "rewrite, replayed_from",
    [
        # numbered with a gap (a file healthd did not write): the 70th event is still found,
        # whether or not another event is numbered 70
        (["UPDATE events SET seq = seq + 1000 WHERE seq > 35"], 70),
        (
            [
                "UPDATE events SET seq = -(seq + 10) WHERE seq > 35",
                "UPDATE events SET seq = -seq WHERE seq < 0",
            ],
            70,
        ),
        # the 69th and 70th swapped: the shadow's last event is not the 70th any more
        (
            [
                "UPDATE events SET seq = -1 WHERE seq = 69",
                "UPDATE events SET seq = 69 WHERE seq = 70",
                "UPDATE events SET seq = 70 WHERE seq = -1",
            ],
            0,
        ),
    ],
    ids=["gap past it", "gap below it", "swapped"],
)
def test_a_restart_checks_its_checkpoint_against_the_event_stored_at_its_position(
    tmp_path, rewrite, replayed_from
):
    """The shadow's checkpoint names the last event it applied; a restart compares it with
    the state file's event at that position (looked up by its number, not counted to:
    counting read a million rows at every restart), and replays from scratch when they
    differ."""
    timeline, lines, kw = _the_example_s_first_70_on_a_reference_shadow(tmp_path)
    runner, state = _runner(tmp_path, **kw)
    runner.run_once()
    runner.close()
    state.close()
    db = sqlite3.connect(tmp_path / "state" / "state.sqlite")
    with db:
        for statement in rewrite:
            db.execute(statement)
    db.close()

    runner, state = _runner(tmp_path, **kw)
    timeline.write_text("".join(lines))
    run = runner.run_once()
    assert run.targets["reference"]["replayed"] == len(lines) - replayed_from
    runner.close()
    state.close()


def test_the_page_does_not_read_a_shadow_back_while_a_run_holds_the_runner(tmp_path):
    """A run's pull extends the catalog the probe set is built from, outside the replay's
    lock: the page reads a restarted shadow back only between runs."""
    kw = _example_on_a_reference_shadow(tmp_path)
    runner, state = _runner(tmp_path, **kw)
    runner.run_once()
    runner.close()
    state.close()

    runner, state = _runner(tmp_path, **kw)
    with runner.lock:  # a run pulling
        assert runner.view()["pages"]["reference"] is None
        assert runner.targets["reference"].replay is None
    page = runner.view()["pages"]["reference"]
    assert page["target"]["final"]["metrics"] == _expected(EXAMPLE, "reference")
    runner.close()
    state.close()


def test_the_page_asked_for_during_a_run_shows_every_target_with_results(tmp_path):
    """A target whose page was never built waits for the run replaying (its lock held, as
    the cron's next run holds it) instead of leaving its chart out of / until a later run;
    the page at / is not kept while a target with results is missing from it."""
    runner, state = _runner(
        tmp_path,
        sources={"example": {"kind": "file", "path": str(EXAMPLE)}},
        targets={
            "reference": {"kind": "reference", "shadow": True},
            "naive": {"kind": "naive", "shadow": True},
        },
    )
    runner.run_once()
    site = LiveSite()

    def page_at_root() -> str:
        body = site.respond("/", runner.view, runner.ready, lambda status, headers: None)
        return b"".join(body).decode()

    runner._replay_lock.acquire()  # a run replaying, as the next scheduled one does
    started = time.monotonic()  # (before the timer: a stall between the two can't shorten it)
    threading.Timer(0.5, runner._replay_lock.release).start()
    html = page_at_root()
    assert [t["name"] for t in page_data(html)["targets"]] == ["reference", "naive"]
    assert time.monotonic() - started >= 0.4  # waited for that run
    assert page_at_root() == html  # kept, now that it is whole
    runner.close()
    state.close()


@pytest.mark.parametrize("tables", ["absent", "left by a newer healthd"])
def test_a_shadow_checkpointed_by_an_older_healthd_is_restored_from_the_events_once(
    tmp_path, tables
):
    """A checkpoint holding only the older snapshot (no replay state beside the shadow, or
    one from before a downgrade): truth is folded from the stored events once, and the state
    is then kept for next time."""
    import sqlite3

    timeline, lines, kw = _the_example_s_first_70_on_a_reference_shadow(tmp_path)
    runner, state = _runner(tmp_path, **kw)
    runner.run_once()
    t = runner.targets["reference"]
    body = {
        "fingerprint": t.fingerprint,
        "applied": t.position,
        "last_event": t.last_event,
        "snapshot": t.replay.snapshot(),
    }
    shadow = t.options["path"]
    runner.close()
    state.close()
    with sqlite3.connect(shadow) as db:  # as an older healthd left it
        db.execute("UPDATE checkpoints SET body = ?", (json.dumps(body),))
        if tables == "absent":
            for table in ("healthd_truth_ops", "healthd_truth_keys", "healthd_probes"):
                db.execute(f"DROP TABLE {table}")
            db.execute("DROP TABLE healthd_values")

    def restored_lines(stream):
        return [
            json.loads(entry)
            for entry in stream.getvalue().splitlines()
            if json.loads(entry).get("event") == "shadow restored"
        ]

    stream = io.StringIO()
    configure_logging("info", "json", stream)
    runner, state = _runner(tmp_path, **kw)
    timeline.write_text("".join(lines))
    runner.run_once()
    assert restored_lines(stream)[0]["truth_folded_from_events"] == 70
    assert runner.targets["reference"].row.results["metrics"] == _expected(EXAMPLE, "reference")
    runner.close()
    state.close()

    stream = io.StringIO()
    configure_logging("info", "json", stream)
    runner, state = _runner(tmp_path, **kw)
    runner.view()["pages"]["reference"]  # the page at / reads the replay back, as a run would
    assert restored_lines(stream)[0]["truth_folded_from_events"] == 0
    runner.run_once()
    assert runner.targets["reference"].row.results["metrics"] == _expected(EXAMPLE, "reference")
    runner.close()
    state.close()


def test_a_backlog_is_replayed_from_the_state_file_with_the_same_results(tmp_path, monkeypatch):
    import healthd.daemon.runner as runner_module

    monkeypatch.setattr(runner_module, "IN_MEMORY_EVENTS", 10)  # the example is a backlog
    timeline = tmp_path / "t.jsonl"
    timeline.write_text(EXAMPLE.read_text())
    runner, state = _runner(tmp_path, sources={"t": {"kind": "file", "path": str(timeline)}})
    run = runner.run_once()
    assert runner._new == []  # not held beside the replay
    for name in ("reference", "naive"):
        assert run.targets[name]["replayed"] == 135
        assert runner.targets[name].row.results["metrics"] == _expected(EXAMPLE, name)
    runner.close()
    state.close()


def test_a_file_read_in_many_slices_is_one_run_with_the_same_results(tmp_path, monkeypatch):
    import healthd.sources.file as file_source

    monkeypatch.setattr(file_source, "SLICE", 2000)  # the example: dozens of slices
    timeline = tmp_path / "t.jsonl"
    timeline.write_text(EXAMPLE.read_text())
    runner, state = _runner(tmp_path, sources={"t": {"kind": "file", "path": str(timeline)}})
    run = runner.run_once()
    assert run.new_events == 135 and state.event_count() == 135
    for name in ("reference", "naive"):
        assert run.targets[name]["replayed"] == 135
        assert runner.targets[name].row.results["metrics"] == _expected(EXAMPLE, name)
    assert runner.run_once().new_events == 0
    runner.close()
    state.close()


def test_a_skipped_input_met_on_every_pull_is_logged_once_and_counted_once(tmp_path):
    """The git source rebuilds its state from the cursor's commit on every pull and meets
    the same malformed CODEOWNERS owner each time: one log line, one count."""
    import subprocess

    from prometheus_client import generate_latest

    checkout = tmp_path / "shop"
    checkout.mkdir()
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(checkout)], check=True, timeout=30)
    (checkout / "CODEOWNERS").write_text("* @core\n/billing/ billing-team\n")
    (checkout / "billing").mkdir()
    (checkout / "billing" / "main.go").write_text("package main\n")
    subprocess.run([*git, "add", "."], check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "first"], check=True, timeout=30)
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    kw = dict(
        sources={"repo": {"kind": "git", "path": str(checkout), "revalidate_clock": "head"}},
        targets={"naive": {"kind": "naive", "shadow": True}},
    )
    runner, state = _runner(tmp_path, **kw)
    registry, _ = build_registry(runner.view)
    for n in range(3):
        (checkout / "billing" / f"f{n}.go").write_text("package main\n")
        subprocess.run([*git, "add", "."], check=True, timeout=30)
        subprocess.run([*git, "commit", "-qm", f"change {n}"], check=True, timeout=30)
        runner.run_once()
    entries = [json.loads(line) for line in stream.getvalue().splitlines()]
    about = [e for e in entries if "billing-team" in json.dumps(e)]
    assert len(about) == 1, about
    assert about[0]["event"] == "source skipped input" and about[0]["source"] == "repo"
    metrics = parse_metrics(generate_latest(registry).decode())
    assert sample(metrics, "healthd_source_skipped_inputs_total", source="repo") == 1
    runner.close()
    state.close()
    configure_logging("info", "console", io.StringIO())


# -- baselines -------------------------------------------------------------------------------


def test_baselines_carry_role_baseline_on_every_target_series(tmp_path, monkeypatch):
    """naive is a baseline by default; `baseline = true` makes any target one, `false`
    makes naive a subject; every series of a target says which (role label)."""
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    targets = {
        "reference": {"kind": "reference", "shadow": True},
        "naive": {"kind": "naive", "shadow": True},
        "plain": {"kind": "reference", "shadow": True, "ttl": "off", "baseline": True},
        "watched": {"kind": "naive", "shadow": True, "baseline": False},
    }
    runner, state = _runner(tmp_path, targets=targets)
    registry, histogram = build_registry(runner.view)
    runner.run_once()
    histogram.labels(target="naive", role="baseline").observe(0.1)
    roles = {"reference": "subject", "naive": "baseline", "plain": "baseline"}
    roles["watched"] = "subject"
    seen = 0
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in family.samples:
            if "target" in s.labels:
                assert s.labels.get("role") == roles[s.labels["target"]], (s.name, s.labels)
                seen += 1
    assert seen > 100
    runner.close()
    state.close()
    # the environment can switch it, like any target option
    monkeypatch.setenv("HEALTHD_TARGETS__NAIVE__BASELINE", "false")
    assert load_settings(str(toml_config(tmp_path, port=1))).targets["naive"].role == "subject"


def test_baseline_switch_on_the_command_line_target_spec():
    assert parse_target("naive").role == "baseline"
    assert parse_target("naive:baseline=off").role == "subject"
    spec = parse_target("reference:ttl=off,baseline=on")
    assert spec.role == "baseline" and dict(spec.options) == {"ttl": "off"}
    build_memory(spec).close()  # the switch is healthd's, never passed to the memory
    with pytest.raises(Exception, match="baseline='maybe': expected on or off"):
        parse_target("naive:baseline=maybe")


def _live_view(targets, *, roles=None, sources=None, runs_completed=0, **extra):
    """The runner's view as the page at / reads it, of these target rows (each a subject
    unless ``roles`` says otherwise)."""
    from healthd.scoring import DEFAULT_WINDOWS

    return {
        "targets": targets,
        "sources": sources or {},
        "roles": roles if roles is not None else dict.fromkeys(targets, "subject"),
        "pages": {},
        "windows": DEFAULT_WINDOWS,
        "missed_runs": 0,
        "runs_completed": runs_completed,
        "last_run": None,
        "history": [],
        **extra,
    }


def test_the_live_verdict_ages_with_the_clock_and_names_sources_down():
    """No run for more than twice the schedule: / says HealthdNoRecentSuccess, though no
    run has finished since (the page is rebuilt at least once a minute)."""
    from healthd.daemon.state import SourceRow, TargetRow
    from healthd.report.live import live_html
    from healthd.verdict import alert_book

    twice = 2 * alert_book().thresholds["schedule_seconds"]
    view = _live_view(
        {"mem": TargetRow("mem", last_run=1000.0, last_success=1000.0)},
        sources={"git": SourceRow("git", up=0)},
        runs_completed=1,
    )
    fresh = live_html(view, True, now=1000.0 + twice)
    assert "HealthdNoRecentSuccess" not in fresh and "source git is down" in fresh
    late = live_html(view, True, now=1000.0 + twice + 60)
    assert "HealthdNoRecentSuccess</a>" in late and "#healthdnorecentsuccess" in late


def test_the_live_verdict_waits_two_of_the_daemons_own_periods_when_longer(tmp_path):
    """An hourly daemon's last success 126 s ago is no stale one: the page judges "no recent
    success" by twice the longest gap between its own runs when that is longer than the
    rules' every-minute default (it said critical for 58 minutes of every hour)."""
    from healthd.daemon.state import TargetRow
    from healthd.report.live import live_html

    assert parse_schedule("@hourly").longest_gap().total_seconds() == 3600
    assert parse_schedule("0 9 * * MON-FRI").longest_gap().total_seconds() == 3 * 86400
    assert parse_schedule("* * * * *").longest_gap().total_seconds() == 60
    # four runs an hour on weekdays: the next 64 runs are 16 hours; the weekend is 2 days
    assert parse_schedule("*/15 * * * MON-FRI").longest_gap().total_seconds() == 2 * 86400 + 900
    assert parse_schedule("*/5 9-17 * * MON-FRI").longest_gap().total_seconds() >= 63 * 3600
    view = _live_view(
        {"mem": TargetRow("mem", last_run=1000.0, last_success=1000.0)},
        runs_completed=1,
        schedule_seconds=3600.0,
    )
    assert "HealthdNoRecentSuccess" not in live_html(view, True, now=1000.0 + 126)
    assert "HealthdNoRecentSuccess" not in live_html(view, True, now=1000.0 + 7200)
    late = live_html(view, True, now=1000.0 + 7201)
    assert "HealthdNoRecentSuccess</a>" in late and "last success 7201 s ago &gt; 7200 s" in late
    runner, state = _runner(tmp_path, cron="@hourly")
    try:
        assert runner.view()["schedule_seconds"] == 3600.0
    finally:
        runner.close()
        state.close()


def test_the_runbook_url_of_the_alerts_is_where_the_live_verdict_links(tmp_path):
    """HEALTHD_RUNBOOK_URL, which alerts/generate.py reads for the rules' links, is the
    daemon's `runbook_url` too (it used to stop `run` as an unknown setting): the page's
    links then go where the alerts' do; unset, to the runbook the daemon serves."""
    from healthd.daemon.state import TargetRow
    from healthd.report.live import live_html

    wiki = "https://wiki.example.com/healthd/runbook.md"
    config = toml_config(tmp_path, port=1)
    done = run_cli("check-config", "--config", str(config), HEALTHD_RUNBOOK_URL=wiki)
    assert done.returncode == 0, done.stderr
    assert load_settings(str(config)).runbook_url is None
    empty = run_cli("check-config", "--config", str(config), HEALTHD_RUNBOOK_URL="")
    assert empty.returncode == 0, empty.stderr  # an empty one is unset, as generate.py reads it
    script = run_cli("check-config", "--config", str(config), HEALTHD_RUNBOOK_URL="javascript:x")
    assert script.returncode == 2 and "expected an http(s) address or a path" in script.stderr
    view = _live_view(
        {"mem": TargetRow("mem", last_run=2000.0, last_success=1000.0)}, runs_completed=2
    )
    assert "href='runbook#healthdrunsfailing'" in live_html(view, True, now=2000.0)
    linked = live_html({**view, "runbook_url": wiki}, True, now=2000.0)
    assert f"href='{wiki}#healthdrunsfailing'" in linked


def test_after_a_restart_the_page_says_which_targets_it_cannot_chart_yet(tmp_path):
    """run_on_start off: the shadow in process memory (naive) has its numbers from the state
    file but no stages until a run replays it; the page says so instead of leaving it out of
    the charts and the final table without a word. The persistent reference is read back."""
    from healthd.report.live import live_html

    runner, state = _runner(tmp_path)
    runner.run_once()
    runner.close()
    state.close()
    runner, state = _runner(tmp_path)  # the restart, before any run
    try:
        view = runner.view()
        html = live_html({**view, "pages": dict(view["pages"])}, True)
    finally:
        runner.close()
        state.close()
    assert "<p class='meta' id='unshown'>Not charted yet: naive. " in html
    assert [t["name"] for t in page_data(html)["targets"]] == ["reference"]


def test_the_live_verdict_is_not_green_while_a_target_has_nothing_measured():
    """Before a first run (run_on_start off, or a first run still going), a target has no
    numbers: the verdict says so, grey, instead of "within every alert threshold"."""
    from healthd.daemon.state import TargetRow
    from healthd.report.live import live_html

    def view(targets, roles):
        return _live_view(targets, roles=roles)

    none = live_html(
        view(
            {"mem": TargetRow("mem"), "naive": TargetRow("naive")},
            {"mem": "subject", "naive": "baseline"},
        ),
        False,
        now=1000.0,
    )
    assert (
        "<p class='verdict-summary unmeasured'>Nothing measured yet: the target has no results"
        " to judge. Beside it: 1 baseline, meant to fail.</p>" in none
    )
    assert "within every alert threshold" not in none

    from healthd.report.html import _verdict
    from healthd.verdict import Verdict

    mixed = _verdict({"verdict": [Verdict(n, "subject", n == "a").as_dict() for n in "abc"]})
    assert (
        "<p class='verdict-summary unmeasured'>1 of 3 targets is within every alert threshold."
        " Not measured yet: b, c.</p>" in mixed
    )


@pytest.mark.slow
def test_a_daemon_holding_few_keys_warm_reports_what_one_holding_all_reports(tmp_path):
    """With ``warm_keys`` far below the keys seen (a project history: cascades from a shared
    module, late events, bursts), the keys let go are read back from the shadow and the
    replay's stored rows when next needed: the same metrics and final probes as evaluate,
    the next run included, while no more than ``warm_keys`` keys are held in full."""
    import sys

    from healthd.exporters.report import probe_json

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from project_history import write

    full = tmp_path / "full.jsonl"
    write(1500, 60, str(full))
    lines = full.read_text().splitlines(keepends=True)
    timeline = tmp_path / "t.jsonl"
    timeline.write_text("".join(lines[:1000]))
    runner, state = _runner(
        tmp_path,
        sources={"t": {"kind": "file", "path": str(timeline)}},
        targets={"reference": {"kind": "reference", "shadow": True}},
        extra="checkpoint_events = 7\nwarm_keys = 3",
    )
    t = runner.targets["reference"]
    for upto in (1000, 1500):
        timeline.write_text("".join(lines[:upto]))
        runner.run_once()
        assert _held(t) <= 3
        events = read_timeline(str(timeline))
        straight = evaluate(
            events,
            build_memory(parse_target("reference")),
            build_probe_set(events),
            name="reference",
            kind="reference",
            keep_stages=False,
        )
        assert t.row.results["metrics"] == metrics_json(straight.metrics)
        page = runner.view()["pages"]["reference"]["target"]["final"]
        assert json.dumps(page["probes"]) == json.dumps([probe_json(p) for p in straight.probes])
        assert len(t.replay.truth._keys) > 50 and _held(t) <= 3
    runner.close()
    state.close()


def _held(t) -> int:
    """The most keys the replay's truth or the shadow's cache holds in full."""
    from healthd.truth import _StoredHistory

    truth, memory = t.replay.truth, t.memory
    loaded = [
        k
        for k, h in truth._keys.items()
        if not isinstance(h, _StoredHistory) or object.__getattribute__(h, "_load") is None
    ]
    return max(len(loaded), len(memory._cache.logs), len(memory._cache.live))


SIGNAL_WHILE_LOGGING = r"""
import io, os, signal, sys, time
from healthd.daemon.app import Daemon, install_signal_handlers
from healthd.logging import configure_logging, get_logger
from healthd.settings import load_settings


class Stream(io.StringIO):
    armed = False

    def write(self, text):
        if self.armed:  # the signals arrive while the logger's lock is held for this line
            self.armed = False
            os.kill(os.getpid(), signal.SIGHUP)
            os.kill(os.getpid(), signal.SIGTERM)
            sum(range(10_000))  # (the handlers run here, between two bytecodes)
        return super().write(text)


stream = Stream()
configure_logging("info", "json", stream=stream)
daemon = Daemon(load_settings(sys.argv[1]))
install_signal_handlers(daemon)
stream.armed = True
get_logger("test").info("a line of the main thread's own")
deadline = time.monotonic() + 20
while not ("stopping" in stream.getvalue() and "SIGHUP received" in stream.getvalue()):
    assert time.monotonic() < deadline, stream.getvalue()
    time.sleep(0.01)
print(stream.getvalue())
"""


def test_a_signal_that_arrives_while_a_line_is_being_logged_still_stops_and_reloads(tmp_path):
    # the handlers used to log themselves: on the main thread, already holding the logger's
    # (not re-entrant) lock for its own line, they waited on it for ever
    config = toml_config(tmp_path, port=free_port())
    done = subprocess.run(
        [PYTHON, "-c", SIGNAL_WHILE_LOGGING, str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line)["event"] for line in done.stdout.splitlines() if line]
    assert events[0] == "a line of the main thread's own"
    assert "stopping" in events and "SIGHUP received: reloading the configuration" in events


def test_the_run_history_on_the_page_outlives_a_restart(tmp_path):
    """The page at / lists the runs before a restart too (the state file keeps the last
    twenty, their results and errors); a history the file holds garbled starts anew."""
    from healthd.report.live import live_html

    def page(runner):
        view = runner.view()
        return live_html({**view, "pages": dict(view["pages"])}, True)

    runner, state = _runner(tmp_path)
    first, second = runner.run_once(), runner.run_once()
    runner.close()
    state.close()
    runner, state = _runner(tmp_path)
    try:
        assert [run.run_id for run in runner.history] == [first.run_id, second.run_id]
        assert runner.history[0].targets["reference"] == {
            k: first.targets["reference"][k] for k in ("result", "replayed")
        }
        html = page(runner)
        assert html.count(first.run_id) == 1 and html.count(second.run_id) == 1
        third = runner.run_once()
    finally:
        runner.close()
        state.close()
    db = sqlite3.connect(str(tmp_path / "state" / "state.sqlite"))
    saved = json.loads(db.execute("SELECT value FROM meta WHERE key='run_history'").fetchone()[0])
    assert [run["run_id"] for run in saved] == [first.run_id, second.run_id, third.run_id]
    db.execute("UPDATE meta SET value='{not json' WHERE key='run_history'")
    db.commit()
    db.close()
    runner, state = _runner(tmp_path)
    try:
        assert list(runner.history) == []
        assert runner.run_once().run_id in page(runner)
    finally:
        runner.close()
        state.close()


def test_every_configuration_shipped_in_config_loads(monkeypatch):
    # each with the variables it names set (a URL where the name says one): the shapes of
    # a memory's own tables and arrays ([targets.X.mem0.llm], langmem's namespace list)
    # are the memory's to check, not refused as switches
    import glob
    import re

    hosted = {"letta.toml", "zep.toml", "mem0-platform.toml"}  # (built, they ask their service)
    shipped = [
        path
        for path in sorted(glob.glob(str(Path(__file__).parents[2] / "config" / "*.toml")))
        if Path(path).name not in hosted
    ]
    assert len(shipped) >= 8
    for path in shipped:
        for name in re.findall(r'_env = "([A-Z_0-9]+)"', Path(path).read_text()):
            url = name.endswith(("_URL", "_HOST"))
            monkeypatch.setenv(name, "https://memory.example" if url else "set-for-the-test")
    for path in shipped:
        load_settings(path)
