from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from mnemoproxy.memory import Memory
from mnemoproxy.memory.embedders import HashingEmbedder
from mnemoproxy.memory.store import Store
from tests.support.memory_client import memory_settings
from tests.support.servers.backends import store_url_for, use_postgres
from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.postgres_cluster import Cluster, running_cluster
from tests.support.servers.proxy_server import ProxyServer, make_settings

# An ingest distils in the request: on a loaded machine under PostgreSQL that has taken
# over 6 s, past httpx's default 5 s. A test's own HTTP calls wait up to HTTP_SECONDS
# unless they set their own timeout.
HTTP_SECONDS = 30.0
for _verb in ("request", "get", "post", "put", "patch", "delete"):
    setattr(httpx, _verb, functools.partial(getattr(httpx, _verb), timeout=HTTP_SECONDS))


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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store-backend", choices=("sqlite", "postgres"), default="sqlite",
        help="where the memory the tests open lives (tests/support/servers/backends.py)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests of PostgreSQL itself (marked `postgres`: replicas on one database) run in the
    suite's PostgreSQL run only: in the SQLite run they would do the same work again."""
    if config.getoption("--store-backend") == "postgres":
        return
    chosen = [item for item in items if item.get_closest_marker("postgres") is None]
    if len(chosen) < len(items):
        config.hook.pytest_deselected(
            items=[item for item in items if item.get_closest_marker("postgres")])
        items[:] = chosen


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster for the whole run
    (tests/support/servers/postgres_cluster.py)."""
    with running_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session", autouse=True)
def store_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The backend of this run: with postgres, settings made for a data_dir name a fresh
    database of the throwaway cluster."""
    backend: str = request.config.getoption("--store-backend")
    if backend == "postgres":
        use_postgres(request.getfixturevalue("postgres_cluster"))
    yield backend
    use_postgres(None)


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    """This run's backend: "" (SQLite in data_dir) or a fresh PostgreSQL database."""
    return store_url_for(str(tmp_path))


@pytest.fixture
async def store(tmp_path: Path, store_url: str) -> AsyncIterator[Store]:
    """A fresh store on each backend: the SQL layer alone."""
    opened = await Store.open(tmp_path, store_url=store_url)
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
