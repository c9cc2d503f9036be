"""WordLlama: a static (token-average) 256-dim model whose weights ship inside the package."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemoproxy.errors import SettingError
from mnemoproxy.lazy import LazyResource
from mnemoproxy.memory.embedders.base import LocalEmbedder, l2_normalise, length_sorted_batches


def _package_dir() -> Path:
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise SettingError(
            "The wordllama embedder needs the 'wordllama' package: run "
            "'pip install wordllama', or set embedding_backend to minilm or openai."
        )
    return Path(spec.origin).parent


def _load_model(package_dir: Path) -> Any:
    from wordllama import WordLlama

    try:
        # The weights and tokenizer live in the package itself; disable_download makes a
        # missing file an error instead of a silent fetch from the model hub.
        return WordLlama.load(
            config="l2_supercat", dim=256, cache_dir=package_dir, disable_download=True
        )
    except FileNotFoundError as exc:
        raise SettingError(
            f"The wordllama package at {package_dir} lacks its bundled weights ({exc}): "
            "reinstall it with 'pip install --force-reinstall wordllama'."
        ) from exc


# Padded characters per batch (about 32k tokens: some 35 MB of token vectors at 256 dims).
CHARS_PER_BATCH = 128_000


class WordLlamaEmbedder(LocalEmbedder):
    name = "wordllama-l2-256"
    dim = 256

    def __init__(self) -> None:
        package_dir = _package_dir()
        self._model = LazyResource(lambda: _load_model(package_dir))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        model = self._model.get()
        # Batches of similar lengths under a padded-size budget: one long text no longer
        # pads 63 short ones to its length.
        for batch in length_sorted_batches([len(t) for t in texts], CHARS_PER_BATCH):
            vectors = model.embed([texts[i] for i in batch], norm=False, batch_size=len(batch))
            out[batch] = np.asarray(vectors, dtype=np.float32)
        return l2_normalise(out)
