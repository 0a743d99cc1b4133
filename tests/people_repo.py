"""A repository whose CODEOWNERS names ``@klee`` and whose Backstage catalog holds the User
``klee`` ("Kim Lee", kim.lee@acme.io), and the configuration reading it with the git and
backstage sources beside a team's HTTP text memory (tests/text_memory_service.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from text_memory_service import TextMemoryService

OWNERS = ("checkout", "owners")
SAYS = "Kim Lee owns checkout."
CATALOG = """\
apiVersion: backstage.io/v1alpha1
kind: User
metadata:
  name: klee
spec:
  profile:
    displayName: Kim Lee
    email: kim.lee@acme.io
  memberOf: []
"""


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo.parent),
        "GIT_AUTHOR_DATE": "2026-01-05T10:00:00+0000",
        "GIT_COMMITTER_DATE": "2026-01-05T10:00:00+0000",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def make_repo(path: Path) -> Path:
    """A repository with CODEOWNERS naming @klee and a catalog holding the User klee."""
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "config", "user.name", "Test User")
    _git(path, "config", "user.email", "test@example.com")
    _git(path, "config", "commit.gpgsign", "false")
    (path / "CODEOWNERS").write_text("checkout @klee\n")
    (path / "catalog-info.yaml").write_text(CATALOG)
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "owners and the people")
    return path


def sources(repo: Path) -> dict[str, dict[str, Any]]:
    return {
        "code": {"kind": "git", "path": str(repo), "revalidate_clock": "head"},
        "catalog": {"kind": "backstage", "path": str(repo), "revalidate_clock": "head"},
    }


def team(service: TextMemoryService) -> dict[str, Any]:
    return {
        "kind": "http",
        "base_url": service.url,
        "namespace": "shadow",
        "shadow": True,
        "backoff_seconds": 0,
    }
