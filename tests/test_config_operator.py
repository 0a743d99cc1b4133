"""What an operator meets in a configuration file: each mistake is one line naming the key
and what is wrong, from `check-config` (exit 2) as from every other command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from healthd.cli import main as cli_main
from healthd.settings import load_settings


def _check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "healthd.toml"
    path.write_text("example = true\n" + text)
    code = cli_main(["check-config", "--config", str(path)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("forgetting_window = true\n", "forgetting_window"),
        ("checkpoint_events = true\n", "checkpoint_events"),
        ("warm_keys = false\n", "warm_keys"),
        ("[server]\nport = true\n", "server.port"),
        ("[llm.prices]\nprompt = true\ncompletion = 0.6\nembedding = 0.02\n", "llm.prices.prompt"),
    ],
)
def test_a_boolean_where_a_number_belongs_is_refused_naming_the_key(tmp_path, capsys, text, key):
    # TOML's true is no number; read as 1 it would make `port = true` a listener on port 1
    code, err = _check(tmp_path, text, capsys)
    assert code == 2
    assert f": {key}: expected a number, got a boolean" in err
    assert len(err.strip().splitlines()) == 1


def test_a_whole_number_written_as_text_in_the_environment_still_loads(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("HEALTHD_FORGETTING_WINDOW", "5")
    monkeypatch.setenv("HEALTHD_SERVER__PORT", "9000")
    code, err = _check(tmp_path, "", capsys)
    assert (code, err) == (0, "")


@pytest.mark.parametrize(
    ("text", "where", "key"),
    [
        (
            '[sources.gh]\nkind = "github"\nrepo = "a/b"\ntoken = "s3cr3t-value"\n',
            "sources.gh",
            "token",
        ),
        (
            '[targets.team]\nkind = "http"\nbase_url = "http://127.0.0.1:1"\nnamespace = "n"\n'
            'shadow = true\npassword = "s3cr3t-value"\n',
            "targets.team",
            "password",
        ),
        ('[server]\napi_key = "s3cr3t-value"\n', "server", "api_key"),
    ],
)
def test_a_secret_written_in_the_file_is_named_by_its_key_never_shown(
    tmp_path, capsys, text, where, key
):
    # the line is redacted as it is printed: it must still say which key and what is wrong
    code, err = _check(tmp_path, text, capsys)
    assert code == 2
    assert "s3cr3t-value" not in err and "[REDACTED]" not in err
    assert f"{where}: unknown {'key' if where == 'server' else 'option'} {key!r}" in err
    assert "environment variable" in err
    assert len(err.strip().splitlines()) == 1


def test_a_secret_given_in_an_unknown_variable_is_named_by_the_variable_never_shown(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("HEALTHD_SERVER__PASSWORD", "s3cr3t-value")
    code, err = _check(tmp_path, "", capsys)
    assert code == 2
    assert "s3cr3t-value" not in err and "[REDACTED]" not in err
    assert "environment HEALTHD_SERVER__PASSWORD sets unknown key 'server.password'" in err


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("not a host!", "not an IP address or a host name"),
        ("127.0.0.1:9479", "the port goes in server.port"),
        ("[::1]:9479", "the port goes in server.port"),
        ("-healthd", "not an IP address or a host name"),
        ("http://0.0.0.0", "not an IP address or a host name"),
    ],
)
def test_a_listen_address_that_cannot_be_bound_is_refused_before_run(tmp_path, capsys, host, why):
    # `healthd run` would fail at start with "cannot listen on ...": check-config says it first
    code, err = _check(tmp_path, f"[server]\nhost = {host!r}\n", capsys)
    assert code == 2
    assert ": server.host: " in err and why in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "127.0.0.1", "::", "::1", "[::]", "localhost", "healthd.svc.local", ""]
)
def test_an_address_or_host_name_is_a_listen_address(tmp_path, capsys, host):
    assert _check(tmp_path, f"[server]\nhost = {host!r}\n", capsys) == (0, "")


def test_a_variable_sets_a_switch_of_a_default_target_under_a_file_without_targets(
    tmp_path, monkeypatch
):
    # config/default.toml's own example: HEALTHD_TARGETS__REFERENCE__TTL=off
    monkeypatch.setenv("HEALTHD_TARGETS__REFERENCE__TTL", "off")
    path = tmp_path / "healthd.toml"
    path.write_text("example = true\n")
    settings = load_settings(str(path))
    assert {name: target.kind for name, target in settings.targets.items()} == {
        "reference": "reference",
        "naive": "naive",
    }
    assert settings.targets["reference"].options["ttl"] == "off"


@pytest.mark.parametrize("written", ['state_path = ""\n', 'state_path = "  "\n'])
def test_a_state_path_that_names_no_file_is_refused_before_run(tmp_path, capsys, written):
    # `healthd run` would fail at start with "healthd: error: : cannot open state file"
    code, err = _check(tmp_path, written, capsys)
    assert code == 2
    assert ": state_path: " in err and "names no file" in err


def test_an_empty_state_path_from_the_environment_is_refused_naming_the_variable(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("HEALTHD_STATE_PATH", "")
    code, err = _check(tmp_path, "", capsys)
    assert code == 2
    assert err.startswith("healthd: error: environment HEALTHD_STATE_PATH: state_path: ")


@pytest.mark.parametrize("interval", ["0s", "0m", "PT0S"])
def test_a_progress_interval_of_nothing_is_refused(tmp_path, capsys, interval):
    # 0 would log a progress line and take the view's lock for every event replayed
    code, err = _check(tmp_path, f'[logging]\nprogress_interval = "{interval}"\n', capsys)
    assert code == 2
    assert ": logging.progress_interval: must be longer than 0" in err


@pytest.mark.parametrize(
    ("table", "option"),
    [
        ('[sources.gh]\nkind = "github"\nrepo = "a/b"\n', "timeout_seconds"),
        ('[sources.gh]\nkind = "github"\nrepo = "a/b"\n', "max_retries"),
        (
            '[sources.j]\nkind = "jira"\nbase_url = "https://jira.example"\njql = "project = P"\n',
            "max_retries",
        ),
    ],
)
def test_a_boolean_for_a_sources_number_is_refused_naming_the_option(
    tmp_path, capsys, table, option
):
    # `timeout_seconds = true` would bound every request to one second
    code, err = _check(tmp_path, f"{table}{option} = true\n", capsys)
    assert code == 2
    assert f".{option}: expected a number, got a boolean (true)" in err


@pytest.mark.parametrize(
    ("make", "name", "reason"),
    [
        (lambda p: p.write_text("a file\n"), "a-file/ref.sqlite", "is not a directory"),
        (lambda p: p.mkdir(), "a-directory", "is a directory"),
    ],
)
def test_a_reference_shadow_path_a_run_cannot_open_is_refused_before_run(
    tmp_path, capsys, make, name, reason
):
    # each run would fail ("FileNotFoundError: ... No such file or directory") after
    # check-config said ok
    make(tmp_path / name.split("/")[0])
    code, err = _check(
        tmp_path,
        f'[targets.reference]\nkind = "reference"\nshadow = true\npath = "{tmp_path / name}"\n',
        capsys,
    )
    assert code == 2
    assert ": targets.reference.path: " in err and reason in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "where", "key"),
    [
        (
            '[sources.gh]\nkind = "github"\nrepo = "a/b"\nmax_tokens = 500\n',
            "sources.gh",
            "max_tokens",
        ),
        ("[server]\npasswords_allowed = true\n", "server", "passwords_allowed"),
    ],
)
def test_an_unknown_key_that_only_sounds_secret_is_named_readably_and_not_called_a_secret(
    tmp_path, capsys, text, where, key
):
    # a number or a switch is no secret; the key's name alone would blank the line's words
    code, err = _check(tmp_path, text, capsys)
    assert code == 2
    assert "[REDACTED]" not in err and "secret" not in err
    assert f"{where}: unknown {'key' if where == 'server' else 'option'} {key!r}" in err


def test_a_file_with_targets_replaces_the_built_in_ones_a_variable_adding_to_them(
    tmp_path, monkeypatch
):
    # docs/operating.md: a file's [targets] tables replace the built-in ones, so naive goes;
    # without [targets] a variable's new target joins reference and naive
    monkeypatch.setenv("HEALTHD_TARGETS__MINE__KIND", "reference")
    monkeypatch.setenv("HEALTHD_TARGETS__MINE__SHADOW", "true")
    own = tmp_path / "own.toml"
    own.write_text('example = true\n[targets.ref]\nkind = "reference"\nshadow = true\n')
    assert sorted(load_settings(str(own)).targets) == ["mine", "ref"]
    bare = tmp_path / "bare.toml"
    bare.write_text("example = true\n")
    assert sorted(load_settings(str(bare)).targets) == ["mine", "naive", "reference"]


def test_a_reference_target_without_a_shadow_file_is_not_checked_as_one(
    tmp_path, capsys, monkeypatch
):
    # path = "" is no file (a shadow of the run's own, as ":memory:"): the daemon keeps no
    # file for it, so where one could be created does not matter. Run as a user who may not
    # write in the working directory's parent, it was refused: 'cannot create it:
    # permission denied in ...'
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    real = os.access
    # the working directory's parent is not writable, as for a daemon user in /app
    monkeypatch.setattr(
        "healthd.daemon.state.os.access",
        lambda path, mode: real(path, mode) and os.path.abspath(path) != str(tmp_path),
    )
    for path in ("", ":memory:"):
        target = (
            f'state_path = ":memory:"\n[targets.reference]\nkind = "reference"\n'
            f'shadow = true\npath = "{path}"\n'
        )
        assert _check(tmp_path, target, capsys) == (0, "")


def test_a_reference_shadow_path_is_checked_where_the_run_opens_it(tmp_path, capsys, monkeypatch):
    # a run opens "~/ref.sqlite" as written (below a directory named "~" in its working
    # directory, made for it), not in $HOME: here "~" is a file, so every run would fail
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "~").write_text("not a directory\n")
    target = '[targets.reference]\nkind = "reference"\nshadow = true\npath = "~/ref.sqlite"\n'
    code, err = _check(tmp_path, target, capsys)
    assert code == 2
    assert "targets.reference.path: ~/ref.sqlite: " in err and "is not a directory" in err


@pytest.mark.parametrize(
    ("name", "value", "key"),
    [
        ("HEALTHD_SERVER__MAX_TOKENS", "500", "server.max_tokens"),
        ("HEALTHD_SERVER__PASSWORDS_ALLOWED", "true", "server.passwords_allowed"),
    ],
)
def test_a_variable_that_only_sounds_secret_is_not_called_a_secret(
    tmp_path, capsys, monkeypatch, name, value, key
):
    # every variable is text: a number or a switch in it is no more a secret than in the file
    monkeypatch.setenv(name, value)
    code, err = _check(tmp_path, "", capsys)
    assert code == 2
    assert "[REDACTED]" not in err and "secret" not in err and value not in err
    assert f"environment {name} sets unknown key {key!r}" in err
