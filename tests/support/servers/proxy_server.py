"""A real proxy server on a free loopback port, for tests: in a background thread, or as
its own process (for what only a process shows: a kill -9, its resident memory)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Self

import httpx
import uvicorn

from mnemoproxy.config.settings import Settings, load_settings
from mnemoproxy.proxy.app import MemoryOpener, create_app
from mnemoproxy.proxy.services import open_memory
from tests.support.servers.backends import store_url_for
from tests.support.servers.ports import free_port


def make_settings(**overrides: Any) -> Settings:
    """Settings for a test: nothing from the user's environment or working directory, and
    memory off unless the test turns it on (with a data_dir of its own)."""
    # A generous read deadline: on a busy two-core machine the gate's probe alone can take
    # longer than the default's share; tests of the deadline set their own.
    values = {"enabled": False, "memory_read_deadline_seconds": 8.0, **overrides}
    if "store_url" not in values and "data_dir" in values:
        values["store_url"] = store_url_for(str(values["data_dir"]))
    return load_settings(cli=values, environ={}, read_default_file=False)


class ProxyServer:
    def __init__(self, settings: Settings, *, memory_opener: MemoryOpener = open_memory):
        self.settings = settings
        self.port = free_port()
        app = create_app(settings, memory_opener=memory_opener)
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            loop="asyncio",
            http="httptools",
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, daemon=True, name="proxy-server")

    def _run(self) -> None:
        asyncio.run(self._server.serve())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def start(self) -> Self:
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the proxy server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_process(
    port: int, upstream: str, data_dir: Path, log: Path, *options: str,
    embedding_backend: str = "hashing", env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """`mnemoproxy serve` in a process of its own on `port`, once its /health answers;
    its output goes to `log`, `env` is added to its environment. The caller terminates
    it."""
    args = [sys.executable, "-m", "mnemoproxy.proxy.cli.main", "serve", "--port", str(port),
            "--data-dir", str(data_dir), "--upstream-url", upstream, "--log-level", "warning",
            "--embedding-backend", embedding_backend, *options]
    store_url = store_url_for(str(data_dir))
    if store_url and "--store-url" not in options:
        args += ["--store-url", store_url]
    with log.open("ab") as out:
        proc = subprocess.Popen(args, cwd=data_dir, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the proxy did not start: {log.read_text()[-2000:]}")
