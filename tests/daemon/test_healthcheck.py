"""`healthd healthcheck` (the image's HEALTHCHECK) asks /healthz at the port the running
daemon's configuration gives, not at a port read from the environment alone."""

from __future__ import annotations

import signal

import pytest
from daemon_helpers import free_port, run_cli, start_daemon, toml_config

__all__ = ["start_daemon"]  # the fixture


@pytest.mark.slow
def test_healthcheck_finds_the_port_in_the_config_the_daemon_was_started_with(
    start_daemon, tmp_path
):
    port = free_port()
    daemon = start_daemon(toml_config(tmp_path, port=port), port=port)
    daemon.wait_ready()
    pid = str(daemon.proc.pid)
    # no --config, no HEALTHD_* variable: the port comes from the `run --config` of the pid
    healthy = run_cli("healthcheck", "--pid", pid)
    assert healthy.returncode == 0, healthy.stderr
    assert run_cli("healthcheck", "--config", str(tmp_path / "healthd.toml")).returncode == 0
    # a stopped daemon is unhealthy: exit 1 (what Docker reads as unhealthy), one line
    daemon.proc.send_signal(signal.SIGSTOP)
    try:
        hung = run_cli("healthcheck", "--pid", pid, "--timeout", "1")
    finally:
        daemon.proc.send_signal(signal.SIGCONT)
    assert hung.returncode == 1
    assert hung.stderr.startswith("healthd: unhealthy: ") and len(hung.stderr.splitlines()) == 1
    assert f"127.0.0.1:{port}/healthz" in hung.stderr
    daemon.stop()
    gone = run_cli("healthcheck", "--pid", pid, "--config", str(tmp_path / "healthd.toml"))
    assert gone.returncode == 1 and f":{port}/healthz" in gone.stderr


def test_healthcheck_with_an_unreadable_config_is_unhealthy_in_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[server\n")
    proc = run_cli("healthcheck", "--config", str(bad))
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "not valid TOML" in proc.stderr


def test_wildcard_hosts_are_asked_on_the_loopback():
    from healthd.daemon.healthcheck import config_of_run, healthz_url
    from healthd.settings import ServerConfig

    assert healthz_url(ServerConfig(host="0.0.0.0", port=9)) == "http://127.0.0.1:9/healthz"
    assert healthz_url(ServerConfig(host="::", port=9)) == "http://[::1]:9/healthz"
    assert healthz_url(ServerConfig(host="10.0.0.7", port=9)) == "http://10.0.0.7:9/healthz"
    tini = ["/sbin/tini", "--", "/opt/healthd/bin/healthd", "run", "--config", "/etc/h.toml"]
    assert config_of_run(tini) == "/etc/h.toml"
    assert config_of_run(["healthd", "run", "--config=/x.toml"]) == "/x.toml"
    assert config_of_run(["healthd", "evaluate", "--config", "/x.toml"]) is None
