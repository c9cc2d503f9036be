"""Keys over their life: a key reaches memory only through its agent list ('*' for every
agent), a proxy that once had keys stays closed when they are revoked or their file goes
(until `keys reset` or reopen_without_keys), the command line takes its options anywhere
and its key from MNEMO_API_KEY, and the start-up log says what keys mean."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from mnemoproxy.proxy.cli.main import main
from mnemoproxy.proxy.edge.keys import KeyFile
from mnemoproxy.proxy.relay.probe import Reachability
from mnemoproxy.proxy.startup import startup_report
from tests.support.memory_client import memory_settings, wait_for
from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.proxy_server import ProxyServer

RELOAD = 1.2  # the proxy re-reads the key file within a second
CHAT = {"model": "m", "messages": [{"role": "user", "content": "What is my locker code?"}]}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def keys_in(tmp_path: Path) -> KeyFile:
    return KeyFile(tmp_path / "data" / "keys.json")


def test_a_key_without_agents_relays_chats_and_touches_no_memory(fake_upstream, tmp_path):
    keys = keys_in(tmp_path)
    _, admin = keys.add(agents=None, admin=True)
    _, relay_only = keys.add(agents=None, admin=False)
    settings = memory_settings(fake_upstream, tmp_path, injection="system")
    with ProxyServer(settings) as server:
        seeded = httpx.post(server.url + "/memory/ingest", headers=bearer(admin), json={
            "agent_id": "alice", "conversation_id": "seed",
            "turns": [{"user": "My locker code is 4417.", "assistant": "Noted."}]})
        assert seeded.status_code == 200, seeded.text

        def turns() -> int:
            shown = httpx.get(server.url + "/agents/alice", headers=bearer(admin)).json()
            return int(shown["turns"])

        before = turns()
        fake_upstream.reset()
        chat = httpx.post(server.base_url + "/chat/completions", json=CHAT,
                          headers={**bearer(relay_only), "X-Agent-Id": "alice"})
        assert chat.status_code == 200, chat.text
        assert chat.headers["X-Memory-Section"] == "off"
        assert "no agent list" in chat.headers["X-Memory-Hint"]
        sent = fake_upstream.requests[-1].json
        assert "4417" not in str(sent)  # nothing read: not in the system prompt, nor the turn
        assert sent["messages"] == CHAT["messages"]
        time.sleep(1.5)  # past the debounce: nothing was recorded either
        assert turns() == before


def test_a_key_for_every_agent_reads_any_one_but_not_all_at_once(fake_upstream, tmp_path):
    keys = keys_in(tmp_path)
    key, every = keys.add(agents=("*",), admin=False)
    assert key.may_use("anyone")
    with ProxyServer(memory_settings(fake_upstream, tmp_path)) as server:
        for agent in ("alice", "bob"):
            stored = httpx.post(server.url + "/memory/ingest", headers=bearer(every), json={
                "agent_id": agent, "conversation_id": "c",
                "turns": [{"user": f"My locker code is 44{len(agent)}.", "assistant": "Ok."}]})
            assert stored.status_code == 200, stored.text
        chat = httpx.post(server.base_url + "/chat/completions", json=CHAT,
                          headers={**bearer(every), "X-Agent-Id": "bob"})
        assert chat.status_code == 200 and chat.headers["X-Memory-Section"] != "none"
        listed = httpx.get(server.url + "/agents", headers=bearer(every)).json()["agents"]
        assert {a["id"] for a in listed} == {"alice", "bob"}
        everyone = httpx.post(server.url + "/memory/consolidate", json={},
                              headers=bearer(every))
        assert everyone.status_code == 403
        assert httpx.get(server.url + "/metrics", headers=bearer(every)).status_code == 403


@pytest.mark.parametrize("how", ["revoked", "file removed"])
def test_a_loopback_proxy_that_had_keys_stays_closed_without_them(fake_upstream, tmp_path, how):
    keys = keys_in(tmp_path)
    key, _ = keys.add(agents=None, admin=True)
    settings = memory_settings(fake_upstream, tmp_path)
    with ProxyServer(settings) as server:
        if how == "revoked":
            assert main(["keys", "revoke", key.id, "--data-dir", settings.data_dir]) == 0
        else:
            keys.path.unlink()
        time.sleep(RELOAD)
        for method, path in (("GET", "/agents"), ("GET", "/agents/alice/export"),
                             ("POST", "/v1/chat/completions"), ("GET", "/v1/models")):
            response = httpx.request(method, server.url + path, json=CHAT)
            assert response.status_code == 401, (path, response.text)
            assert "keys reset" in response.json()["error"]["message"]
        assert httpx.get(server.url + "/health").status_code == 200
    # Closed at the next start too, and it says so.
    with ProxyServer(settings) as server:
        assert httpx.get(server.url + "/agents").status_code == 401
        # `keys reset` is the deliberate way back to a keyless loopback proxy.
        assert main(["keys", "reset", "--data-dir", settings.data_dir]) == 0
        assert wait_for(lambda: httpx.get(server.url + "/agents").status_code == 200)


def test_reopen_without_keys_is_the_setting_that_reopens_it(fake_upstream, tmp_path):
    keys = keys_in(tmp_path)
    key, _ = keys.add(agents=None, admin=True)
    keys.revoke(key.id)
    settings = memory_settings(fake_upstream, tmp_path, reopen_without_keys=True)
    with ProxyServer(settings) as server:
        assert httpx.get(server.url + "/agents").status_code == 200


def test_start_up_says_what_the_keys_mean(fake_upstream, tmp_path):
    def report(**overrides: object) -> str:
        settings = memory_settings(fake_upstream, tmp_path, **overrides)
        return startup_report(settings, KeyFile.of(settings.keys_file, settings.data_dir),
                              Reachability(True))

    keys = keys_in(tmp_path)
    revoked, _ = keys.add(agents=None, admin=True)
    keys.revoke(revoked.id)
    closed = report()
    assert "closed" in closed and "keys reset" in closed
    relay, _ = keys.add(agents=None, admin=False)
    keys.add(agents=("alice",), admin=False)
    warned = report()
    assert relay.id in warned and "without memory" in warned
    assert "upstream_api_key" in warned
    assert "upstream_api_key" not in report(upstream_api_key="sk-up")


def test_keys_take_their_options_in_any_position(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MNEMO_UPSTREAM_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    data = str(tmp_path / "data")
    assert main(["keys", "add", "--admin", "--data-dir", data]) == 0
    added = capsys.readouterr()
    assert added.out.startswith("mp-")
    assert "upstream_api_key" in added.err  # the client's own upstream key no longer goes
    assert main(["keys", "--data-dir", data, "add", "--agents", "*"]) == 0
    assert main(["keys", "add", "--keys-file", str(tmp_path / "other.json"),
                 "--agents", "alice,bob"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("MNEMO_UPSTREAM_API_KEY", "sk-up")
    assert main(["keys", "add", "--data-dir", data]) == 0
    assert "upstream_api_key" not in capsys.readouterr().err
    listed = KeyFile(Path(data) / "keys.json").all
    assert [(k.admin, k.agents) for k in listed] == [
        (True, None), (False, ("*",)), (False, None)]
    assert [k.agents for k in KeyFile(tmp_path / "other.json").all] == [("alice", "bob")]
    assert not (tmp_path / "mnemo-data").exists()  # no data_dir made where none was named


def test_the_cli_reads_its_key_from_mnemo_api_key(fake_upstream: FakeUpstream, tmp_path,
                                                   capsys, monkeypatch):
    keys = keys_in(tmp_path)
    _, admin = keys.add(agents=None, admin=True)
    with ProxyServer(memory_settings(fake_upstream, tmp_path)) as server:
        refused = httpx.get(server.url + "/agents")
        message = refused.json()["error"]["message"]
        assert "api_key" in message and "MNEMO_API_KEY" in message and "--api-key" in message
        monkeypatch.setenv("MNEMO_API_KEY", admin)
        assert main(["agents", "--url", server.url, "--json"]) == 0
        assert '"agents"' in capsys.readouterr().out
