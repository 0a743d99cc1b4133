"""Credentials in URLs never reach any output: CLI error lines, logs, the summary page,
/metrics, the state file and exported traces, each checked with a real secret-bearing URL."""

from __future__ import annotations

import time

import pytest
from daemon_helpers import EXAMPLE, Daemon, free_port, run_cli, toml_config
from werkzeug import Response

GIT_PASSWORD = "hunter2-git-secret"
HTTP_PASSWORD = "pa55word-http-secret"


def _config(tmp_path, port, memory_url):
    closed = free_port()  # nothing listens there: the mirror fails
    return toml_config(
        tmp_path,
        port=port,
        sources={
            "example": {"kind": "file", "path": str(EXAMPLE)},
            "repo": {
                "kind": "git",
                "url": f"http://alice:{GIT_PASSWORD}@127.0.0.1:{closed}/repo.git",
                "cache_dir": str(tmp_path / "cache"),
            },
        },
        targets={
            "reference": {"kind": "reference", "shadow": True},
            "team": {
                "kind": "http",
                "base_url": memory_url,
                "namespace": "healthd-shadow",
                "shadow": True,
            },
        },
    )


@pytest.mark.slow
def test_no_output_path_shows_a_credential(tmp_path, httpserver):
    httpserver.expect_request("/v1/traces", method="POST").respond_with_data(
        b"", content_type="application/x-protobuf"
    )
    httpserver.expect_request("/v1/namespaces/healthd-shadow").respond_with_response(
        Response("forbidden", status=403)
    )
    memory_url = f"http://bob:{HTTP_PASSWORD}@127.0.0.1:{httpserver.port}"
    port = free_port()
    config = _config(tmp_path, port, memory_url)

    for command in (["timeline"], ["evaluate", "--format", "json"]):
        result = run_cli(*command, "--config", str(config))
        assert result.returncode == 2, result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("healthd: error:") and "[REDACTED]" in last, last
        assert GIT_PASSWORD not in result.stderr and HTTP_PASSWORD not in result.stderr

    daemon = Daemon(
        config,
        port,
        tmp_path / "daemon.log",
        OTEL_EXPORTER_OTLP_ENDPOINT=httpserver.url_for("/").rstrip("/"),
    )
    try:
        daemon.wait_until(
            lambda: any(
                l.get("event") == "run failed" and l.get("target") == "team"
                for l in daemon.log_lines()
            ),
            timeout=30,
            what="a failed run of the http target",
        )
        time.sleep(2)  # the batch span processor exports about every second
        outputs = {
            "log": daemon.read_log(),
            "/metrics": daemon.get("/metrics").text,
            "/": daemon.get("/").text,
        }
        assert daemon.stop()[0] == 0
    finally:
        if daemon.proc.poll() is None:
            daemon.proc.kill()
    for path in (tmp_path / "state").rglob("*"):
        if path.is_file():
            outputs[str(path)] = path.read_bytes().decode("latin-1")
    traces = [r.get_data() for r, _ in httpserver.log if r.path == "/v1/traces"]
    assert traces, "no trace exported"
    outputs["traces"] = b"".join(traces).decode("latin-1")
    assert "[REDACTED]" in outputs["log"] and "[REDACTED]" in outputs["/"]
    for name, text in outputs.items():
        assert GIT_PASSWORD not in text, name
        assert HTTP_PASSWORD not in text, name


JIRA_USER = "alice-jira-user"
JIRA_TOKEN = "t0ken-jira-secret"


def test_a_remote_echoing_credentials_shows_no_value_of_an_env_variable(tmp_path, httpserver):
    import base64
    import json

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    basic = b64(f"{JIRA_USER}:{JIRA_TOKEN}")
    forms = {
        "user": JIRA_USER,
        "token": JIRA_TOKEN,
        "basic": basic,
        "user base64": b64(JIRA_USER),
        "token base64": b64(JIRA_TOKEN),
    }
    echo = f"no access for {JIRA_USER} ({b64(JIRA_USER)}) with {JIRA_TOKEN} {b64(JIRA_TOKEN)}"
    httpserver.expect_request("/rest/api/2/search").respond_with_response(
        Response(
            json.dumps({"errorMessages": [f"{echo}, sent as Basic {basic}"]}),
            status=403,
            content_type="application/json",
        )
    )
    port = free_port()
    config = toml_config(
        tmp_path,
        port=port,
        sources={
            "example": {"kind": "file", "path": str(EXAMPLE)},
            "tickets": {
                "kind": "jira",
                "base_url": httpserver.url_for("/").rstrip("/"),
                "jql": "project = PAY",
                "api_version": "2",
                "user_env": "TEST_JIRA_USER",
                "token_env": "TEST_JIRA_TOKEN",
            },
        },
        targets={"reference": {"kind": "reference", "shadow": True}},
    )
    env = {"TEST_JIRA_USER": JIRA_USER, "TEST_JIRA_TOKEN": JIRA_TOKEN}
    outputs = {}
    done = run_cli("timeline", "--config", str(config), **env)
    assert done.returncode == 2 and "HTTP 403" in done.stderr, done.stderr
    outputs["timeline --config"] = done.stderr
    daemon = Daemon(config, port, tmp_path / "daemon.log", **env)
    try:
        daemon.wait_until(
            lambda: any(
                l.get("event") == "source failed" and l.get("source") == "tickets"
                for l in daemon.log_lines()
            ),
            timeout=30,
            what="a failed pull of the jira source",
        )
        daemon.wait_runs("reference")
        outputs["log"] = daemon.read_log()
        outputs["/"] = daemon.get("/").text
        assert daemon.stop()[0] == 0
    finally:
        if daemon.proc.poll() is None:
            daemon.proc.kill()
    for path in (tmp_path / "state").rglob("*"):
        if path.is_file():
            outputs[str(path)] = path.read_bytes().decode("latin-1")
    assert "HTTP 403" in outputs["log"] and "[REDACTED]" in outputs["log"]
    assert "no access for [REDACTED]" in outputs["/"]
    for name, text in outputs.items():
        for form, value in forms.items():
            assert value not in text, (name, form)
