"""What the adapters for third-party memory systems share: the optional extra's import, the
shadow's directory, the text a fact is stored as, and the replay clock."""

from __future__ import annotations

import importlib
import os
import tempfile
from datetime import datetime
from importlib import metadata
from types import ModuleType

from healthd.errors import TargetError
from healthd.model import Fact
from healthd.probes import question_for

IN_MEMORY = ":memory:"


def require_extra(module: str, kind: str, extra: str) -> ModuleType:
    """Import ``module`` or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise TargetError(
            f"the {kind} target needs the {extra} extra: pip install 'healthd[{extra}]' ({exc})"
        ) from None


def package_versions(*packages: str) -> dict[str, str]:
    """The installed version of each package, for a retrieval fingerprint."""
    return {name: metadata.version(name) for name in packages}


def shadow_directory(path: str, kind: str) -> tuple[str, tempfile.TemporaryDirectory[str] | None]:
    """The directory the shadow lives in, created if missing and checked writable; for
    ``:memory:`` a temporary one, removed when the memory closes."""
    if path == IN_MEMORY:
        scratch = tempfile.TemporaryDirectory(prefix=f"healthd-{kind}-")
        return scratch.name, scratch
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".healthd-write-check-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise TargetError(f"{kind} store path {path!r} is not writable: {reason}") from None
    return path, None


def memory_text(fact: Fact) -> str:
    """A fact as the answer to its own probe question: what an assistant would have stored
    after being told it, and what a word-level embedder can rank against the question."""
    return f"{question_for(fact.subject, fact.predicate, fact.domain)} {fact.value}"


class ReplayClock:
    """The newest event time seen; a late, backdated event does not move it back."""

    def __init__(self) -> None:
        self.now: datetime | None = None

    def advance(self, at: datetime) -> datetime:
        if self.now is None or at > self.now:
            self.now = at
        return self.now

    def reset(self) -> None:
        self.now = None


def first_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message (libraries
    such as Kuzu and Qdrant put whole tracebacks or hints in theirs)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
