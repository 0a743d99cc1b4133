"""A target's retrieval fingerprint: what decides which records a probe gets back and how
they are read, apart from the records themselves.

Two runs over the same records with the same fingerprint are comparable; a changed
fingerprint (a new embedding model, a library upgrade, a new reader) makes the scores move
without the memory having learned or forgotten anything: retrieval drift, not memory drift.
The fingerprint is exported (``healthd_retrieval_info``), stored with each record healthd
writes where the memory keeps metadata, and a change starts a new baseline in the daemon.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: How served items are turned into facts today: from the structured fields of each record
#: (healthd's metadata on it, or the HTTP contract's ``facts``).
STRUCTURED_READER = "structured/1"
NO_EMBEDDER = "none"
#: The metadata key (Mem0 metadata, Graphiti edge attributes) a record's fingerprint is kept in.
METADATA_KEY = "healthd_retrieval"


@dataclass(frozen=True)
class RetrievalFingerprint:
    embedder: str = NO_EMBEDDER
    dimensions: int = 0
    libraries: tuple[tuple[str, str], ...] = ()
    reader: str = field(default=STRUCTURED_READER)

    @classmethod
    def of(
        cls,
        embedder: str,
        dimensions: int,
        libraries: Mapping[str, str],
        reader: str = STRUCTURED_READER,
    ) -> RetrievalFingerprint:
        return cls(embedder, dimensions, tuple(sorted(libraries.items())), reader)

    @property
    def id(self) -> str:
        """A short stable hash of every field: what records are stamped with."""
        text = json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def libraries_label(self) -> str:
        return ",".join(f"{name}=={version}" for name, version in self.libraries) or "none"

    def as_json(self) -> dict[str, Any]:
        return {
            "embedder": self.embedder,
            "dimensions": self.dimensions,
            "libraries": dict(self.libraries),
            "reader": self.reader,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RetrievalFingerprint:
        libraries = data.get("libraries") or {}
        return cls.of(
            str(data.get("embedder", NO_EMBEDDER)),
            int(data.get("dimensions", 0)),
            {str(k): str(v) for k, v in dict(libraries).items()},
            str(data.get("reader", STRUCTURED_READER)),
        )

    def describe(self) -> str:
        """One line for a log: what changed is readable without the hash."""
        return (
            f"embedder {self.embedder} ({self.dimensions} dimensions), "
            f"libraries {self.libraries_label}, reader {self.reader}"
        )


#: The fingerprint of a memory that says nothing of its retrieval (no embedding model).
UNDECLARED = RetrievalFingerprint()


def changed_since(stamp: object, current: RetrievalFingerprint) -> bool:
    """Whether a record stamped ``stamp`` (the fingerprint id stored in its metadata) was
    written under another fingerprint; a record with no stamp was written before healthd
    stamped records, and says nothing."""
    return isinstance(stamp, str) and bool(stamp) and stamp != current.id
