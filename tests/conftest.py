from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from mnemoproxy.memory import Memory
from mnemoproxy.memory.embedders import HashingEmbedder
from mnemoproxy.memory.store import Store
from tests.fake_upstream import FakeUpstream
from tests.memory_client import memory_settings
from tests.proxy_server import ProxyServer, make_settings


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Each phase's report on the test item (rep_setup, rep_call), for fixtures that act on a
    failure (the browser tests' screenshot)."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def _fake_upstream_server() -> Iterator[FakeUpstream]:
    with FakeUpstream() as fake:
        yield fake


@pytest.fixture
def fake_upstream(_fake_upstream_server: FakeUpstream) -> Iterator[FakeUpstream]:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 that records what it received."""
    _fake_upstream_server.reset()
    yield _fake_upstream_server
    _fake_upstream_server.reset()


@pytest.fixture
def proxy(fake_upstream: FakeUpstream, tmp_path) -> Iterator[ProxyServer]:
    """A pass-through proxy (memory disabled) in front of the fake upstream."""
    settings = make_settings(
        upstream_url=fake_upstream.base_url, data_dir=str(tmp_path / "data"), enabled=False
    )
    with ProxyServer(settings) as server:
        yield server


@pytest.fixture
def memory_proxy(fake_upstream: FakeUpstream, tmp_path) -> Iterator[ProxyServer]:
    """A memory-enabled proxy (its own data_dir) in front of the fake upstream."""
    with ProxyServer(memory_settings(fake_upstream, tmp_path)) as server:
        yield server


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh store: the SQL layer alone."""
    opened = await Store.open(tmp_path)
    yield opened
    await opened.close()


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    """A fresh memory with the dependency-free hashing embedder and nothing running in the
    background: vectors are computed by `drain()`, sessions distilled when asked."""
    settings = make_settings(data_dir=str(tmp_path), embedding_backend="hashing")
    opened = await Memory.open(settings, embedder=HashingEmbedder(), background=False)
    yield opened
    await opened.close()
