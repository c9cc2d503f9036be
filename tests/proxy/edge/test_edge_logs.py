"""log_format = "json": every line the server writes is one JSON object, uvicorn's too."""

from __future__ import annotations

import json
import logging
import sys

import httpx

from mnemoproxy.proxy.edge.logs import JsonFormatter
from tests.support.servers.ports import free_port
from tests.support.servers.proxy_server import serve_process


def test_the_server_writes_json_lines(fake_upstream, tmp_path):
    log = tmp_path / "proxy.log"
    port = free_port()
    proc = serve_process(port, fake_upstream.base_url, tmp_path, log,
                         "--log-format", "json", "--log-level", "info")
    try:
        response = httpx.post(f"http://127.0.0.1:{port}/memory/ingest", timeout=30, json={
            "agent_id": "a", "conversation_id": "c",
            "turns": [{"user": "I live in Porto.", "assistant": "Nice."}]})
        assert response.status_code == 200, response.text
    finally:
        proc.terminate()
        proc.wait(30)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records and all(
        {"time", "level", "logger", "message"} <= set(r) for r in records)
    loggers = {r["logger"] for r in records}
    assert any(name.startswith("uvicorn") for name in loggers), loggers
    assert any(r["message"].startswith("ingested 1 of 1 turns") for r in records)


def test_a_record_with_an_exception_carries_its_traceback():
    try:
        raise ValueError("disk on fire")
    except ValueError:
        record = logging.LogRecord("mnemoproxy.memory", logging.ERROR, __file__, 1,
                                   "storing %s failed\nsecond line", ("a turn",), sys.exc_info())
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "ERROR" and entry["logger"] == "mnemoproxy.memory"
    assert entry["message"] == "storing a turn failed\nsecond line"
    assert entry["time"].endswith("+00:00")
    assert "Traceback" in entry["exc_info"] and "ValueError: disk on fire" in entry["exc_info"]

