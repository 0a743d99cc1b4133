"""A deterministic local text embedder for the real memory systems' shadows.

Feature hashing of lower-cased words into a fixed number of dimensions, L2-normalised: the
same text gives the same vector on every machine, with no model to download and nothing
sent anywhere. Texts that share words get a positive cosine similarity, which is all the
shadows need: healthd filters by fact key before ranking, so ranking only orders one key's
records. It is not a semantic model; ``embedder=sentence-transformers`` switches to one.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

DEFAULT_DIMENSIONS = 256
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
