"""The `git` source takes no code module from an ADR directory: the one the `adr` source
discovers, or the one an `adr` source on the same repository names with `dir`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from healthd.sources import build_source

RECORD = "# {n}. {title}\n\nDate: 2024-01-10\n\n## Status\n\nAccepted\n\n## Context\n\nWhy.\n"


def facts(events) -> set[tuple[str, str]]:
    return {(e.fact.subject, e.fact.predicate) for e in events if e.type == "added"}


def git_source(repo):
    return build_source("git", "repo", {"path": str(repo.path), "revalidate_clock": "head"})


def test_discovered_adr_directories_are_no_modules(repo):
    repo.commit(
        "2024-01-10",
        {
            "api/go.mod": "module api\n",
            "api/main.go": "package main\n",
            "ADR/0001-use-go.md": RECORD.format(n=1, title="Use Go"),
            "architecture-decision-record/0001-use-postgres.md": RECORD.format(
                n=1, title="Use PostgreSQL"
            ),
            "architecture-decision-record/render_index.py": "print('index')\n",
        },
    )
    result = git_source(repo).pull(None)
    assert result.error is None, result.error
    subjects = {subject for subject, _ in facts(result.events)}
    assert "api" in subjects
    assert not subjects & {"ADR", "architecture-decision-record"}, facts(result.events)


def test_the_dir_an_adr_source_names_is_no_module_for_the_git_source(repo, tmp_path):
    repo.commit(
        "2024-01-10",
        {
            "api/go.mod": "module api\n",
            "api/main.go": "package main\n",
            "decision-record/use-postgres.md": RECORD.format(n=1, title="Use PostgreSQL"),
            "decision-record/use-kafka.md": RECORD.format(n=2, title="Use Kafka"),
        },
    )
    config = tmp_path / "healthd.toml"
    config.write_text(
        f'[sources.repo]\nkind = "git"\npath = "{repo.path}"\nrevalidate_clock = "head"\n\n'
        f'[sources.decisions]\nkind = "adr"\npath = "{repo.path}"\ndir = "decision-record"\n'
        'revalidate_clock = "head"\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "timeline", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    subjects = {e["fact"]["subject"] for e in events if e["source"] == "repo"}
    assert "api" in subjects and "decision-record" not in subjects, subjects
    decisions = {e["fact"]["value"] for e in events if e["source"] == "decisions"}
    assert decisions == {"Use PostgreSQL", "Use Kafka"}
