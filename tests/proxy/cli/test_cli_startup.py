"""`mnemoproxy serve` says, in one block at start-up, where it forwards (without the
upstream's credentials), where memory lives, whether keys guard it and where the inspector
is, then warns of what is wrong: a MNEMO_ variable that names no setting (with the one it
probably meant), an upstream that cannot be reached. /health shows the upstream's state
too, from the last look, without waiting for a new one."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.support.servers.ports import free_port
from tests.support.servers.proxy_server import serve_process


def served(tmp_path: Path, upstream: str, *options: str, env: dict[str, str] | None = None
           ) -> tuple[str, dict]:
    """The start-up log and the admin's /health of a proxy that served, then stopped."""
    port = free_port()
    log = tmp_path / "serve.log"
    process = serve_process(port, upstream, tmp_path, log, "--log-level", "info", *options,
                            env=env)
    try:
        started = time.monotonic()
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
        assert time.monotonic() - started < 1.0  # /health never waits for the upstream
    finally:
        process.terminate()
        process.wait(timeout=30)
    return log.read_text(), health


@pytest.mark.slow
def test_start_up_tells_where_everything_is_and_what_is_wrong(tmp_path):
    dead = free_port()
    log, health = served(tmp_path, f"http://user:s3cret@127.0.0.1:{dead}/v1",
                         env={"MNEMO_MEMORY_BUDGET": "400", "MNEMO_DEBOUNCE": "5"})
    block = log[log.index("mnemoproxy 0"):]
    for line in (f"upstream   http://user:***@127.0.0.1:{dead}/v1 (not reachable)",
                 f"data dir   {tmp_path}", "store      ", "memory     on: ",
                 "keys       off: ", "/ui", "warnings   3"):
        assert line in block, line
    assert "s3cret" not in log
    assert ("MNEMO_MEMORY_BUDGET is not a setting and is ignored: did you mean "
            "MNEMO_MEMORY_BUDGET_TOKENS?") in block
    assert "MNEMO_DEBOUNCE is not a setting and is ignored: did you mean " \
           "MNEMO_SUMMARY_DEBOUNCE_SECONDS?" in block
    assert f"the upstream cannot be reached (127.0.0.1:{dead}: " in block
    assert log.count("mnemoproxy 0") == 1
    upstream = health["upstream"]
    assert upstream["url"] == f"http://user:***@127.0.0.1:{dead}/v1"
    assert upstream["reachable"] is False and upstream["error"] and upstream["checked_at"]


@pytest.mark.slow
def test_a_reachable_upstream_and_several_workers(fake_upstream, tmp_path):
    log, health = served(tmp_path, fake_upstream.base_url, "--workers", "2")
    assert f"upstream   {fake_upstream.base_url} (reachable)" in log
    assert "warnings   none" in log
    assert log.count("mnemoproxy 0") == 1  # once, not once per worker
    assert health["upstream"]["reachable"] is True and health["upstream"]["error"] is None
    # The look is a connection, not a request: the model server saw nothing.
    assert fake_upstream.requests == []
