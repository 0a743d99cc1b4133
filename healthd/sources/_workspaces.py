"""The packages a JavaScript monorepo declares: npm and Yarn's ``workspaces`` in the root
package.json, pnpm's ``packages`` in pnpm-workspace.yaml (which pnpm reads instead). A
package.json elsewhere (a scaffolding template, a test project) is no package of the
repository's: the `git` source makes no module of it."""

from __future__ import annotations

import fnmatch
import json
from typing import Any

#: The root files declaring workspaces; the first one declaring any wins (pnpm's file).
WORKSPACE_FILES = ("pnpm-workspace.yaml", "package.json")


def workspace_globs(path: str, data: bytes) -> tuple[str, ...] | None:
    """The workspace globs the root file ``path`` declares; None when it declares none (or
    cannot be read)."""
    try:
        if path == "package.json":
            declared: Any = json.loads(data)
            declared = declared.get("workspaces") if isinstance(declared, dict) else None
        else:
            declared = _yaml(data)
    except (ValueError, RecursionError):  # not JSON (or not text)
        return None
    if isinstance(declared, dict):  # Yarn's {"packages": [...]}, pnpm's file
        declared = declared.get("packages")
    if not isinstance(declared, list):
        return None
    globs = tuple(g.strip().removeprefix("./").rstrip("/") for g in declared if isinstance(g, str))
    return globs or None


def _yaml(data: bytes) -> Any:
    import yaml  # (only for a repository with a pnpm-workspace.yaml)

    try:
        return yaml.safe_load(data)
    except yaml.YAMLError:
        return None


def _matches(parts: list[str], pattern: list[str]) -> bool:
    """Whether a directory's path components match a glob's (``**``: any number of them),
    in steps of at most the glob's length each (``**/**/**/x`` takes no cubic time)."""
    end = len(pattern)

    def closure(states: set[int]) -> set[int]:
        for i in sorted(states):  # (a ``**`` may match no component: skip it)
            while i < end and pattern[i] == "**":
                i += 1
                states.add(i)
        return states

    states = closure({0})
    for part in parts:
        states = closure(
            {
                i if pattern[i] == "**" else i + 1
                for i in states
                if i < end and (pattern[i] == "**" or fnmatch.fnmatchcase(part, pattern[i]))
            }
        )
        if not states:
            return False
    return end in states


def in_workspaces(globs: tuple[str, ...], directory: str) -> bool:
    """Whether ``directory`` is one of the workspace packages ``globs`` declare: the last
    glob matching it is not a negation (``!packages/internal``)."""
    parts = directory.split("/")
    member = False
    for glob in globs:
        negated = glob.startswith("!")
        pattern = glob[1:].strip().removeprefix("./").rstrip("/") if negated else glob
        if member == negated and _matches(parts, [p for p in pattern.split("/") if p]):
            member = not negated
    return member
