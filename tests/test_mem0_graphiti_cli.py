"""Mem0 and Graphiti beside the reference memory in `healthd evaluate`, as a user runs it:
a real process, offline, and bad input as one line with exit code 2."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

os.environ["MEM0_TELEMETRY"] = "False"
pytest.importorskip("mem0", reason="the mem0 extra is not installed")
pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed")

SIX_TARGETS = [
    "reference",
    "naive",
    "mem0:mode=native",
    "mem0:mode=managed",
    "graphiti:search=default",
    "graphiti:search=valid",
]


SUPERSESSION_ONLY = "reference:propagation=off,ttl=off"


def offline_prefix() -> list[str]:
    """Run in a network namespace of its own, with no interface up but loopback's."""
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "-n", "true"], timeout=10).returncode != 0:
        pytest.skip("cannot take the network away here (unshare -n needs root)")
    return [unshare, "-n"]


def healthd(*args: str, offline: bool = False, code: str | None = None):
    env = {k: v for k, v in os.environ.items() if k != "MEM0_TELEMETRY"}  # healthd sets it
    env["COLUMNS"] = "120"
    runner = (
        [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "healthd", *args]
    )
    return subprocess.run(
        (offline_prefix() if offline else []) + runner,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def targets(names: list[str]) -> list[str]:
    return [arg for name in names for arg in ("--target", name)]


@pytest.mark.slow
def test_six_targets_on_the_example_offline_one_table_and_same_bytes_twice():
    table = healthd("evaluate", *targets(SIX_TARGETS), offline=True)
    assert table.returncode == 0, table.stderr
    for name in SIX_TARGETS:
        assert f"{name}  (135 events" in table.stdout
    assert "Traceback" not in table.stderr and "posthog" not in table.stderr.lower()

    runs = [
        healthd(
            "evaluate",
            "--format",
            "json",
            *targets(SIX_TARGETS[2:] + [SUPERSESSION_ONLY]),
            offline=True,
        )
        for _ in range(2)
    ]
    assert runs[0].returncode == 0, runs[0].stderr
    assert runs[0].stdout == runs[1].stdout
    final = {t["name"]: t["final"]["metrics"] for t in json.loads(runs[0].stdout)["targets"]}
    # What each mechanism does, as the README tells it. Add-only (Mem0's add, Graphiti's
    # unfiltered search) keeps serving what ended: nothing is ever forgotten.
    for name in ("mem0:mode=native", "graphiti:search=default"):
        assert final[name]["all"]["forgetting"] == 0
        assert final[name]["all"]["conflicts"] > 0
    # Supersession (Mem0's update/delete, Graphiti's invalid_at filter) forgets revised
    # values, but nothing cascades: the tech facts of a decommissioned service stay.
    for name in ("mem0:mode=managed", "graphiti:search=valid"):
        assert 0 < final[name]["tech"]["forgetting"] < 1
        native = final["mem0:mode=native"]["all"]["contamination"]
        assert final[name]["all"]["contamination"] < native
    # A late, backdated revision: Graphiti's valid time ends it at once; Mem0 has no valid
    # time, so the managed adapter's update lands it beside the newer value.
    assert final["graphiti:search=valid"]["ownership"]["conflicts"] == 0
    assert final["mem0:mode=managed"]["ownership"]["conflicts"] == 1
    # Graphiti filtered to valid edges is, number for number, the reference memory with
    # supersession alone: no TTL, no cascade.
    assert final["graphiti:search=valid"] == final[SUPERSESSION_ONLY]


_WITHOUT = (
    "import sys; sys.modules[{module!r}] = None; "
    "from healthd.cli import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.parametrize(
    "module, target, extra",
    [
        ("mem0", "mem0", "mem0"),
        ("graphiti_core", "graphiti:search=valid", "graphiti"),
        ("kuzu", "graphiti", "graphiti"),
    ],
)
def test_a_missing_extra_names_the_pip_command(module, target, extra):
    done = healthd("evaluate", "--target", target, code=_WITHOUT.format(module=module))
    assert done.returncode == 2, done.stderr
    assert f"pip install 'healthd[{extra}]'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("kind", ["mem0", "graphiti"])
def test_an_unwritable_store_path_is_one_line_and_exit_2(tmp_path, kind):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    done = healthd("evaluate", "--target", f"{kind}:path={blocker}/store,shadow=on")
    assert done.returncode == 2, done.stderr
    assert "is not writable" in done.stderr and str(blocker) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize("switch", ["user_id=healthd shadow", "run_id=run 1"])
def test_an_id_mem0_refuses_for_its_whitespace_is_one_line_and_exit_2(tmp_path, switch):
    """Mem0 refuses an entity id with whitespace inside (``_validate_and_trim_entity_id``):
    said once, at configuration, not a traceback from the first call into Mem0."""
    done = healthd("evaluate", "--target", f"mem0:{switch},path={tmp_path}/s,shadow=on")
    assert done.returncode == 2, done.stderr
    assert "whitespace" in done.stderr and switch.split("=")[0] in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_kuzu_database_locked_by_another_process_is_one_line_and_exit_2(tmp_path):
    store = tmp_path / "graph"
    store.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, kuzu; db = kuzu.Database(sys.argv[1]); "
            "print('open', flush=True); time.sleep(120)",
            str(store / "graph.kuzu"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        done = healthd("evaluate", "--target", f"graphiti:path={store},shadow=on")
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert done.returncode == 2, done.stderr
    assert "cannot be opened" in done.stderr and "lock" in done.stderr.lower()
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_qdrant_folder_held_by_another_process_is_one_line_and_exit_2(tmp_path):
    store = tmp_path / "vectors"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from healthd.memory import build_memory, parse_target\n"
            "m = build_memory(parse_target(f'mem0:path={sys.argv[1]},shadow=on'))\n"
            "print('open', flush=True); time.sleep(120)",
            str(store),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, MEM0_TELEMETRY="False"),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        started = time.monotonic()
        done = healthd("evaluate", "--target", f"mem0:path={store},shadow=on")
        assert time.monotonic() - started < 120
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert done.returncode == 2, done.stderr
    assert "cannot be opened" in done.stderr and "already accessed" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_unknown_modes_and_switches_are_refused_before_anything_opens(tmp_path):
    for target, words in [
        ("mem0:mode=smart", "expected one of native, managed"),
        ("graphiti:search=fuzzy", "expected one of default, valid"),
        ("mem0:collection=x", "unknown switch 'collection'"),
        ("graphiti:top_k=0", "must be at least 1"),
    ]:
        done = healthd("evaluate", "--target", target)
        assert done.returncode == 2, (target, done.stderr)
        assert words in done.stderr, (target, done.stderr)


def test_the_shadow_directory_of_an_ephemeral_target_is_removed_on_close(tmp_path):
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    code = (
        "import os, sys; os.environ['TMPDIR'] = sys.argv[1]; import tempfile; "
        "tempfile.tempdir = None; from healthd.cli import main; "
        "sys.exit(main(['evaluate', '--target', 'mem0', '--target', 'graphiti']))"
    )
    done = healthd(str(env_tmp), code=code)
    assert done.returncode == 0, done.stderr
    # Mem0's own home directory (MEM0_DIR, its config) stays; no shadow store does.
    leftovers = [
        p.name
        for p in env_tmp.iterdir()
        if p.name.startswith(("healthd-mem0-", "healthd-graphiti-"))
        and p.name != "healthd-mem0-home"
    ]
    assert leftovers == []
    assert not list((env_tmp / "healthd-mem0-home").rglob("*qdrant*"))


def test_a_config_file_over_a_git_repository_with_adrs(tmp_path: Path):
    if shutil.which("adr") is None:
        pytest.skip("Debian's adr-tools is not installed (`adr` not on PATH)")
    # The git/ADR tests' repository builder lives in their conftest, which pytest may have
    # registered under the same module name as another directory's conftest.
    sources = Path(__file__).parent / "sources"
    if str(sources) not in sys.path:  # its conftest imports its sibling modules
        sys.path.insert(0, str(sources))
    spec = importlib.util.spec_from_file_location("sources_conftest", sources / "conftest.py")
    assert spec is not None and spec.loader is not None
    sources_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sources_conftest)
    repo = sources_conftest.GitRepo(tmp_path / "repo")
    repo.adr("init", when="2024-01-01")
    repo.commit(
        "2024-01-01",
        {
            "services/billing/go.mod": "module billing\n\nrequire github.com/lib/pq v1.10.0\n",
            "services/billing/main.go": "package main\n",
            "CODEOWNERS": "/services/billing/ @alice\n",
        },
    )
    repo.adr("new", "Use", "Kafka", "for", "messaging", when="2024-02-01")
    repo.commit(
        "2024-02-01",
        {"services/billing/go.mod": "module billing\n\nrequire github.com/lib/pq v1.10.9\n"},
    )
    repo.adr("new", "-s", "2", "Use NATS for messaging", when="2024-03-01")
    repo.commit("2024-03-01", {"CODEOWNERS": "/services/billing/ @bob\n"})
    repo.commit("2024-04-01", {"services/billing": None})
    config = tmp_path / "healthd.toml"
    lines = [
        f'state_path = "{tmp_path / "state.sqlite"}"',
        "[sources.repo]",
        'kind = "git"',
        f'path = "{repo.path}"',
        'revalidate_clock = "head"',
        "[sources.adr]",
        'kind = "adr"',
        f'path = "{repo.path}"',
        'revalidate_clock = "head"',
    ]
    for name in SIX_TARGETS:
        kind, _, switches = name.partition(":")
        lines += [f'[targets."{name}"]', f'kind = "{kind}"', "shadow = true"]
        for switch in filter(None, switches.split(",")):
            key, value = switch.split("=")
            lines.append(f'{key} = "{value}"')
    config.write_text("\n".join(lines) + "\n")
    done = healthd("evaluate", "--config", str(config), "--format", "json", offline=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    final = {t["name"]: t["final"]["metrics"]["all"] for t in report["targets"]}
    assert set(final) == set(SIX_TARGETS)
    assert final["mem0:mode=native"]["contamination"] > 0  # the old pq, owner and ADR stay
    assert final["mem0:mode=managed"]["contamination"] < final["mem0:mode=native"]["contamination"]
    assert (
        final["graphiti:search=valid"]["contamination"]
        < final["graphiti:search=default"]["contamination"]
    )
    # The deleted module's language and dependency: only the reference memory cascades.
    assert final["reference"]["forgetting"] == 1
    for name in ("mem0:mode=managed", "graphiti:search=valid"):
        assert 0 < final[name]["forgetting"] < 1
    again = healthd("evaluate", "--config", str(config), "--format", "json", offline=True)
    assert again.stdout == done.stdout
