"""`healthd healthcheck` reads only what it asks with, the `[server]` table: a daemon kept
running on its last good configuration is healthy while the file on disk holds a mistake
elsewhere (a reload refused it; the engine must not restart the daemon into it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_helpers import free_port
from prometheus_client import CollectorRegistry

from healthd.cli import main as cli_main
from healthd.daemon import server


@pytest.fixture
def listener():
    http = server.HttpServer(
        "127.0.0.1", free_port(), server.build_app(CollectorRegistry(), lambda: {}, lambda: True)
    )
    http.start()
    yield http
    http.stop()


def _config(tmp_path: Path, port: int, rest: str) -> str:
    path = tmp_path / "healthd.toml"
    path.write_text(f'example = true\n{rest}\n[server]\nhost = "127.0.0.1"\nport = {port}\n')
    return str(path)


@pytest.mark.parametrize(
    "mistake",
    [
        "forgetting_window = 0",
        '[schedule]\ncron = "61 * * * *"',
        '[targets.x]\nkind = "reference"\nshadow = true\nttl = "maybe"',
        "bogus = 1",
    ],
)
def test_a_mistake_outside_server_leaves_a_running_daemon_healthy(
    tmp_path, capsys, listener, mistake
):
    assert cli_main(["healthcheck", "--config", _config(tmp_path, listener.port, mistake)]) == 0
    assert capsys.readouterr().err == ""


def test_a_server_table_that_does_not_load_is_still_unhealthy_naming_the_key(tmp_path, capsys):
    path = tmp_path / "healthd.toml"
    path.write_text('[server]\nport = "x"\n')
    assert cli_main(["healthcheck", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("healthd: unhealthy: ") and "server.port" in err


@pytest.mark.parametrize(
    "mistake",
    [
        '[targets.x]\nkind = "reference\nshadow = true',  # an unclosed string
        "[schedule]\ncron = * * * * *",  # text without quotes
        "[targets]\nx = [1, 2",  # an unclosed array
    ],
)
def test_a_file_that_is_not_toml_outside_server_leaves_a_running_daemon_healthy(
    tmp_path, capsys, listener, mistake
):
    # a reload refuses a file that does not parse, keeping the last good configuration, as
    # it refuses any other mistake: the engine must not restart the daemon into it
    assert cli_main(["healthcheck", "--config", _config(tmp_path, listener.port, mistake)]) == 0
    assert capsys.readouterr().err == ""


def test_a_server_table_that_is_not_toml_is_still_unhealthy(tmp_path, capsys):
    path = tmp_path / "healthd.toml"
    path.write_text('[targets]\nx = [1\n[server]\nport = "9479\n')
    assert cli_main(["healthcheck", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("healthd: unhealthy: ") and "not valid TOML" in err


@pytest.mark.parametrize(
    "text",
    [
        "[server\nport = 1\n[targets]\nx = [1\n",  # a header that does not parse
        "server.port = 1\n[targets]\nx = [1\n[server]\nhost = '127.0.0.1'\n",  # dotted
        "[server]\nport = 1\n[targets]\nx = [1\n[server]\nport = 2\n",  # which is it?
    ],
)
def test_a_file_that_is_not_toml_where_server_may_be_is_unhealthy(tmp_path, capsys, text):
    path = tmp_path / "healthd.toml"
    path.write_text(text)
    assert cli_main(["healthcheck", "--config", str(path)]) == 1
    assert "not valid TOML" in capsys.readouterr().err


@pytest.mark.parametrize(
    "mistake",
    [
        "bogus = 1",  # TOML: healthy before this change too
        '[targets.x]\nkind = "reference\nshadow = true',  # an unclosed string
        "[targets]\nx = [1, 2",  # an unclosed array
    ],
)
def test_a_file_without_server_that_is_not_toml_leaves_a_running_daemon_healthy(
    tmp_path, capsys, monkeypatch, listener, mistake
):
    # most shipped configs (config/backstage.toml, zep, letta, mem0-team, ...) have no
    # [server]: the daemon listens where the defaults and HEALTHD_SERVER__* say, as it did
    # before the file broke; a parseable mistake left it healthy and one that does not
    # parse made it unhealthy, and the engine restarted it into the broken file
    monkeypatch.setenv("HEALTHD_SERVER__HOST", "127.0.0.1")
    monkeypatch.setenv("HEALTHD_SERVER__PORT", str(listener.port))
    path = tmp_path / "healthd.toml"
    path.write_text(f"example = true\n{mistake}\n")
    assert cli_main(["healthcheck", "--config", str(path)]) == 0
    assert capsys.readouterr().err == ""
