"""Every file healthd reads by name (configuration, web configuration, probes, a saved
report, a labelled set, certificates) must be a regular file: a named pipe or a device is
refused at once in one line naming the path and what it is, never waited on (issue 39)."""

from __future__ import annotations

import os
import subprocess

import pytest
from daemon_helpers import PYTHON, ROOT, clean_env, toml_config


def cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI, stopped after 20 s: a command blocked on a pipe fails the test, not hangs."""
    return subprocess.run(
        [PYTHON, "-m", "healthd", *args],
        cwd=str(ROOT),
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=20,
    )


def refusal(result: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[:2000]
    return lines[0]


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_a_probe_file_that_is_a_pipe_is_refused_by_check_config_run_and_evaluate(tmp_path, fifo):
    config = toml_config(tmp_path, extra=f"probes = {str(fifo)!r}")
    for command in (
        ["check-config", "--config", str(config)],
        ["run", "--config", str(config)],
        ["evaluate", "--config", str(config)],
        ["evaluate", "--probes", str(fifo)],
    ):
        line = refusal(cli(*command))
        assert str(fifo) in line and "is a named pipe, not a regular file" in line, command


def test_a_device_as_a_probe_file_is_refused_naming_it(tmp_path):
    line = refusal(cli("evaluate", "--probes", "/dev/zero"))
    assert "/dev/zero" in line and "is a character device, not a regular file" in line


def test_a_configuration_that_is_a_pipe_is_refused(fifo):
    for command in ("check-config", "run", "evaluate", "timeline"):
        line = refusal(cli(command, "--config", str(fifo)))
        assert line == (
            f"healthd: error: {fifo}: cannot read configuration file: "
            "is a named pipe, not a regular file"
        ), command


def test_a_web_configuration_or_certificate_that_is_a_pipe_is_refused(tmp_path, fifo):
    config = toml_config(tmp_path)
    config.write_text(
        config.read_text().replace("[server]\n", f"[server]\nweb_config_file = {str(fifo)!r}\n")
    )
    for command in ("check-config", "run"):
        line = refusal(cli(command, "--config", str(config)))
        assert str(fifo) in line and "is a named pipe, not a regular file" in line, command
    web = tmp_path / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {fifo}\n  key_file: {fifo}\n")
    config.write_text(config.read_text().replace(str(fifo), str(web)))
    line = refusal(cli("check-config", "--config", str(config)))
    assert f"tls_server_config.cert_file: {fifo} is a named pipe, not a regular file" in line


def test_a_saved_report_or_a_labelled_set_that_is_a_pipe_is_refused(tmp_path, fifo):
    line = refusal(cli("report", "--from", str(fifo), "--html", str(tmp_path / "r.html")))
    assert str(fifo) in line and "is a named pipe, not a regular file" in line
    line = refusal(cli("reader-check", "--labelled", str(fifo)))
    assert str(fifo) in line and "is a named pipe, not a regular file" in line
