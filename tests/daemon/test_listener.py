"""Exporter conventions and a safe listener (issue 22, point 5): the default process and
platform collectors, OpenMetrics and gzip by negotiation, health checks that no load on the
other endpoints can delay, TLS and basic auth from a web configuration file in the
exporter-toolkit format, configuration reloads, one daemon per state file and the effective
configuration printed with its secrets redacted."""

from __future__ import annotations

import gzip
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import bcrypt
import pytest
import requests
from browser_helpers import page_data
from daemon_helpers import (
    Daemon,
    free_port,
    parse_metrics,
    run_cli,
    runs,
    sample,
    self_signed_certificate,
    toml_config,
)
from prometheus_client import CollectorRegistry, Gauge

from healthd.cli import example_timeline_path
from healthd.cli import main as cli_main
from healthd.daemon import server
from healthd.settings import load_settings


@pytest.fixture
def daemon(tmp_path):
    port = free_port()
    config = toml_config(tmp_path, port=port, targets={"naive": {"kind": "naive", "shadow": True}})
    started = Daemon(config, port, tmp_path / "daemon.log")
    started.config = config
    yield started
    if started.proc.poll() is None:
        started.proc.kill()
        started.proc.wait()


def test_metrics_negotiate_openmetrics_and_gzip_beside_the_default_collectors(daemon):
    daemon.wait_ready()
    plain = requests.get(daemon.url + "/metrics", headers={"Accept-Encoding": "identity"})
    assert plain.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert "Content-Encoding" not in plain.headers
    names = {name for name, _ in parse_metrics(plain.text)}
    for name in (
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "python_info",
        "python_gc_collections_total",
    ):
        assert name in names, name

    om = requests.get(
        daemon.url + "/metrics",
        headers={"Accept": "application/openmetrics-text; version=1.0.0; charset=utf-8"},
    )
    assert om.headers["Content-Type"].startswith("application/openmetrics-text")
    assert om.text.endswith("# EOF\n")
    assert "healthd_runs_total" in om.text
    # a version the negotiation cannot compare gets the default format, not a 500
    for version in ("abc", "1.x"):
        odd = requests.get(
            daemon.url + "/metrics", headers={"Accept": f"text/plain; version={version}"}
        )
        assert odd.status_code == 200, version
        assert odd.headers["Content-Type"].startswith("text/plain; version=0.0.4")

    raw = requests.get(
        daemon.url + "/metrics", headers={"Accept-Encoding": "gzip"}, stream=True
    ).raw
    assert raw.headers["Content-Encoding"] == "gzip"
    body = gzip.decompress(raw.read(decode_content=False)).decode()
    assert "healthd_runs_total" in body and "# EOF" not in body
    refused = requests.get(daemon.url + "/metrics", headers={"Accept-Encoding": "gzip;q=0"})
    assert "Content-Encoding" not in refused.headers
    assert daemon.stop()[0] == 0


def test_health_checks_are_answered_while_scrapes_wait_their_turn(monkeypatch):
    """Scrapes beyond the rate wait; liveness and readiness never do, and no waiting scrape
    holds a worker they need."""

    class SlowPacer(server.Pacer):
        def __init__(self, *args, **kwargs):
            super().__init__(rate=2.0, burst=1)

    monkeypatch.setattr(server, "Pacer", SlowPacer)
    registry = CollectorRegistry()
    Gauge("up_probe", "a gauge", registry=registry).set(1)
    http = server.HttpServer("127.0.0.1", 0, server.build_app(registry, lambda: {}, lambda: True))
    http.start()
    url = f"http://127.0.0.1:{http.port}"
    stop = threading.Event()

    def scrape() -> None:
        while not stop.is_set():
            try:
                requests.get(url + "/metrics", timeout=30)
            except requests.RequestException:
                pass

    pool = ThreadPoolExecutor(server.WORKERS + 8)
    try:
        for _ in range(server.WORKERS + 8):  # more waiting scrapes than workers
            pool.submit(scrape)
        time.sleep(1.5)
        for path in ("/healthz", "/readyz", "/healthz?verbose=1"):
            answer = requests.get(url + path, timeout=3)  # a waiting scrape needs ~20 s
            assert answer.status_code == 200, path
    finally:
        stop.set()
        http.stop()
        pool.shutdown(wait=True, cancel_futures=True)


def test_clients_dripping_their_requests_neither_starve_health_checks_nor_keep_a_thread(
    monkeypatch,
):
    """More slow clients than workers, each sending a byte of its request line now and then
    (each byte within the idle timeout): health checks are answered at once, and each slow
    connection is cut once its request has taken REQUEST_SECONDS."""
    monkeypatch.setattr(server, "REQUEST_SECONDS", 3.0)
    registry = CollectorRegistry()
    http = server.HttpServer("127.0.0.1", 0, server.build_app(registry, lambda: {}, lambda: True))
    http.start()
    url = f"http://127.0.0.1:{http.port}"
    cut: list[float] = []

    def drip() -> None:
        start = time.monotonic()
        with socket.create_connection(("127.0.0.1", http.port), timeout=10) as conn:
            for byte in b"GET /metrics HTTP/1.1\r\n" * 4:
                try:
                    conn.sendall(bytes([byte]))
                    time.sleep(1.0)  # (under the 5 s idle timeout)
                    if conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                        break  # the server ended the connection
                except BlockingIOError:
                    continue  # nothing from the server yet
                except OSError:
                    break  # reset
            cut.append(time.monotonic() - start)

    pool = ThreadPoolExecutor(server.WORKERS + 8)
    try:
        for _ in range(server.WORKERS + 8):
            pool.submit(drip)
        time.sleep(1.5)
        for path in ("/healthz", "/readyz"):
            started = time.monotonic()
            answer = requests.get(url + path, timeout=5)
            assert answer.status_code == 200 and time.monotonic() - started < 2, path
    finally:
        pool.shutdown(wait=True)
        http.stop()
    assert len(cut) == server.WORKERS + 8
    assert max(cut) < 30, sorted(cut)[-3:]  # the request line alone would take 96 s


def test_clients_posing_as_health_checks_do_not_keep_a_real_one_waiting(monkeypatch):
    """Clients that send a health check's request line and then drip their headers fill the
    health checks' own threads: a real health check then takes a worker, at once."""
    monkeypatch.setattr(server, "REQUEST_SECONDS", 3.0)
    http = server.HttpServer(
        "127.0.0.1", 0, server.build_app(CollectorRegistry(), lambda: {}, lambda: True)
    )
    http.start()
    stop = threading.Event()

    def pose() -> None:
        with socket.create_connection(("127.0.0.1", http.port), timeout=10) as conn:
            try:
                conn.sendall(b"GET /healthz HTTP/1.1\r\n")
                while not stop.wait(1.0):
                    conn.sendall(b"X")
            except OSError:
                pass

    posers = ThreadPoolExecutor(server.HEALTH_WORKERS + 2)
    try:
        for _ in range(server.HEALTH_WORKERS + 2):
            posers.submit(pose)
        time.sleep(1.0)
        started = time.monotonic()
        answer = requests.get(f"http://127.0.0.1:{http.port}/healthz", timeout=5)
        assert answer.status_code == 200 and time.monotonic() - started < 1.5
    finally:
        stop.set()
        posers.shutdown(wait=True)
        http.stop()


def _certificate(tmp_path):
    return self_signed_certificate(tmp_path)


def test_tls_and_basic_auth_from_an_exporter_toolkit_web_config(tmp_path):
    cert, key = _certificate(tmp_path)
    hashed = bcrypt.hashpw(b"s3cret-pw", bcrypt.gensalt(rounds=4)).decode()
    web = tmp_path / "web.yml"
    web.write_text(
        "tls_server_config:\n"
        "  cert_file: tls.crt\n"  # relative to the web config file
        "  key_file: tls.key\n"
        "basic_auth_users:\n"
        f"  prometheus: {hashed.replace('$2b$', '$2y$')}\n"  # htpasswd -B writes $2y$
    )
    port = free_port()
    config = toml_config(tmp_path, port=port, targets={"naive": {"kind": "naive", "shadow": True}})
    daemon = Daemon(config, port, tmp_path / "daemon.log", HEALTHD_SERVER__WEB_CONFIG_FILE=str(web))
    base = f"https://127.0.0.1:{port}"
    try:
        ready = daemon.wait_until(
            lambda: requests.get(base + "/readyz", verify=str(cert), timeout=5).status_code == 200,
            what="ready over TLS",
        )
        assert ready
        # health checks need no credentials (probes and healthchecks carry none)
        assert requests.get(base + "/healthz", verify=str(cert), timeout=5).status_code == 200
        for path in ("/metrics", "/", "/last-run"):
            denied = requests.get(base + path, verify=str(cert), timeout=5)
            assert denied.status_code == 401, path
            assert denied.headers["WWW-Authenticate"].startswith("Basic")
        wrong = requests.get(
            base + "/metrics", verify=str(cert), auth=("prometheus", "nope"), timeout=5
        )
        assert wrong.status_code == 401
        # bcrypt reads 72 bytes and refuses more: a longer password is no password, not a 500
        for user in ("prometheus", "nobody"):
            long = requests.get(base + "/metrics", verify=str(cert), auth=(user, "x" * 80))
            assert long.status_code == 401, user
        scraped = requests.get(
            base + "/metrics", verify=str(cert), auth=("prometheus", "s3cret-pw"), timeout=5
        )
        assert scraped.status_code == 200 and "healthd_runs_total" in scraped.text
        with pytest.raises(requests.ConnectionError):  # no plain HTTP on a TLS listener
            requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
        assert "s3cret-pw" not in daemon.read_log()
    finally:
        assert daemon.stop()[0] == 0


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n", "cert_file"),
        ("basic_auth_users:\n  alice: plaintext\n", "basic_auth_users.alice: not a bcrypt hash"),
        (  # a cost bcrypt refuses (4-31): every login would have failed as a server error
            "basic_auth_users:\n  alice: $2b$99$" + "a" * 53 + "\n",
            "basic_auth_users.alice: not a bcrypt hash",
        ),
        ("basic_auth: {}\n", "basic_auth: unknown key"),
        ("tls_server_config: [\n", "not valid YAML"),
        ("tls_server_config:\n  cert_file: !!timestamp 2024-13-01\n", "not valid YAML: month"),
    ],
)
def test_a_bad_web_config_is_one_line_and_exit_2_at_start_and_in_check_config(
    tmp_path, content, expected
):
    web = tmp_path / "web.yml"
    web.write_text(content)
    config = toml_config(tmp_path, port=free_port())
    for command in ("check-config", "run"):
        done = run_cli(command, "--config", str(config), HEALTHD_SERVER__WEB_CONFIG_FILE=str(web))
        assert done.returncode == 2, (command, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0] and "web.yml" in lines[0], lines


def test_sighup_and_post_reload_apply_a_good_configuration_and_refuse_a_bad_one(daemon):
    daemon.wait_ready()
    config = daemon.config
    good = config.read_text()
    config.write_text(good.replace("[targets.naive]", "[targets.naive]\nbogus = 1"))
    daemon.proc.send_signal(signal.SIGHUP)

    def refused_and_logged():  # the counter goes up just before the line is written
        m = daemon.scrape()
        logged = [l for l in daemon.log_lines() if "reload failed" in l.get("event", "")]
        return sample(m, "healthd_config_reload_failures_total") == 1 and logged and (m, logged)

    metrics, failed = daemon.wait_until(refused_and_logged, what="a refused reload")
    assert sample(metrics, "healthd_config_last_reload_successful") == 0
    assert "targets.naive" in failed[0]["error"]
    assert daemon.proc.poll() is None and runs(daemon.scrape(), "naive") >= 1  # still running

    refused = requests.post(daemon.url + "/-/reload", timeout=10)
    assert refused.status_code == 500 and "targets.naive" in refused.text
    assert requests.get(daemon.url + "/-/reload", timeout=5).status_code == 405

    config.write_text(good + '\n[targets.reference]\nkind = "reference"\nshadow = true\n')
    assert requests.post(daemon.url + "/-/reload", timeout=30).status_code == 200
    metrics = daemon.wait_until(
        lambda: (m := daemon.scrape()) and runs(m, "reference") >= 1 and m,
        what="the added target's first run",
    )
    assert sample(metrics, "healthd_config_last_reload_successful") == 1
    assert sample(metrics, "healthd_config_reload_failures_total") == 2
    assert daemon.stop()[0] == 0


def test_a_reload_that_keeps_a_persistent_shadow_keeps_its_chart_on_the_page(
    start_daemon, tmp_path
):
    """A reload changing only the log level: the reference shadow resumes, so / still
    charts its stages (it showed none until new events came); naive replays afresh."""
    port = free_port()
    config = toml_config(tmp_path, port=port, cron="*/2 * * * * *")
    daemon = start_daemon(config, port=port)
    daemon.wait_ready()

    def stages():
        return {t["name"]: t["stages"] for t in page_data(daemon.get("/").text)["targets"]}

    before = daemon.wait_until(lambda: (s := stages()) and s["reference"] > 0 and s, what="a chart")
    text = config.read_text()
    config.write_text(text.replace("[logging]\n", '[logging]\nlevel = "warning"\n', 1))
    assert requests.post(daemon.url + "/-/reload", timeout=30).status_code == 200
    runs_then = runs(daemon.scrape(), "reference")
    daemon.wait_until(
        lambda: runs(daemon.scrape(), "reference") > runs_then, what="a run after the reload"
    )
    assert stages() == before
    assert daemon.stop()[0] == 0


def test_a_reload_that_removes_a_target_removes_its_series(start_daemon, tmp_path):
    port = free_port()
    config = toml_config(tmp_path, port=port, cron="0 0 1 1 *")
    daemon = start_daemon(config, port=port)
    daemon.wait_ready()
    both = daemon.wait_until(
        lambda: (m := daemon.scrape()) and runs(m, "reference") and runs(m, "naive") and m,
        what="a run of each target",
    )

    def duration_series(metrics):
        return {
            labels["target"]
            for name, labels in (
                (n, dict(l)) for n, l in metrics if n == "healthd_run_duration_seconds_count"
            )
        }

    assert duration_series(both) == {"reference", "naive"}
    text = config.read_text()
    start = text.index("[targets.reference]")
    end = text.index("[targets.naive]")
    config.write_text(text[:start] + text[end:])
    assert requests.post(daemon.url + "/-/reload", timeout=30).status_code == 200
    after = daemon.scrape()
    assert duration_series(after) == {"naive"}
    assert not [n for n, l in after if dict(l).get("target") == "reference"]
    assert daemon.stop()[0] == 0


def test_a_second_daemon_on_the_same_state_file_exits_2_naming_the_holder(daemon, tmp_path):
    daemon.wait_ready()
    second = toml_config(
        tmp_path, port=free_port(), targets={"naive": {"kind": "naive", "shadow": True}}
    )
    done = run_cli("run", "--config", str(second))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pid {daemon.proc.pid}" in lines[0] and "state" in lines[0]
    assert daemon.get("/readyz").status_code == 200  # the first one is untouched
    assert daemon.stop()[0] == 0


def test_a_second_daemon_sharing_a_reference_shadow_file_exits_2_naming_the_holder(
    start_daemon, tmp_path
):
    # Two daemons with their own state files but one shadow `path`: the second's first
    # replay resets the namespace the first is replaying into, and each then replays the
    # other's writes away, or serves them.
    shadow = tmp_path / "shared" / "reference.sqlite"
    targets = {"reference": {"kind": "reference", "shadow": True, "path": str(shadow)}}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    port, other_port = free_port(), free_port()
    first = start_daemon(toml_config(tmp_path / "a", port=port, targets=targets), port=port)
    first.wait_runs("reference")
    second = toml_config(tmp_path / "b", port=other_port, targets=targets)
    done = run_cli("run", "--config", str(second))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(shadow) in lines[0], lines
    assert f"pid {first.proc.pid}" in lines[0] and str(tmp_path / "a") in lines[0], lines
    assert first.get("/readyz").status_code == 200  # the first one is untouched
    assert first.stop()[0] == 0
    alone = start_daemon(second, port=other_port, log_name="second.log")
    alone.wait_runs("reference")  # the lock ends with the daemon that held it
    assert alone.stop()[0] == 0


@pytest.mark.parametrize("second_state", ["b/state/state.sqlite", "a/state/other.sqlite"])
def test_a_second_daemon_reaching_the_first_one_s_own_shadow_file_exits_2_naming_the_holder(
    start_daemon, tmp_path, second_state
):
    # The first daemon keeps its shadow beside its state file (no path given). A second one
    # given that file as its path, or keeping its own state file in the same directory
    # (whose shadows go to the same shadows/reference.sqlite), took it unopposed, and each
    # replayed the other's writes away.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    port, other_port = free_port(), free_port()
    own = {"reference": {"kind": "reference", "shadow": True}}
    first = start_daemon(toml_config(tmp_path / "a", port=port, targets=own), port=port)
    first.wait_runs("reference")
    shadow = tmp_path / "a" / "state" / "shadows" / "reference.sqlite"
    given = {"reference": {"kind": "reference", "shadow": True, "path": str(shadow)}}
    second = toml_config(
        tmp_path / "b", port=other_port, targets=given if second_state.startswith("b") else own
    )
    second.write_text(
        second.read_text().replace(
            str(tmp_path / "b" / "state" / "state.sqlite"), str(tmp_path / second_state)
        )
    )
    done = run_cli("run", "--config", str(second))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(shadow) in lines[0], lines
    assert f"pid {first.proc.pid}" in lines[0] and str(tmp_path / "a") in lines[0], lines
    assert first.get("/readyz").status_code == 200  # the first one is untouched
    assert first.stop()[0] == 0


@pytest.mark.parametrize("link", ["symlink", "hard link", "symlinked directory"])
def test_a_link_to_a_running_daemon_s_state_file_is_the_same_state_file(daemon, tmp_path, link):
    import os

    daemon.wait_ready()
    state = tmp_path / "state" / "state.sqlite"
    other = tmp_path / "other"
    other.mkdir()
    if link == "symlink":
        alias = other / "alias.sqlite"
        alias.symlink_to(state)
    elif link == "hard link":
        alias = other / "alias.sqlite"
        os.link(state, alias)
    else:
        (other / "dir").symlink_to(state.parent, target_is_directory=True)
        alias = other / "dir" / "state.sqlite"
    (other / "second").mkdir()
    second = toml_config(
        other / "second", port=free_port(), targets={"naive": {"kind": "naive", "shadow": True}}
    )
    second.write_text(
        second.read_text().replace(str(other / "second" / "state" / "state.sqlite"), str(alias))
    )
    done = run_cli("run", "--config", str(second))
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0] == (
        f"healthd: error: state file {alias} is in use by another healthd "
        f"(pid {daemon.proc.pid}, started with state_path {state}); "
        "give each daemon its own state_path"
    )
    before = runs(daemon.scrape(), "naive")
    metrics = daemon.wait_runs("naive", before + 2)  # the first one is untouched
    assert runs(metrics, "naive", "failure") == 0
    assert daemon.stop()[0] == 0


def test_check_config_print_shows_the_effective_configuration_with_secrets_redacted(
    tmp_path, monkeypatch, capsys
):
    config = tmp_path / "healthd.toml"
    config.write_text(
        'state_path = "state/state.sqlite"\n'
        "[sources.tickets]\n"
        'kind = "github"\n'
        'repo = "acme/payments"\n'
        'base_url = "https://bot:hunter2@ghe.example.com/api/v3"\n'
        'token_env = "GITHUB_TOKEN"\n'
        "[targets.reference]\n"
        'kind = "reference"\n'
        "shadow = true\n"
    )
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    monkeypatch.setenv("HEALTHD_SERVER__PORT", "9555")
    monkeypatch.setenv("HEALTHD_TARGETS__REFERENCE__TTL", "off")
    assert cli_main(["check-config", "--config", str(config), "--print"]) == 0
    out = capsys.readouterr().out
    assert "hunter2" not in out and "ghp_" not in out
    assert 'token_env = "GITHUB_TOKEN"' in out  # a variable's name, not a secret
    assert "port = 9555" in out and 'ttl = "off"' in out
    assert f'state_path = "{tmp_path / "state" / "state.sqlite"}"' in out  # resolved
    # what it prints is a configuration that loads, to the same values (secrets aside)
    printed = tmp_path / "printed.toml"
    printed.write_text(out.replace("[REDACTED]@", ""))
    monkeypatch.delenv("HEALTHD_SERVER__PORT")
    monkeypatch.delenv("HEALTHD_TARGETS__REFERENCE__TTL")
    again = load_settings(str(printed))
    assert again.server.port == 9555 and again.targets["reference"].options["ttl"] == "off"
    assert again.staleness == load_settings(str(config)).staleness


def test_check_config_print_of_the_bundled_example_loads_back_to_the_same_sources(tmp_path, capsys):
    config = tmp_path / "healthd.toml"
    config.write_text('example = true\nstate_path = "state/state.sqlite"\n')
    assert cli_main(["check-config", "--config", str(config), "--print"]) == 0
    printed = tmp_path / "printed.toml"
    printed.write_text(capsys.readouterr().out)
    again = load_settings(str(printed))
    assert again.example is True
    assert again.sources == load_settings(str(config)).sources


def test_check_config_print_loads_back_whatever_the_names_and_values_hold(tmp_path, capsys):
    # TOML escapes DEL (JSON does not) and keeps bare keys to ASCII (str.isalnum is wider)
    timeline = tmp_path / "ex\x7fample.jsonl"
    with open(example_timeline_path(), "rb") as example:
        timeline.write_bytes(example.read())
    written = str(timeline).replace("\x7f", "\\u007f")
    config = tmp_path / "healthd.toml"
    config.write_text(f'[sources."caf\u00e9"]\nkind = "file"\npath = "{written}"\n')
    assert cli_main(["check-config", "--config", str(config), "--print"]) == 0
    printed = tmp_path / "printed.toml"
    printed.write_text(capsys.readouterr().out)
    again = load_settings(str(printed))
    assert again.sources["caf\u00e9"].options["path"] == str(timeline)


def test_head_answers_with_the_headers_of_get_and_no_body():
    """A HEAD of /metrics (a load balancer's or an uptime checker's probe) gets GET's status
    and headers without the exposition: wsgiref would send all of it."""
    registry = CollectorRegistry()
    Gauge("up_probe", "a gauge", registry=registry).set(1)
    http = server.HttpServer("127.0.0.1", 0, server.build_app(registry, lambda: {}, lambda: True))
    http.start()
    try:
        for path in ("/metrics", "/healthz", "/no-such-page"):
            url = f"http://127.0.0.1:{http.port}{path}"
            got = requests.get(url, timeout=5)
            with socket.create_connection(("127.0.0.1", http.port), timeout=5) as conn:
                conn.sendall(f"HEAD {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
                raw = b""
                while chunk := conn.recv(65536):
                    raw += chunk
            head, _, body = raw.partition(b"\r\n\r\n")
            status = head.split(b"\r\n")[0].split(b" ", 2)[1]
            assert int(status) == got.status_code and body == b"", path
            length = [
                v
                for k, v in (line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
                if k.lower() == b"content-length"
            ]
            assert length == [str(len(got.content)).encode()] or path != "/metrics", path
    finally:
        http.stop()
