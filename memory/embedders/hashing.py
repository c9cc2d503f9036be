"""A dependency-free embedder: signed feature hashing of word unigrams and bigrams.

It captures only word overlap, not meaning, but it is deterministic across processes and
machines (blake2b, not Python's salted hash()), needs no model file, and costs microseconds:
the embedder for tests and the last resort when no model can be loaded.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from mnemoproxy.memory.embedders.base import LocalEmbedder, l2_normalise

_WORD = re.compile(r"\w+")


@lru_cache(maxsize=65_536)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    """Where a feature lands and with which sign; the sign keeps collisions from only adding up."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return digest % dim, (1.0 if (digest >> 63) & 1 else -1.0)


class HashingEmbedder(LocalEmbedder):
    def __init__(self, dim: int = 256):
        self.dim = dim
        self.name = f"hashing-{dim}-v1"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
            for feature in features:
                index, sign = _bucket(feature, self.dim)
                vectors[row, index] += sign
        return l2_normalise(vectors)
