"""Nobody gets in where they don't belong: keys and tenants over every route, cross-site
requests, Host names, and a proxy reachable from other machines without keys."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from mnemoproxy.errors import SettingError
from mnemoproxy.proxy.app import create_app
from mnemoproxy.proxy.cli.main import main
from mnemoproxy.proxy.edge.keys import KeyFile
from tests.support.memory_client import memory_settings
from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.proxy_server import ProxyServer

AGENT = "ana"

# (method, path, JSON body) of every route, each acting on AGENT where it names one.
ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/v1/chat/completions", {"model": "m", "messages": [
        {"role": "user", "content": "What is my locker code?"}]}),
    ("GET", "/v1/models", None),
    ("POST", "/memory/ingest", {"agent_id": AGENT, "conversation_id": "c",
                                "turns": [{"user": "I like tea.", "assistant": "Noted."}]}),
    ("POST", "/memory/search", {"agent_id": AGENT, "query": "locker"}),
    ("POST", "/memory/preview", {"agent_id": AGENT, "messages": [
        {"role": "user", "content": "What is my locker code?"}]}),
    ("POST", "/memory/consolidate", {"agent_id": AGENT}),
    ("POST", "/memory/dead-letters/retry", {"agent_id": AGENT}),
    ("GET", f"/agents/{AGENT}/facts", None),
    ("GET", "/agents", None),
    ("GET", f"/agents/{AGENT}", None),
    ("GET", f"/agents/{AGENT}/sessions", None),
    ("GET", f"/agents/{AGENT}/episodes", None),
    ("POST", f"/agents/{AGENT}/facts", {"content": "User likes tea."}),
    ("GET", f"/agents/{AGENT}/export", None),
]


@pytest.fixture
def keyed(fake_upstream: FakeUpstream, tmp_path: Path):
    keys = KeyFile(tmp_path / "keys.json")
    secrets = {
        "right": keys.add(agents=(AGENT,), admin=False)[1],
        "other tenant": keys.add(agents=("bo",), admin=False)[1],
        "admin": keys.add(agents=None, admin=True)[1],
        "chat only": keys.add(agents=None, admin=False)[1],
    }
    settings = memory_settings(fake_upstream, tmp_path, keys_file=str(keys.path),
                               upstream_api_key="sk-upstream")
    with ProxyServer(settings) as server:
        # Memory the other tenant must never see.
        seeded = call(server, "admin", secrets, "POST", "/memory/ingest", {
            "agent_id": AGENT, "conversation_id": "seed",
            "turns": [{"user": "My locker code is 4417.", "assistant": "Noted."}]})
        assert seeded.status_code == 200, seeded.text
        yield server, secrets, keys


def call(server: ProxyServer, who: str, secrets: dict[str, str], method: str, path: str,
         body: dict[str, Any] | None) -> httpx.Response:
    headers = {"X-Agent-Id": AGENT}
    if who == "wrong":
        headers["Authorization"] = "Bearer mp-not-a-key"
    elif who in secrets:
        headers["Authorization"] = f"Bearer {secrets[who]}"
    return httpx.request(method, server.url + path, json=body, headers=headers, timeout=30)


EXPECTED = {  # who -> status for a route acting on AGENT (GET /agents: see below)
    "no key": 401, "wrong": 401, "other tenant": 403, "right": 200, "admin": 200,
}


@pytest.mark.parametrize("who", list(EXPECTED))
@pytest.mark.parametrize("method,path,body", ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
def test_every_route_for_every_key(keyed, fake_upstream, who, method, path, body):
    server, secrets, _ = keyed
    response = call(server, who, secrets, method, path, body)
    expected = EXPECTED[who]
    if who == "other tenant" and path in ("/agents", "/v1/models"):
        expected = 200  # listed without ANA's agent / no agent involved
    status = 200 if response.status_code == 201 else response.status_code  # 201: created
    assert status == expected, response.text
    if expected != 200:
        error = response.json()["error"]
        assert error["type"] and error["message"] and "4417" not in response.text
    else:
        assert all(r.headers.get("authorization") in (None, "Bearer sk-upstream")
                   for r in fake_upstream.requests)  # the client's key never goes upstream
    if path == "/agents" and expected == 200:
        listed = [a["id"] for a in response.json()["agents"]]
        assert (AGENT in listed) == (who != "other tenant")


def test_a_chat_only_key_chats_but_reads_no_memory_routes(keyed):
    server, secrets, _ = keyed
    assert call(server, "chat only", secrets, *ROUTES[0]).status_code == 200
    for route in ROUTES[2:]:
        response = call(server, "chat only", secrets, *route)
        assert response.status_code == 403, route
        assert response.json()["error"]["code"] == "admin_required"


def test_every_agent_at_once_needs_an_admin_key(keyed):
    server, secrets, _ = keyed
    assert call(server, "right", secrets, "POST", "/memory/consolidate", {}).status_code == 403
    assert call(server, "admin", secrets, "POST", "/memory/consolidate", {}).status_code == 200


def test_the_openai_sdk_api_key_is_the_proxy_key_and_revoking_it_locks_it_out(keyed):
    server, secrets, keys = keyed
    client = openai.OpenAI(base_url=server.base_url, api_key=secrets["right"], max_retries=0,
                           default_headers={"X-Agent-Id": AGENT})
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hello"}])
    assert reply.choices[0].message.content
    key_id = next(k.id for k in keys.active if k.agents == (AGENT,))
    assert main(["keys", "--keys-file", str(keys.path), "--data-dir", server.settings.data_dir,
                 "revoke", key_id]) == 0
    with pytest.raises(openai.AuthenticationError):
        for _ in range(30):  # the proxy re-reads the key file within a second
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hello"}])
            time.sleep(0.1)


def test_health_is_open_but_details_need_an_admin_key(keyed):
    server, secrets, _ = keyed
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}
    detailed = call(server, "admin", secrets, "GET", "/health", None).json()
    assert detailed["memory"]["agents"] == 1


def test_cross_site_requests_are_refused(memory_proxy):
    server = memory_proxy
    ingest = {"agent_id": AGENT, "conversation_id": "c",
              "turns": [{"user": "I like tea.", "assistant": "Noted."}]}
    plain = httpx.post(server.url + "/memory/ingest", content=json.dumps(ingest),
                       headers={"Content-Type": "text/plain"})
    assert plain.status_code == 415 and plain.json()["error"]["param"] == "Content-Type"
    foreign = httpx.post(server.url + "/memory/ingest", json=ingest,
                         headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403
    assert foreign.json()["error"]["code"] == "origin_not_allowed"
    rebound = httpx.get(server.url + "/agents", headers={"Host": f"evil.example:{server.port}"})
    assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "host_not_allowed"
    for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}"):
        assert httpx.get(server.url + "/agents", headers={"Host": host}).status_code == 200
    chat = httpx.post(server.base_url + "/chat/completions", content=b"{}",
                      headers={"Content-Type": "text/plain"})
    assert chat.status_code == 415


def test_allowed_origins_let_a_named_site_in(fake_upstream, tmp_path):
    settings = memory_settings(fake_upstream, tmp_path, allowed_origins="https://app.example")
    with ProxyServer(settings) as server:
        ok = httpx.get(server.url + "/agents", headers={"Origin": "https://app.example"})
        assert ok.status_code == 200
        other = httpx.get(server.url + "/agents", headers={"Origin": "https://evil.example"})
        assert other.status_code == 403


def test_a_reachable_proxy_without_keys_refuses_to_start(fake_upstream, tmp_path, capsys):
    settings = memory_settings(fake_upstream, tmp_path, host="0.0.0.0")
    with pytest.raises(SettingError, match="mnemoproxy keys add"):
        create_app(settings)
    assert main(["serve", "--host", "0.0.0.0", "--data-dir", str(tmp_path / "d")]) == 2
    assert "mnemoproxy keys add --admin" in capsys.readouterr().err
    KeyFile(tmp_path / "keys.json").add(agents=None, admin=True)
    create_app(memory_settings(fake_upstream, tmp_path, host="0.0.0.0",
                               keys_file=str(tmp_path / "keys.json")))


def test_memory_on_disk_is_for_its_owner_only(fake_upstream, tmp_path):
    settings = memory_settings(fake_upstream, tmp_path)
    with ProxyServer(settings) as server:
        response = httpx.post(server.url + "/memory/ingest", json={
            "agent_id": "dana.whitfield@example.com", "conversation_id": "c",
            "turns": [{"user": "My locker code is 4417.", "assistant": "Noted."}]})
        assert response.status_code == 200
        # A search loads the agent's vector index (several processes sharing memory, as
        # on PostgreSQL, build it from the database on first use; one alone as it embeds).
        assert httpx.post(server.url + "/memory/search", json={
            "agent_id": "dana.whitfield@example.com", "query": "locker code"}).status_code == 200
    data_dir = Path(settings.data_dir)
    files = [p for p in data_dir.rglob("*") if p.is_file()]
    assert any(p.suffix == ".usearch" for p in files) and any(p.suffix == ".json" for p in files)
    for folder in [data_dir, *(p for p in data_dir.rglob("*") if p.is_dir())]:
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    for file in files:
        assert file.stat().st_mode & 0o777 == 0o600, file
        if file.suffix == ".json":  # the index sidecar names no agent
            assert "dana" not in file.read_text()


async def test_changes_through_the_api_are_in_the_processing_log_with_the_key(keyed, caplog):
    from mnemoproxy.memory.store import Store

    server, secrets, keys = keyed
    with caplog.at_level("INFO", logger="mnemoproxy.audit"):
        assert call(server, "right", secrets, *ROUTES[2]).status_code == 200  # ingest
        assert call(server, "admin", secrets, "POST", "/memory/consolidate", {}).status_code == 200
    right_id = next(k.id for k in keys.active if k.agents == (AGENT,))
    admin_id = next(k.id for k in keys.active if k.admin)
    store = await Store.open(Path(server.settings.data_dir),
                             store_url=server.settings.store_url)
    try:
        log = await store.processing_log(AGENT)
    finally:
        await store.close()
    changes = [e["detail"] for e in log if e["event"] == "api_change"]
    assert {"action": "POST /memory/ingest", "by": right_id} in changes
    assert {"action": "POST /memory/ingest", "by": admin_id} in changes  # the fixture's seed
    assert f"POST /memory/consolidate by {admin_id} for every agent" in caplog.text
    assert f"POST /memory/search by {right_id}" not in caplog.text  # not called here


def test_no_spelling_of_a_path_gets_around_the_guard(keyed):
    server, secrets, _ = keyed
    bound = {"Authorization": f"Bearer {secrets['right']}"}
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for path in ("/mcp/", "/%6Dcp/", "//mcp/"):
        assert httpx.post(server.url + path, headers=bound, json=rpc).status_code == 403, path
    for path in ("/metrics", "/%6Detrics", "//metrics"):
        assert httpx.get(server.url + path, headers=bound).status_code == 403, path
    for path in ("/v1/chat/completions", "/v1/chat/%63ompletions", "/v1/chat/completions/"):
        response = httpx.post(server.url + path, content=b"{}",
                              headers={**bound, "Content-Type": "text/plain"})
        assert response.status_code == 415, path
    for path in ("/v1/%2E%2E/agents/bo", "/v1/%2e%2e/%2e%2e/x"):
        assert httpx.get(server.url + path, headers=bound).status_code == 400, path


def test_a_reachable_proxy_whose_keys_are_all_revoked_is_closed(fake_upstream, tmp_path):
    keys = KeyFile(tmp_path / "keys.json")
    key, _ = keys.add(agents=None, admin=True)
    settings = memory_settings(fake_upstream, tmp_path, host="0.0.0.0", keys_file=str(keys.path))
    with ProxyServer(settings) as server:
        assert main(["keys", "--keys-file", str(keys.path), "--data-dir", settings.data_dir,
                     "revoke", key.id]) == 0
        time.sleep(1.1)  # the key file is re-read within a second
        assert httpx.get(server.url + "/agents").status_code == 401
        assert httpx.get(server.url + "/health").status_code == 200
