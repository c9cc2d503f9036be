"""An OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, llama.cpp, Ollama, TEI...),
reached through the JSON client the proxy lends memory (its pooled connections)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mnemoproxy.errors import SettingError, UpstreamError
from mnemoproxy.memory.core_model.client import JsonClient
from mnemoproxy.memory.embedders.base import embeddable, l2_normalise

# Inputs per request: OpenAI accepts 2048, but many local servers cap lower, and a smaller
# request fails (and is retried by the caller) more cheaply.
MAX_INPUTS_PER_REQUEST = 256
TIMEOUT_SECONDS = 60.0
_DIM_PROBE_TEXT = "dimension probe"


class OpenAIEmbedder:
    """Embeds through `POST {url}/embeddings`. The server decides the vector size, so `dim`
    is learned by `load` (one tiny probe request) or by the first `embed`."""

    def __init__(
        self,
        *,
        model: str,
        url: str,
        client: JsonClient,
        api_key: str = "",
        timeout: float = TIMEOUT_SECONDS,
    ):
        if not model:
            raise SettingError(
                "The openai embedding backend needs a model: set embedding_model "
                "(e.g. text-embedding-3-small)."
            )
        if not url:
            raise SettingError(
                "The openai embedding backend needs a server: set embedding_url or upstream_url."
            )
        self.name = f"openai:{model}"
        self._model = model
        self._endpoint = url.rstrip("/") + "/embeddings"
        self._client = client
        self._api_key = api_key
        self._timeout = timeout
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            raise SettingError(
                f"the size of {self.name}'s vectors is not known yet: load() the embedder first"
            )
        return self._dim

    async def load(self) -> None:
        if self._dim is None:
            await self.embed([_DIM_PROBE_TEXT])

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            await self.load()
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = []
        for start in range(0, len(texts), MAX_INPUTS_PER_REQUEST):
            chunk = embeddable(texts[start : start + MAX_INPUTS_PER_REQUEST])
            body = await self._client.post_json(
                self._endpoint,
                {"model": self._model, "input": chunk},
                api_key=self._api_key,
                timeout=self._timeout,
                url_setting="embedding_url",
            )
            batches.append(self._parse(body, len(chunk)))
        return l2_normalise(np.concatenate(batches))

    def _parse(self, body: Any, expected: int) -> np.ndarray:
        try:
            # The spec allows rows in any order; `index` says whose vector each one is.
            rows = sorted(body["data"], key=lambda row: row["index"])
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise UpstreamError(
                f"The embedding server at {self._endpoint} sent an unexpected body "
                f"(wanted data[].embedding): {exc!r}."
            ) from exc
        if vectors.ndim != 2 or len(vectors) != expected:
            raise UpstreamError(
                f"The embedding server at {self._endpoint} returned {len(vectors)} vectors "
                f"for {expected} inputs."
            )
        if self._dim is None:
            self._dim = vectors.shape[1]
        elif vectors.shape[1] != self._dim:
            raise UpstreamError(
                f"The embedding server at {self._endpoint} changed vector size from "
                f"{self._dim} to {vectors.shape[1]}; set a new embedding_model to re-embed."
            )
        return vectors
