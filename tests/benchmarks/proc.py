"""Benchmark plumbing: the fake upstream and the proxy as real processes on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.proxy_server import free_port

ROOT = Path(__file__).resolve().parents[2]


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not come up at {url}")


@contextmanager
def process(args: Sequence[str], health_url: str, what: str) -> Iterator[subprocess.Popen[bytes]]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_until_up(health_url, proc, what)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def fake_upstream_process() -> Iterator[str]:
    """Yields the fake upstream's base URL (…/v1)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}/v1"
    with process(["-m", "tests.fake_upstream", "--port", str(port)], base + "/models", "fake"):
        yield base


@contextmanager
def proxy_process(upstream_url: str, data_dir: Path, *extra: str) -> Iterator[str]:
    """Yields the proxy's root URL (http://127.0.0.1:PORT)."""
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    args = ["-m", "proxy.cli", "serve", "--port", str(port), "--upstream-url", upstream_url]
    args += ["--data-dir", str(data_dir), "--log-level", "warning", *extra]
    with process(args, root + "/health", "proxy"):
        yield root
