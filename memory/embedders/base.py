"""The Embedder contract and the small helpers every backend shares."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mnemoproxy.errors import SettingError

# Longer texts are embedded by their beginning: a static model's mean over 2,000 tokens
# says what the text is about, and a whole 3 MB paste, padded beside 63 others in one
# batch, would take gigabytes. Full-text search still reads every word.
MAX_EMBED_CHARS = 8000


# Words whose pieces a tokenizer remembers. The library's default (10,000) grew the helper
# process over a bulk import and made it no faster.
TOKENIZER_CACHE_WORDS = 1000


def lean_tokenizer(tokenizer: Any) -> Any:
    """A Hugging Face tokenizer set up for this process: one thread, a small cache.

    Its batch encoding otherwise fans out over a thread pool whose workers spin while they
    wait: on 2 cores beside the proxy that cost a fifth more CPU per text than one thread
    (15-25k against 27-30k texts/s over 40k chat messages), and each worker's allocations
    stayed, ~50 MiB more. The switch is the library's environment variable, read on every
    call; a value the user set is kept."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    resize = getattr(tokenizer.model, "_resize_cache", None)
    if resize is not None:  # not every tokenizers version has it; the default cache is fine
        resize(TOKENIZER_CACHE_WORDS)
    return tokenizer


def embeddable(texts: Sequence[str]) -> list[str]:
    return [text[:MAX_EMBED_CHARS] for text in texts]


def length_sorted_batches(lengths: Sequence[int], units_per_batch: int) -> list[list[int]]:
    """Index batches, longest texts first, each under `units_per_batch` padded units
    (tokens or characters): a batch is padded to its longest member."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for index in order:
        # The first (longest) member of a batch sets its padded length.
        if batches and lengths[batches[-1][0]] * (len(batches[-1]) + 1) <= units_per_batch:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors.

    `name` is stored beside every vector: a vector is reused only while the name and the
    content hash are unchanged, so a new name re-embeds everything. `load` readies the
    model (weights read, or a remote model's size learned); `dim` is known after it.
    `embed` never blocks the event loop; it accepts an empty sequence and returns shape
    (0, dim) for it.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    async def load(self) -> None: ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class LocalEmbedder:
    """An embedder computed in this process: `encode` is the CPU work (synchronous, for
    benchmarks and tests), run in a worker thread by `embed`."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    async def load(self) -> None:
        await asyncio.to_thread(self.encode, ["warm up"])

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.encode, embeddable(texts))


def package_folder(package: str, folder: str, embedder: str, install_hint: str) -> Path:
    """The folder of model files inside an installed package, or a SettingError naming
    the install."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise SettingError(f"The {embedder} embedder needs its model package: {install_hint}.")
    return Path(spec.origin).parent / folder


def check_sha256(path: Path, expected: str, install_hint: str) -> None:
    """Stop unless the model file at `path` is the pinned one: vectors are stored under
    the model's name, so other weights under that name would poison the index."""
    try:
        actual = file_sha256(path)
    except OSError as exc:
        raise SettingError(f"Cannot read the model file {path} ({exc}): {install_hint}.") from exc
    if actual != expected:
        raise SettingError(
            f"{path} has sha256 {actual}, expected {expected}: the file is corrupt or "
            f"belongs to a different model; reinstall it ({install_hint}).")


def file_sha256(path: Path) -> str:
    """A model file's sha256, read a megabyte at a time (a hash pins the weights a model's
    vectors are stored under)."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length, in place; an all-zero row (a text with no tokens)
    stays zero rather than turning into NaNs."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    vectors /= norms
    return vectors
