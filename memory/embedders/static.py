"""WordLlama: a static (token-average) 256-dim model whose weights ship inside the package."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from mnemoproxy.errors import SettingError
from mnemoproxy.lazy import LazyResource
from mnemoproxy.memory.embedders.base import (
    LocalEmbedder,
    l2_normalise,
    lean_tokenizer,
    length_sorted_batches,
)


def _package_dir() -> Path:
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise SettingError(
            "The wordllama embedder needs the 'wordllama' package: run "
            "'pip install wordllama', or set embedding_backend to minilm or openai."
        )
    return Path(spec.origin).parent


WEIGHTS_FILE = Path("weights") / "l2_supercat_256.safetensors"
TOKENIZER_FILE = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
TENSOR = "embedding.weight"


class StaticModel:
    """WordLlama's inference, on the files its package ships: token ids from its tokenizer,
    their rows of the embedding matrix averaged (the padding masked out). The matrix stays
    the file's float16, memory-mapped: the package itself loads it as a private float32
    copy (31 MiB in every process) and imports a good deal more. A float16 row widened to
    float32 is exact, so the vectors are the package's own, bit for bit
    (tests/memory/embedders/test_embedders_backends.py compares them)."""

    def __init__(self, tokenizer: Any, weights: np.ndarray) -> None:
        self.tokenizer = tokenizer
        self.weights = weights

    @classmethod
    def load(cls, package_dir: Path) -> StaticModel:
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(package_dir / TOKENIZER_FILE))
            weights = _mapped_tensor(package_dir / WEIGHTS_FILE, TENSOR)
        except Exception as exc:  # the tokenizers package raises plain Exception
            raise SettingError(
                f"The wordllama package at {package_dir} lacks its bundled weights or "
                f"tokenizer ({exc}): reinstall it with "
                "'pip install --force-reinstall wordllama'."
            ) from exc
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return cls(lean_tokenizer(tokenizer), weights)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unnormalised mean of each text's token vectors, float32, one row per text.

        The package sums each text's token rows in float32, one after another in token
        order; so does this, bit for bit
        (tests/memory/embedders/test_embedders_backends.py), but cheaper:
        - widening float16 to float32 is slow (element by element), so each distinct token
          of the batch is widened once, into a small float32 table;
        - the sums advance one token position at a time across every text still that long
          (texts ordered longest first, so those are a prefix): a few NumPy calls per
          position instead of per text. A text left alone past the others' lengths is
          finished by one sum of its remaining rows, which NumPy also adds in order.
        Measured on chat messages: ~22k texts/s text by text over float16, ~60k now."""
        width = self.weights.shape[1]
        out = np.zeros((len(texts), width), dtype=np.float32)
        encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64,
                              count=len(encodings))
        total = int(lengths.sum())
        if not total:
            return out
        ids = np.fromiter(chain.from_iterable(e.ids for e in encodings), dtype=np.int64,
                          count=total)
        np.clip(ids, 0, self.weights.shape[0] - 1, out=ids)
        distinct, rows = np.unique(ids, return_inverse=True)
        table = self.weights[distinct].astype(np.float32)
        starts = np.cumsum(lengths) - lengths
        order = np.argsort(-lengths, kind="stable")
        order = order[lengths[order] > 0]
        ordered_starts, ordered_lengths = starts[order], lengths[order]
        sums = table[rows[ordered_starts]]  # position 0 of every non-empty text
        for position in range(1, int(ordered_lengths[0])):
            alive = int(np.count_nonzero(ordered_lengths > position))
            if alive == 1:  # one long text left: the rest of it in one ordered sum
                first = ordered_starts[0]
                rest = table[rows[first + position:first + ordered_lengths[0]]]
                sums[0] = np.concatenate((sums[:1], rest)).sum(axis=0)
                break
            sums[:alive] += table[rows[ordered_starts[:alive] + position]]
        out[order] = sums / ordered_lengths[:, None].astype(np.float32)
        return out


def _mapped_tensor(path: Path, name: str) -> np.ndarray:
    """A float16 tensor of a safetensors file, memory-mapped read-only (file-backed pages
    the kernel shares between processes, not the process's own memory)."""
    with path.open("rb") as file:
        header_size = int.from_bytes(file.read(8), "little")
        header = json.loads(file.read(header_size))
    entry = header[name]
    if entry["dtype"] != "F16" or len(entry["shape"]) != 2:
        raise ValueError(f"{name} is {entry['dtype']} {entry['shape']}, not a float16 matrix")
    start, end = entry["data_offsets"]
    rows, columns = entry["shape"]
    if end - start != rows * columns * 2:
        raise ValueError(f"{name} holds {end - start} bytes for shape {entry['shape']}")
    mapped = np.memmap(path, dtype="<f2", mode="r", offset=8 + header_size + start,
                       shape=(rows, columns))
    # A plain array over the same pages: memmap's own indexing and arithmetic go through
    # Python-level hooks that cost ~0.1 ms per query embedding.
    return mapped.view(np.ndarray)


# Padded characters per batch (about 32k tokens: some 35 MB of token vectors at 256 dims).
CHARS_PER_BATCH = 128_000


class WordLlamaEmbedder(LocalEmbedder):
    name = "wordllama-l2-256"
    dim = 256

    def __init__(self) -> None:
        package_dir = _package_dir()
        self._model = LazyResource(lambda: StaticModel.load(package_dir))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        model = self._model.get()
        # Batches of similar lengths under a padded-size budget: one long text no longer
        # pads 63 short ones to its length.
        for batch in length_sorted_batches([len(t) for t in texts], CHARS_PER_BATCH):
            out[batch] = model.embed([texts[i] for i in batch])
        return l2_normalise(out)
