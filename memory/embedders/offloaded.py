"""The embedding worker's batches computed in the helper process
(memory/background/helper_process.py):
embedding every stored message is most of what an ingest costs after distillation, and in
the proxy's process it would hold the GIL the requests need. The model is made again in
the child from its backend's name (the same package, the same weights: the same vectors),
once per child; a query's vector, on a chat's read path, is still computed in the proxy,
which keeps its own copy of the model (wordllama: about 37 MiB more in the child).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mnemoproxy.memory.background.helper_process import HelperProcess
from mnemoproxy.memory.embedders.base import LocalEmbedder, embeddable

# The backends whose batches go to the helper process: local models light enough to hold
# twice. minilm and multilingual are not among them (their weights and activations would
# double a larger footprint: multilingual's alone is ~120 MiB); remote embedders spend no
# CPU here anyway.
OFFLOADED_BACKENDS = frozenset({"wordllama"})

# The embedding batches get a helper process of their own, beside the rules': with one child
# for both, every ingest's distillation waited behind other ingests' embedding and the other
# way round, on a machine with a core to spare.
EMBEDDING_HELPER = HelperProcess()

# In the child: the models made so far, by backend.
_MODELS: dict[str, LocalEmbedder] = {}


class OffloadedEmbedder:
    """Implements `Embedder` for bulk work: `local` (the proxy's own model) names it and
    sizes it; `embed` runs the same backend in the helper process."""

    def __init__(self, local: LocalEmbedder, backend: str) -> None:
        self._local = local
        self._backend = backend

    @property
    def name(self) -> str:
        return self._local.name

    @property
    def dim(self) -> int:
        return self._local.dim

    async def load(self) -> None:
        await self._local.load()

    def prepare(self) -> None:
        """Load the model in the helper process now, in the background."""
        EMBEDDING_HELPER.prepare(encode, self._backend, ["warm up"])

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        matrix: np.ndarray = await EMBEDDING_HELPER.run(encode, self._backend, embeddable(texts))
        return matrix


def encode(backend: str, texts: Sequence[str]) -> np.ndarray:
    """In the child: `texts` embedded by the backend's model (made on first use)."""
    model = _MODELS.get(backend)
    if model is None:
        from mnemoproxy.memory.embedders import make_embedder

        made = make_embedder(backend)
        assert isinstance(made, LocalEmbedder), f"{backend} is not a local embedder"
        model = _MODELS[backend] = made
    return model.encode(texts)
