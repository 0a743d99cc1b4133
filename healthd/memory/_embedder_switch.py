"""The embedder a memory target's ``embedder`` (and ``dimensions``) switches name, for the
shadows that embed (Mem0, Graphiti); the embedders are :mod:`healthd.embedding`'s."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from healthd.embedding import DEFAULT_DIMENSIONS, Embedder, HashingEmbedder, MiniLMEmbedder
from healthd.errors import TargetError
from healthd.memory._options import integer

DEFAULT_EMBEDDER = "minilm"


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
