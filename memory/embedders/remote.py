"""An OpenAI-compatible `/embeddings` endpoint (OpenAI, vLLM, llama.cpp, Ollama, TEI...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from mnemoproxy.errors import SettingError, UpstreamError, UpstreamTimeout
from mnemoproxy.memory.embedders.base import l2_normalise

# Inputs per request: OpenAI accepts 2048, but many local servers cap lower, and a smaller
# request fails (and is retried by the caller) more cheaply.
MAX_INPUTS_PER_REQUEST = 256
_TIMEOUT = httpx.Timeout(60.0, connect=5.0)
_DIM_PROBE_TEXT = "dimension probe"


class OpenAIEmbedder:
    """Embeds through `POST {url}/embeddings`.

    The server decides the vector size, so `dim` is learned from the first response; reading
    `dim` before any `embed` call sends one tiny probe request (blocking, like `embed`).
    """

    def __init__(
        self, *, model: str, url: str, api_key: str = "", timeout: httpx.Timeout = _TIMEOUT
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
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed([_DIM_PROBE_TEXT])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        batches = []
        with httpx.Client(timeout=self._timeout, headers=self._headers) as client:
            for start in range(0, len(texts), MAX_INPUTS_PER_REQUEST):
                chunk = list(texts[start : start + MAX_INPUTS_PER_REQUEST])
                batches.append(self._parse(self._post(client, chunk), len(chunk)))
        return l2_normalise(np.concatenate(batches))

    def _post(self, client: httpx.Client, chunk: list[str]) -> Any:
        try:
            response = client.post(self._endpoint, json={"model": self._model, "input": chunk})
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(
                f"The embedding server at {self._endpoint} did not answer in time: {exc!r}."
            ) from exc
        except httpx.HTTPError as exc:
            raise UpstreamError(
                f"Cannot reach the embedding server at {self._endpoint}: {exc!r}; "
                "check embedding_url."
            ) from exc
        if response.status_code >= 400:
            raise UpstreamError(
                f"The embedding server at {self._endpoint} answered {response.status_code}: "
                f"{response.text[:300]}"
            )
        try:
            return response.json()
        except ValueError as exc:
            raise UpstreamError(
                f"The embedding server at {self._endpoint} sent a body that is not JSON."
            ) from exc

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
