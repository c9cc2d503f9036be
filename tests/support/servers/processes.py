"""Benchmark plumbing: the fake upstream and the proxy as real processes on loopback."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.servers.backends import store_url_for
from tests.support.servers.ports import free_port

ROOT = Path(__file__).resolve().parents[3]


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
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
def process(
    args: Sequence[str],
    health_url: str,
    what: str,
    *,
    program: str = sys.executable,
    start_seconds: float = 60,
) -> Iterator[subprocess.Popen[bytes]]:
    """`program` (Python by default) with `args`, once `health_url` answers; stopped on exit,
    killed when it does not stop."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # Importing wordllama sets the root logger to INFO; httpx would then log every poll.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    # stderr goes to a file, not a pipe: nobody reads a pipe while the benchmark runs, and
    # a process logging a warning per request would block once the pipe buffer filled.
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            [program, *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            try:
                _wait_until_up(health_url, proc, what, start_seconds)
            except RuntimeError as exc:
                stderr.seek(0)
                tail = stderr.read()[-2000:].decode(errors="replace")
                raise RuntimeError(f"{exc}; its stderr ends with:\n{tail}") from None
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
    command = ["-m", "tests.support.servers.fake_upstream", "--port", str(port)]
    with process(command, base + "/models", "fake"):
        yield base


@contextmanager
def proxy_process(upstream_url: str, data_dir: Path, *extra: str) -> Iterator[str]:
    """Yields the proxy's root URL (http://127.0.0.1:PORT)."""
    with running_proxy(upstream_url, data_dir, *extra) as (root, _):
        yield root


@contextmanager
def running_proxy(
    upstream_url: str, data_dir: Path, *extra: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """As proxy_process, also yielding the process (for its pid and memory use)."""
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    args = ["-m", "mnemoproxy.proxy.cli.main", "serve", "--port", str(port)]
    args += ["--upstream-url", upstream_url]
    args += ["--data-dir", str(data_dir), "--log-level", "warning", *extra]
    store_url = store_url_for(str(data_dir))  # the tests' PostgreSQL run (support/backends.py)
    if store_url and "--store-url" not in extra:
        args += ["--store-url", store_url]
    with process(args, root + "/health", "proxy") as proc:
        yield root, proc


def worker_pids(pid: int) -> list[int]:
    """The worker processes of a proxy started with --workers N (uvicorn's spawned
    children of `pid`); [pid] itself when it has none (one process serves)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    workers = [c for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
    return workers or [pid]


def process_tree(pid: int) -> list[int]:
    """`pid` and every process descended from it (a proxy's workers, its rule distiller)."""
    tree = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            tree += process_tree(int(child))
    return tree


def cpu_seconds(pids: Sequence[int]) -> float:
    """CPU time (user + system) the processes have used so far."""
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def resident_mib_of(pids: Sequence[int]) -> dict[str, float]:
    """resident_mib summed over processes (a proxy's workers)."""
    total: dict[str, float] = {}
    for pid in pids:
        for name, value in resident_mib(pid).items():
            total[name] = total.get(name, 0.0) + value
    return total


def resident_mib(pid: int) -> dict[str, float]:
    """Resident memory of a process now (VmRSS) and at its peak (VmHWM), and of it the
    private anonymous part (the process's own heap: what a second worker would cost again;
    the rest is file-backed pages such as the SQLite memory map and shared libraries), in
    MiB."""
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024  # the kernel reports kB
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == "Anonymous":
            fields[name] = int(value.split()[0]) / 1024
    return {"rss_mib": fields["VmRSS"], "peak_rss_mib": fields["VmHWM"],
            "private_anonymous_mib": fields.get("Anonymous", 0.0)}
