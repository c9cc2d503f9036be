"""The `mnemoproxy` memory commands, on a data_dir in-process and on a running proxy."""

from __future__ import annotations

import json

import pytest

from mnemoproxy.proxy.cli.main import main
from mnemoproxy.proxy.edge.keys import KeyFile
from tests.support.memory_client import memory_settings
from tests.support.proxy_server import ProxyServer

CHATGPT = [{
    "id": "conv-1", "title": "Moving", "create_time": 1709287200.0, "current_node": "c",
    "mapping": {
        "root": {"id": "root", "message": None, "parent": None, "children": ["a"]},
        "a": {"id": "a", "parent": "root", "children": ["b", "x"], "message": {
            "author": {"role": "user"}, "create_time": 1709287200.0,
            "content": {"content_type": "text", "parts": ["I moved to Porto last week."]}}},
        "x": {"id": "x", "parent": "a", "children": [], "message": {
            "author": {"role": "assistant"},
            "content": {"content_type": "text", "parts": ["An abandoned branch."]}}},
        "b": {"id": "b", "parent": "a", "children": ["c"], "message": {
            "author": {"role": "assistant"},
            "content": {"content_type": "text", "parts": ["Porto is lovely!"]}}},
        "c": {"id": "c", "parent": "b", "children": [], "message": {
            "author": {"role": "user"},
            "content": {"content_type": "text", "parts": ["My cat Mia loves it too."]}}},
    },
}]


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_commands_on_a_data_dir(tmp_path, capsys):
    data = ["--data-dir", str(tmp_path / "data"), "--agent-id", "zoe"]
    (tmp_path / "chatgpt.json").write_text(json.dumps(CHATGPT))
    imported = run_json(capsys, "import", str(tmp_path / "chatgpt.json"), "--format", "chatgpt",
                        *data)
    assert imported == {"conversations": 1, "turns_ingested": 2}
    (tmp_path / "chat.jsonl").write_text(
        '{"role": "user", "content": "I work at Oceanlab.", "conversation_id": "w"}\n'
        '{"role": "assistant", "content": "Nice!", "conversation_id": "w"}\n')
    assert run_json(capsys, "import", str(tmp_path / "chat.jsonl"), "--format", "jsonl",
                    *data)["turns_ingested"] == 1
    agents = run_json(capsys, "agents", "--data-dir", str(tmp_path / "data"))["agents"]
    assert [(a["id"], a["turns"]) for a in agents] == [("zoe", 3)]
    found = run_json(capsys, "search", "where did I move", *data)["results"]
    assert "Porto" in found[0]["text"] and "abandoned" not in json.dumps(found)
    assert main(["export", *data, "-o", str(tmp_path / "zoe.jsonl")]) == 0
    assert '"Porto is lovely!"' in (tmp_path / "zoe.jsonl").read_text()
    assert run_json(capsys, "forget", "--yes", *data)["forgotten"]["messages"] == 6
    assert run_json(capsys, "agents", "--data-dir", str(tmp_path / "data"))["agents"] == []
    assert run_json(capsys, "import", str(tmp_path / "zoe.jsonl"), *data)["added"]["messages"] == 6


def test_commands_on_a_running_proxy_with_keys(fake_upstream, tmp_path, capsys):
    keys = KeyFile(tmp_path / "keys.json")
    _, admin = keys.add(agents=None, admin=True)
    settings = memory_settings(fake_upstream, tmp_path, keys_file=str(keys.path))
    with ProxyServer(settings) as server:
        (tmp_path / "chat.jsonl").write_text('{"role": "user", "content": "I like tea."}\n')
        remote = ["--url", server.url, "--api-key", admin]
        assert run_json(capsys, "import", str(tmp_path / "chat.jsonl"), "--format", "jsonl",
                        "--agent-id", "kim", *remote)["turns_ingested"] == 1
        assert [a["id"] for a in run_json(capsys, "agents", *remote)["agents"]] == ["kim"]
        with pytest.raises(SystemExit, match="401"):
            main(["agents", "--url", server.url])


def test_a_bare_mnemoproxy_prints_help(capsys):
    assert main([]) == 0
    assert "usage: mnemoproxy" in capsys.readouterr().out


def test_eval_takes_the_evaluations_own_options(capsys):
    with pytest.raises(SystemExit) as done:
        main(["eval", "--help"])
    assert done.value.code == 0
    assert "--neighbour" in capsys.readouterr().out
