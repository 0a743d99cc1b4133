"""The README is a front page: short, its two quick-start commands the ones CI runs, and its
"point it at your project" walk-through and Prometheus snippet true as written."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from serve_memory_process import serve_memory

from healthd.exporters.prometheus import METRIC_NAMES
from healthd.reading import build_reader

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _blocks(section: str, lang: str) -> list[str]:
    """The code blocks of a language, each with its fence's indentation taken off."""
    return [
        re.sub(rf"^{indent}", "", body, flags=re.M)
        for indent, body in re.findall(rf"^( *)```{lang}\n(.*?)^ *```", section, re.S | re.M)
    ]


def _healthd(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHD_")}
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def test_the_readme_is_a_front_page_of_at_most_300_lines():
    assert len(README.read_text().splitlines()) <= 300


def test_the_quick_start_is_two_commands_and_ci_runs_the_second():
    (commands,) = _blocks(_section("Quick start"), "sh")
    first, second = commands.strip().splitlines()
    assert first.endswith(".venv/bin/healthd evaluate")
    assert second == "bash scripts/test.sh"
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^exec bash scripts/test\.sh$", ci, re.M)


def test_the_quick_start_names_everything_the_test_command_installs():
    # run as root, scripts/test.sh installs Debian packages (a database server among them)
    # and the products' extras: the README says so before anyone runs it
    script = (ROOT / "scripts" / "test.sh").read_text()
    (listed,) = re.findall(r"^debian_packages=\((.*?)\)", script, re.S | re.M)
    (extras,) = re.findall(r"pip install -q -e '\.\[([^\]]+)\]'", script)
    said = " ".join(_section("Quick start").split())
    for package in listed.split():
        assert f"`{package}`" in said, package
    for extra in extras.split(","):
        assert f"`{extra}`" in said, extra


def _project(tmp_path: Path) -> Path:
    """A small real repository: a Go module, its CODEOWNERS, and a decision log by adr-tools'
    layout, in two commits."""
    repo = tmp_path / "shop"
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    files = {
        "go.mod": "module example.com/shop\n\ngo 1.22\n\nrequire github.com/lib/pq v1.10.9\n",
        "main.go": "package main\n\nfunc main() {}\n",
        ".github/CODEOWNERS": "* @alice\n",
        "doc/adr/0001-record-architecture-decisions.md": (
            "# 1. Record architecture decisions\n\nDate: 2024-01-01\n\n## Status\n\nAccepted\n"
        ),
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run([*git, "add", "."], check=True)
    env = {**os.environ, "GIT_COMMITTER_DATE": "2024-01-02T10:00:00Z"}
    subprocess.run(
        [*git, "commit", "-q", "-m", "shop", "--date", "2024-01-02T10:00:00Z"], check=True, env=env
    )
    (repo / ".github/CODEOWNERS").write_text("* @bob\n")
    env = {**os.environ, "GIT_COMMITTER_DATE": "2024-03-01T10:00:00Z"}
    subprocess.run(
        [*git, "commit", "-q", "-am", "bob", "--date", "2024-03-01T10:00:00Z"], check=True, env=env
    )
    return repo


def test_point_it_at_your_project_works_as_written(tmp_path):
    """The config of "Point it at your project", with only its paths and address made this
    machine's, passes check-config and is evaluated against a real memory service."""
    section = _section("Point it at your project")
    (config,) = _blocks(section, "toml")
    assert len(section.splitlines()) < 45 and len(config.splitlines()) < 30
    repo = _project(tmp_path)
    with serve_memory() as (url, _):
        text = (
            config.replace("/srv/checkout/shop", str(repo))
            .replace("/var/lib/healthd/state.sqlite", str(tmp_path / "state.sqlite"))
            .replace("http://127.0.0.1:8080", url)
        )
        path = tmp_path / "healthd.toml"
        path.write_text(text)
        checked = _healthd("check-config", "--config", str(path), cwd=tmp_path)
        assert checked.returncode == 0, checked.stderr
        evaluated = _healthd("evaluate", "--config", str(path), "--format", "json", cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr
    (target,) = json.loads(evaluated.stdout)["targets"]
    assert target["name"] == "assistant"
    served = {
        (p["subject"], p["predicate"]): [f["value"] for f in p["retrieved"]]
        for p in target["final"]["probes"]
    }
    assert any(values == ["@bob"] for values in served.values()), served


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_the_prometheus_snippet_loads_the_shipped_rules(tmp_path):
    (snippet,) = _blocks(_section("Wire Prometheus and Grafana"), "yaml")
    (tmp_path / "alerts").symlink_to(ROOT / "alerts")
    (tmp_path / "prometheus.yml").write_text(snippet)
    proc = subprocess.run(
        ["promtool", "check", "config", str(tmp_path / "prometheus.yml")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 2 rule files found" in proc.stdout


def test_the_main_series_named_are_exported():
    table = _section("Wire Prometheus and Grafana")
    names = set(re.findall(r"`(healthd_[a-z_]+)", table))
    assert len(names) >= 10
    assert names <= set(METRIC_NAMES), names - set(METRIC_NAMES)


OTHERS = "healthd/data/reader_labelled_others.jsonl"
VERBATIM = "healthd/data/reader_labelled_verbatim.jsonl"
BLIND = "healthd/data/reader_labelled_blind.jsonl"


def _readers_table() -> tuple[str, dict[str, list[str]]]:
    """The readers' table: its section, and per reader spec (``default``, ``semantic``,
    ``llm:...``) its column's cells, top to bottom."""
    section = _section("How well it reads what memories write")
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ")]
    header, *body = rows
    specs = [re.search(r"`--reader ([^`]*)`", cell).group(1) for cell in header[1:]]
    assert len(body) == 4, body
    return section, {spec: [row[i + 1].strip() for row in body] for i, spec in enumerate(specs)}


def _measured(reader: str) -> list[str]:
    """The table's cells for a reader, "own · others' phrasing · verbatim · verbatim, blind",
    as measured now."""
    ratio = "{0[precision]:.3f} / {0[recall]:.3f}".format
    found = "{0[correct]} of {0[labelled]}".format
    cells: list[list[str]] = [[], [], [], []]
    for labelled in ([], *(["--labelled", f] for f in (OTHERS, VERBATIM, BLIND))):
        ran = _healthd("reader-check", "--reader", reader, *labelled, "--format", "json", cwd=ROOT)
        assert ran.returncode == 0, ran.stderr
        classes = json.loads(ran.stdout)["classes"]
        for i, cell in enumerate(
            [
                ratio(classes["asserts"]),
                ratio(classes["negates"]),
                found(classes["other"]),
                found(classes["unread"]),
            ]
        ):
            cells[i].append(cell)
    return [" · ".join(sets) for sets in cells]


def test_the_default_readers_figures_are_what_reader_check_measures():
    section, columns = _readers_table()
    assert "`healthd reader-check`" in section
    assert all(f"`--labelled {f}`" in section for f in (OTHERS, VERBATIM, BLIND))
    assert columns["default"] == _measured("default")


@pytest.mark.slow
def test_the_semantic_readers_figures_are_what_reader_check_measures():
    pytest.importorskip("tokenizers")
    _, columns = _readers_table()
    said = [re.sub(r" \(its rules'\)$", "", cell) for cell in columns["semantic"]]
    assert said == _measured("semantic")


def test_the_llm_judge_claims_no_accuracy_and_its_command_builds_a_judge(monkeypatch):
    section, columns = _readers_table()
    (spec,) = [spec for spec in columns if spec.startswith("llm:")]
    assert set(columns[spec]) == {"needs a real model"}
    command = re.search(r"`(\w+)=\S+ healthd reader-check --reader (llm:\S+)`", section)
    variable, judge = command.groups()
    assert f"token_env={variable}" in judge
    monkeypatch.setenv(variable, "sk-test")
    assert build_reader(judge).label == "llm-2:gpt-4o-mini"
