"""Which store backend the tests run on.

`make test` runs the suite twice: on SQLite, then with `--store-backend postgres`, where
every memory a test opens by its settings (proxy_server.make_settings) lives in a fresh
PostgreSQL database of a throwaway cluster (tests/support/servers/postgres_cluster.py), one
per data_dir, so a test that reopens its data_dir finds its memory again.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.servers.postgres_cluster import Cluster, running_cluster

_cluster: Cluster | None = None
_databases: dict[tuple[int, str], str] = {}  # (cluster port, data_dir) -> its database


def use_postgres(cluster: Cluster | None) -> None:
    """From now on, memory opened for a data_dir lives on `cluster` (None: SQLite)."""
    global _cluster
    _cluster = cluster


def store_url_for(data_dir: str) -> str:
    """The store_url a test's settings get for `data_dir`: "" (SQLite) or its database."""
    if _cluster is None:
        return ""
    key = (_cluster.port, data_dir)
    if key not in _databases:
        _databases[key] = _cluster.new_database()
    return _databases[key]


def database_url(shown: str) -> str:
    """The URL of the database an open store shows as `shown` (a store names its server
    without credentials, and the cluster's user counts as one)."""
    name = shown.rsplit("/", 1)[-1]
    for url in _databases.values():
        if url.rsplit("/", 1)[-1] == name:
            return url
    if _cluster is None:
        raise LookupError(f"no database {name}: this run is on SQLite")
    return _cluster.url(name)


def add_store_backend_argument(parser: argparse.ArgumentParser) -> None:
    """A benchmark's --store-backend: where the memory it measures lives."""
    parser.add_argument(
        "--store-backend", choices=("sqlite", "postgres"), default="sqlite",
        help="postgres: a throwaway cluster of Debian's server "
        "(tests/support/servers/postgres_cluster.py)")


@contextmanager
def store_backend(name: str) -> Iterator[None]:
    """The memory opened meanwhile by settings for a data_dir (proxy_server.py's
    make_settings, proxies started by processes.py) lives on `name`."""
    if name == "sqlite":
        yield
        return
    previous = _cluster
    with running_cluster() as cluster:
        use_postgres(cluster)
        try:
            yield
        finally:
            use_postgres(previous)
