"""The packages a JavaScript monorepo declares: npm and Yarn's ``workspaces`` in the root
package.json, pnpm's ``packages`` in pnpm-workspace.yaml (which pnpm reads instead), and,
when the package manager is given none, Lerna's ``packages`` in lerna.json (what ``lerna
bootstrap`` linked before package managers had workspaces; ignored under ``useWorkspaces``).
A package.json elsewhere (a scaffolding template, a test project) is no package of the
repository's: the `git` source makes no module of it."""

from __future__ import annotations

import fnmatch
import json
from typing import Any

#: The root files declaring workspaces; the first one declaring any wins (pnpm's file,
#: then what npm and Yarn install; lerna.json's globs only name which of those Lerna
#: versions).
WORKSPACE_FILES = ("pnpm-workspace.yaml", "package.json", "lerna.json")


def workspace_globs(path: str, data: bytes) -> tuple[str, ...] | None:
    """The workspace globs the root file ``path`` declares; None when it declares none. A
    file that cannot be read (not JSON, not YAML) is a ValueError."""
    try:
        if path == "package.json":
            declared: Any = json.loads(data)
            declared = declared.get("workspaces") if isinstance(declared, dict) else None
        elif path == "lerna.json":
            declared = _lerna_packages(_lerna_json(data))
        else:
            declared = _yaml(data)
    except RecursionError as exc:
        raise ValueError(f"{path} nests too deep") from exc
    if isinstance(declared, dict):  # Yarn's {"packages": [...]}, pnpm's file
        declared = declared.get("packages")
    if not isinstance(declared, list):
        return None
    if len(declared) > _MAX_GLOBS:
        raise TooManyGlobs(f"the workspaces name over {_MAX_GLOBS} globs")
    globs = [_normal(g) for g in declared if isinstance(g, str)]
    if path == "package.json":
        globs = _npm_negations(globs)
    expanded: list[str] = []
    for glob in globs:
        bang = "!" if glob.startswith("!") else ""
        expanded += (bang + each for each in _braces(glob.removeprefix("!")))
        if len(expanded) > _MAX_GLOBS:
            raise TooManyGlobs(f"the workspaces expand to over {_MAX_GLOBS} globs")
    return tuple(expanded) or None


def _lerna_json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:  # (JSONDecodeError; UnicodeDecodeError for bytes not UTF-8)
        problem = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        where = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise ValueError(f"lerna.json is not JSON: {problem}{where}") from exc


def _lerna_packages(config: Any) -> Any:
    """lerna.json's ``packages``, unless ``useWorkspaces`` hands them to the package
    manager's workspaces (Lerna 3 to 6; Lerna 7 removed the option)."""
    if not isinstance(config, dict) or config.get("useWorkspaces") is True:
        return None
    return config.get("packages")


class TooManyGlobs(ValueError):
    """Workspaces whose braces expand to more globs than are read."""


#: The most globs braces may expand a root file's workspaces to (``{a,b}{c,d}...``
#: doubles them with each brace: a hostile file could ask for millions).
_MAX_GLOBS = 1024


def _normal(glob: str) -> str:
    """A glob as the package managers read it: ``!`` (negated) before the pattern, a
    leading ``./`` and a trailing ``/`` left out."""
    glob = glob.strip()
    bangs = len(glob) - len(glob.lstrip("!"))
    pattern = glob[bangs:].strip().removeprefix("./").rstrip("/")
    return "!" + pattern if bangs % 2 else pattern


def _npm_negations(globs: list[str]) -> list[str]:
    """npm's reading (@npmcli/map-workspaces): a negation is dropped when a later glob is
    a path it matches (``!tools/*`` then ``tools/lint``)."""
    out: list[str] = []
    for glob in globs:
        if not glob.startswith("!"):
            named = [p for p in glob.split("/") if p]
            out = [g for g in out if not (g.startswith("!") and _matches(named, _parts(g[1:])))]
        out.append(glob)
    return out


def _braces(glob: str) -> list[str]:
    """The globs ``glob`` stands for with its braces expanded (``apps/{web,docs}``: two),
    as minimatch and micromatch expand them (a brace with no comma is kept as written)."""
    depth, start = 0, -1
    for i, c in enumerate(glob):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                options = _top_level_split(glob[start + 1 : i])
                if len(options) > 1:
                    rest = _braces(glob[i + 1 :])
                    if len(rest) * len(options) > _MAX_GLOBS:
                        raise TooManyGlobs(f"a workspace glob expands to over {_MAX_GLOBS} globs")
                    return [
                        glob[:start] + head + tail
                        for option in options
                        for head in _braces(option)
                        for tail in rest
                    ]
    return [glob]


def _top_level_split(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def _parts(pattern: str) -> list[str]:
    return [p for p in pattern.split("/") if p]


def _yaml(data: bytes) -> Any:
    import yaml  # (only for a repository with a pnpm-workspace.yaml)

    try:
        return yaml.safe_load(data)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "unreadable"
        raise ValueError(f"pnpm-workspace.yaml is not YAML: {problem}{where}") from exc


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
    """Whether ``directory`` is one of the workspace packages ``globs`` declare: a glob
    matches it and no negation does (``!packages/internal``, wherever it stands), as npm,
    pnpm and Yarn read them."""
    parts = directory.split("/")
    member = False
    for glob in globs:
        if glob.startswith("!"):
            if _matches(parts, _parts(glob[1:])):
                return False
        elif not member:
            member = _matches(parts, _parts(glob))
    return member
