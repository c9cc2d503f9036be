from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from mnemoproxy.memory.embedders import make_embedder
from mnemoproxy.memory.store import Store
from tests.fake_upstream import FakeUpstream
from tests.proxy_server import ProxyServer, make_settings


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
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh store with the dependency-free hashing embedder; vectors only on drain()."""
    opened = await Store.open(tmp_path, make_embedder("hashing"), start_worker=False)
    yield opened
    await opened.close()
