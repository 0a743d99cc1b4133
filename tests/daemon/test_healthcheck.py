"""`healthd healthcheck` (the image's HEALTHCHECK) asks /healthz at the port the running
daemon's configuration gives, not at a port read from the environment alone."""

from __future__ import annotations

import signal
import time

import bcrypt
import pytest
import requests
from daemon_helpers import (
    free_port,
    run_cli,
    self_signed_certificate,
    start_daemon,
    toml_config,
)

# the tests' own waits for a TLS listener check no certificate; the healthcheck does
pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

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


def test_a_relative_config_of_the_run_is_read_from_that_process_s_directory(tmp_path):
    """`healthd run --config healthd.toml` started in /srv, checked from anywhere else."""
    import subprocess
    import sys

    from healthd.daemon.healthcheck import config_of_process, process_argv

    elsewhere = tmp_path / "srv"
    elsewhere.mkdir()
    stand_in = subprocess.Popen(  # a command line as the daemon's, in its own directory
        [sys.executable, "-c", "import time; time.sleep(30)", "run", "--config", "healthd.toml"],
        cwd=elsewhere,
    )
    try:
        deadline = time.monotonic() + 10
        while not process_argv(stand_in.pid) and time.monotonic() < deadline:
            time.sleep(0.02)  # until its exec has replaced the forked command line
        assert config_of_process(stand_in.pid) == str(elsewhere / "healthd.toml")
    finally:
        stand_in.kill()
        stand_in.wait()


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


@pytest.mark.parametrize("names", ["IP:127.0.0.1,DNS:localhost", "DNS:healthd.monitoring.svc"])
def test_healthcheck_speaks_https_to_a_daemon_serving_tls(start_daemon, tmp_path, names):
    """The image's HEALTHCHECK against a TLS listener: it trusts the certificate the web
    configuration names (whatever names the certificate gives: it asks the loopback), and
    /healthz needs no credentials even when users are configured."""
    cert, _ = self_signed_certificate(tmp_path, names)
    web = tmp_path / "web.yml"
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
    web.write_text(
        f"tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n"
        f"basic_auth_users:\n  prometheus: {hashed}\n"
    )
    port = free_port()
    config = toml_config(tmp_path, port=port)
    config.write_text(
        config.read_text().replace(
            f"port = {port}\n", f"port = {port}\nweb_config_file = {str(web)!r}\n"
        )
    )
    daemon = start_daemon(config, port=port)
    daemon.wait_until(
        lambda: (
            requests.get(f"https://127.0.0.1:{port}/healthz", verify=False, timeout=5).status_code
            == 200
        ),
        what="the TLS listener",
    )
    healthy = run_cli("healthcheck", "--config", str(config))
    assert healthy.returncode == 0, healthy.stderr
    assert run_cli("healthcheck", "--pid", str(daemon.proc.pid)).returncode == 0
    daemon.stop()
    gone = run_cli("healthcheck", "--config", str(config))
    assert gone.returncode == 1 and f"https://127.0.0.1:{port}/healthz" in gone.stderr


def test_healthcheck_refuses_a_tls_listener_whose_certificate_is_not_the_configured_one(
    start_daemon, tmp_path
):
    """Trusting the configured certificate is a pin: another certificate is unhealthy."""
    self_signed_certificate(tmp_path)
    other, _ = self_signed_certificate(tmp_path, stem="other")
    web = tmp_path / "web.yml"
    web.write_text("tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n")
    port = free_port()
    config = toml_config(tmp_path, port=port)
    config.write_text(
        config.read_text().replace(
            f"port = {port}\n", f"port = {port}\nweb_config_file = {str(web)!r}\n"
        )
    )
    daemon = start_daemon(config, port=port)
    daemon.wait_until(
        lambda: requests.get(f"https://127.0.0.1:{port}/healthz", verify=False, timeout=5).ok,
        what="the TLS listener",
    )
    # the healthcheck's configuration names another certificate than the one served
    web.write_text("tls_server_config:\n  cert_file: other.crt\n  key_file: other.key\n")
    wrong = run_cli("healthcheck", "--config", str(config))
    assert wrong.returncode == 1 and "CERTIFICATE_VERIFY_FAILED" in wrong.stderr, wrong.stderr
    daemon.stop()
