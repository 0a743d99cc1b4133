"""The ``mem0`` library as healthd uses it, for the open-source target and the Platform's
(:mod:`healthd.memory.mem0`, :mod:`healthd.memory.mem0_platform`): imported with its telemetry
off, what it logs as an error and swallows kept for the adapter to raise, and its memories
read as served items."""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from healthd.errors import TargetError
from healthd.memory._offline import require_extra
from healthd.memory.fingerprint import METADATA_KEY, RetrievalFingerprint, changed_since
from healthd.model import RETRIEVAL_CHANGED, ServedItem

_QUIET_LOGGERS = ("mem0", "qdrant_client", "httpx", "posthog")


def import_mem0() -> Any:
    # Read once, when mem0 is first imported: healthd never lets it phone home, and keeps its
    # home directory (~/.mem0 by default) out of the user's home.
    already_imported = "mem0" in sys.modules
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", os.path.join(tempfile.gettempdir(), "healthd-mem0-home"))
    module = require_extra("mem0", "mem0", "mem0")
    if already_imported and require_extra("mem0.memory.telemetry", "mem0", "mem0").MEM0_TELEMETRY:
        raise TargetError(
            "mem0 was imported with its telemetry on before healthd could turn it off; "
            "set MEM0_TELEMETRY=False in the environment"
        )
    require_extra("langchain.embeddings.base", "mem0", "mem0")
    for name in _QUIET_LOGGERS:  # optional-feature notices (spaCy, fastembed) are not errors
        logging.getLogger(name).setLevel(logging.ERROR)
    mem0_logger = logging.getLogger("mem0")
    if MEM0_ERRORS not in mem0_logger.handlers:
        mem0_logger.addHandler(MEM0_ERRORS)
        mem0_logger.propagate = False
    return module


class _Mem0Errors(logging.Handler):
    """What Mem0 logs as an error, kept per thread for the adapter to raise. Mem0 logs and
    swallows some failures (an extraction answer it cannot parse becomes "nothing to
    remember"; a memory the vector store refused is dropped): healthd fails the run on them
    instead, and says them once, in its own error line."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self._local = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._local, "message", None) is None:  # the first says what went wrong
            self._local.message = record.getMessage()

    def drain(self) -> str | None:
        message: str | None = getattr(self._local, "message", None)
        self._local.message = None
        return message


MEM0_ERRORS = _Mem0Errors()


def served_item(
    row: Mapping[str, Any],
    fingerprint: RetrievalFingerprint,
    *,
    created_at_is_replay_time: bool = True,
) -> ServedItem:
    """A Mem0 memory as served: its text, and the times healthd stamped on it (a memory
    healthd did not write has only Mem0's own ``created_at``, a replay time where healthd
    sets Mem0's clock, and no time where it cannot); flagged when it was written under
    another retrieval fingerprint."""
    held = row.get("metadata")
    metadata = {k: v for k, v in (held if isinstance(held, Mapping) else {}).items()
                if isinstance(v, str)}  # fmt: skip
    written = _time(metadata.get("written_at"))
    if written is None and created_at_is_replay_time:
        written = _time(row.get("created_at"))
    return ServedItem(
        str(row.get("memory") or ""),
        f"mem0:{metadata.get('healthd_event', row.get('id'))}",
        written,
        _time(metadata.get("validated_at")),
        metadata,
        frozenset({RETRIEVAL_CHANGED})
        if changed_since(metadata.get(METADATA_KEY), fingerprint)
        else frozenset(),
    )


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def when(at: datetime | None) -> float:
    return at.timestamp() if at is not None else 0.0
