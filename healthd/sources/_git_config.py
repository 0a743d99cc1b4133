"""The `git` kind's options read without pydantic: :class:`GitConfig`, the checks its
options share with the pydantic model (:class:`healthd.sources._repo_options.GitOptions`),
and the plain reading of options already of their types (strings, booleans, numbers, lists
of strings, as TOML writes them), so a one-shot pull need not import pydantic."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Literal

from healthd.durations import parse_duration
from healthd.sources._gitlog import check_where, since_datetime

#: Directory names (globs, matched at any depth; with a leading ``/``, at the root alone)
#: that hold no modules by default: vendored code, documentation and test fixtures
#: (``testdata``, which the go tool ignores, and the fake projects of ``fixtures`` and
#: ``__fixtures__``). ``docs`` at the root alone, as GitHub Linguist's documentation.yml
#: has it: create-turbo's ``apps/docs`` is an app. The ADR directory (``.adr-dir``) is
#: excluded as well.
DEFAULT_EXCLUDED_DIRS: tuple[str, ...] = (
    "vendor",
    "Godeps",
    "node_modules",
    "third_party",
    "third-party",
    "[Tt]hird[-_][Pp]arty",
    "[Tt]hird[Pp]arty",
    "3rd[-_][Pp]arty",
    "3rd[Pp]arty",
    "deps",
    "vendors",
    "Carthage",
    "bower_components",
    "__pycache__",
    "/docs",
    "/doc",
    "/Docs",
    "/Doc",
    "Documentation",
    "testdata",
    "fixtures",
    "__fixtures__",
)


def check_service_roots(value: list[str]) -> list[str]:
    """``service_roots`` as read: each a relative directory glob (ValueError otherwise)."""
    out = []
    for root in value:
        root = root.strip().strip("/")
        if not root or any(not part for part in root.split("/")):
            raise ValueError(f"service root {root!r} is not a relative directory glob")
        out.append(root)
    return out


def check_adr_dirs(value: list[str]) -> list[str]:
    """``adr_dirs`` as read: each a directory inside the repository (ValueError otherwise)."""
    out = []
    for directory in value:
        directory = directory.strip().strip("/")
        if not directory or directory.startswith("..") or "/../" in f"/{directory}/":
            raise ValueError(f"{directory!r} is not a directory inside the repository")
        out.append(directory)
    return out


def check_root_subject(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


@dataclass
class GitConfig:
    """The `git` source's options, read (see :func:`git_options`)."""

    path: str | None = None
    url: str | None = None
    cache_dir: str | None = None
    branch: str | None = None
    first_parent: bool = True
    since: datetime | date | None = None
    token_env: str | None = None
    token_user: str = "x-access-token"
    revalidate_interval: timedelta = timedelta(days=1)
    revalidate_clock: Literal["wall", "head"] = "wall"
    timeout_seconds: float = 120.0  # clone or fetch from url (0 < s <= 86400)
    # an http(s) remote that sends nothing for this long ends the clone or fetch at once
    stall_seconds: float = 30.0  # (0 < s <= 3600)
    adr_dirs: list[str] = field(default_factory=list)
    service_roots: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    exclude_dirs: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDED_DIRS))
    root_subject: str = "."

    def since_datetime(self) -> datetime | None:
        return since_datetime(self.since)


_PLAIN_STRINGS = frozenset(("path", "url", "cache_dir", "branch", "token_env", "token_user"))
_PLAIN_LISTS: dict[str, Callable[[list[str]], list[str]]] = {
    "adr_dirs": check_adr_dirs,
    "service_roots": check_service_roots,
    "exclude": list,
    "exclude_dirs": list,
}
_PLAIN_BOUNDS = {"timeout_seconds": 86400, "stall_seconds": 3600}


def plain_git_options(options: Mapping[str, Any]) -> GitConfig | None:
    """:func:`git_options` for options of their own types (None: pydantic's to read)."""
    values: dict[str, Any] = {}
    try:
        for key, value in options.items():
            if key in _PLAIN_STRINGS or key == "root_subject":
                if type(value) is not str:
                    return None
                if key == "root_subject":
                    value = check_root_subject(value)
            elif key in _PLAIN_LISTS:
                if type(value) is not list or any(type(item) is not str for item in value):
                    return None
                value = _PLAIN_LISTS[key](value)
            elif key == "first_parent":
                if type(value) is not bool:
                    return None
            elif key in _PLAIN_BOUNDS:
                if type(value) not in (int, float) or not 0 < value <= _PLAIN_BOUNDS[key]:
                    return None
                value = float(value)
            elif key == "revalidate_clock":
                if type(value) is not str or value not in ("wall", "head"):
                    return None
            elif key == "revalidate_interval":
                value = parse_duration(value)
            else:  # `since` (a date to read) or no option of this kind
                return None
            values[key] = value
        config = GitConfig(**values)
        check_where(config)
    except ValueError:
        return None
    return config
