"""Real git repositories (and Debian's `adr` tool) in temporary directories."""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from healthd.model import ChangeEvent


def utc(text: str) -> datetime:
    """'2024-03-01' or '2024-03-01T10:00' → an aware UTC datetime."""
    ts = datetime.fromisoformat(text)
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts


class GitRepo:
    """A throw-away repository: write files, run `adr`, commit at a chosen date."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "Test User")
        self.git("config", "user.email", "test@example.com")
        self.git("config", "commit.gpgsign", "false")

    def env(self, when: str | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "EDITOR": "true",
                "VISUAL": "true",
                "GIT_CONFIG_NOSYSTEM": "1",
                "HOME": str(self.path.parent),
            }
        )
        if when is not None:
            stamp = utc(when).strftime("%Y-%m-%dT%H:%M:%S+0000")
            env.update(
                {
                    "GIT_AUTHOR_DATE": stamp,
                    "GIT_COMMITTER_DATE": stamp,
                    "ADR_DATE": utc(when).strftime("%Y-%m-%d"),
                }
            )
        return env

    def git(self, *args: str, when: str | None = None) -> str:
        proc = subprocess.run(
            ["git", *args],
            cwd=self.path,
            env=self.env(when),
            capture_output=True,
            text=True,
            check=True,
        )
        return proc.stdout.strip()

    def adr(self, *args: str, when: str) -> str:
        proc = subprocess.run(
            ["adr", *args],
            cwd=self.path,
            env=self.env(when),
            capture_output=True,
            text=True,
            check=True,
        )
        return proc.stdout.strip()

    def write(self, files: dict[str, str | bytes | None]) -> None:
        for rel, content in files.items():
            target = self.path / rel
            if content is None:
                if target.is_dir():
                    shutil.rmtree(target)
                elif target.exists():
                    target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)

    def read(self, rel: str) -> str:
        return (self.path / rel).read_text()

    def commit(
        self, when: str, files: dict[str, str | bytes | None] | None = None, message: str = "change"
    ) -> str:
        """Write ``files`` (None deletes a file or a whole directory), commit everything
        at ``when`` (author and committer date), return the sha."""
        if files:
            self.write(files)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message, when=when)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def needs_adr() -> None:
    if shutil.which("adr") is None:
        pytest.skip("Debian's adr-tools is not installed (`adr` not on PATH)")


def _brief(events: list[ChangeEvent]) -> list[tuple]:
    """Events as (date, type, subject, predicate, previous value → value), for exact
    comparisons that read like the timeline."""
    out = []
    for ev in events:
        day = ev.timestamp.strftime("%Y-%m-%d")
        if ev.type == "revised":
            assert ev.previous is not None
            prev = ev.previous
            what = (
                f"{prev.subject} {prev.predicate}={prev.value} -> "
                f"{ev.fact.subject} {ev.fact.predicate}={ev.fact.value}"
            )
        else:
            what = f"{ev.fact.subject} {ev.fact.predicate}={ev.fact.value}"
        out.append((day, ev.type, what))
    return out


@pytest.fixture(name="brief")
def brief_fixture():
    """The function turning events into readable (date, type, what) tuples."""
    return _brief


# The module-scoped API server behind the `api_server` fixture, for every module here.
from _ticket_payloads import _module_server  # noqa: F401
