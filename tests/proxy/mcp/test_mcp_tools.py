"""Memory over MCP, through the real MCP client: the proxy's /mcp (streamable HTTP) behind
its keys, and `mnemoproxy mcp` over stdio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from mnemoproxy.proxy.edge.keys import KeyFile
from tests.support.memory_client import memory_settings
from tests.support.servers.backends import store_url_for
from tests.support.servers.proxy_server import ProxyServer

ROOT = Path(__file__).resolve().parents[3]


async def use_tools(session: ClientSession) -> None:
    await session.initialize()
    names = {tool.name for tool in (await session.list_tools()).tools}
    assert names == {"search_memory", "remember", "forget", "list_agents"}
    stored = await session.call_tool("remember", {"agent_id": "dana",
                                                  "fact": "User's cat is called Mia."})
    fact_id = json.loads(stored.content[0].text)["fact_id"]
    found = await session.call_tool("search_memory", {"agent_id": "dana", "query": "cat"})
    assert "Mia" in found.content[0].text
    agents = await session.call_tool("list_agents", {})
    assert "dana" in agents.content[0].text
    await session.call_tool("forget", {"agent_id": "dana", "fact_id": fact_id})
    after = await session.call_tool("search_memory", {"agent_id": "dana", "query": "cat"})
    assert "Mia" not in "".join(c.text for c in after.content)
    # Mistakes are errors that say what went wrong, not an empty answer or a bare "Error".
    for tool, arguments, said in (
            ("search_memory", {"agent_id": "dona", "query": "cat"}, "no agent 'dona'"),
            ("search_memory", {"agent_id": "dana", "query": "cat", "scope": "cats"},
             "scope is one of"),
            ("forget", {"agent_id": "dana", "fact_id": fact_id + 99},
             f"agent 'dana' has no fact {fact_id + 99}"),
            ("forget", {"agent_id": "dona", "fact_id": 1}, "agent 'dona' has no fact 1"),
            ("remember", {"agent_id": "dana", "fact": " "}, "fact needs text")):
        refused = await session.call_tool(tool, arguments)
        text = "".join(c.text for c in refused.content)
        assert refused.is_error and said in text, (tool, text)


async def test_mcp_over_http_behind_the_keys(fake_upstream, tmp_path):
    keys = KeyFile(tmp_path / "keys.json")
    _, admin = keys.add(agents=None, admin=True)
    _, bound = keys.add(agents=("dana",), admin=False)
    with ProxyServer(memory_settings(fake_upstream, tmp_path, keys_file=str(keys.path))) as s:
        client = httpx.AsyncClient(headers={"Authorization": f"Bearer {admin}"})
        async with client, streamable_http_client(s.url + "/mcp/", http_client=client) as (
            read, write, *_), ClientSession(read, write) as session:
            await use_tools(session)
        for key in (None, bound):  # the tools name any agent: an admin key only
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            refused = httpx.post(s.url + "/mcp/", headers=headers, json={
                "jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert refused.status_code in (401, 403), (key, refused.text[:300])


@pytest.mark.slow
async def test_mcp_over_stdio(tmp_path):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mnemoproxy.proxy.cli.main", "mcp", "--data-dir",
                                      str(tmp_path / "data")],
        env={"MNEMO_EMBEDDING_BACKEND": "hashing",
             "MNEMO_STORE_URL": store_url_for(str(tmp_path / "data"))})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await use_tools(session)


def test_the_mcp_sdk_is_loaded_by_the_first_mcp_request_only(tmp_path):
    """A proxy nobody calls over MCP never imports the SDK (~30 MiB of private memory);
    concurrent first requests start it once and are all answered."""
    script = """
import sys
from concurrent.futures import ThreadPoolExecutor
from litestar.testing import TestClient
from mnemoproxy.proxy.app import create_app
from types import SimpleNamespace
from tests.support.memory_client import memory_settings
unreachable = SimpleNamespace(base_url="http://127.0.0.1:9/v1")  # no chat is made here
app = create_app(memory_settings(unreachable, __import__("pathlib").Path(sys.argv[1])))
with TestClient(app, base_url="http://127.0.0.1") as client:
    assert client.get("/health").status_code == 200
    assert "mcp" not in sys.modules, "imported before any /mcp request"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: client.post("/mcp/", json=call, headers=headers),
                                range(4)))
    assert [a.status_code for a in answers] == [200] * 4, [a.text[:200] for a in answers]
    assert all("search_memory" in a.text for a in answers)
    assert "mcp" in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
