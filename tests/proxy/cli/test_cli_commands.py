"""The `mnemoproxy` memory commands, on a data_dir in-process and on a running proxy."""

from __future__ import annotations

import json
import re
import zipfile

import pytest

from mnemoproxy.proxy.cli.main import main
from mnemoproxy.proxy.edge.keys import KeyFile
from tests.support.memory_client import memory_settings
from tests.support.servers.proxy_server import ProxyServer

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


def run_text(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_commands_on_a_data_dir(tmp_path, capsys):
    data = ["--data-dir", str(tmp_path / "data"), "--agent-id", "zoe"]
    (tmp_path / "chatgpt.json").write_text(json.dumps(CHATGPT))
    imported = run_json(capsys, "import", str(tmp_path / "chatgpt.json"), "--format", "chatgpt",
                        *data)
    assert imported == {"agent_id": "zoe", "format": "chatgpt", "conversations": 1, "new": 1,
                        "updated": 0, "unchanged": 0, "turns_ingested": 2, "turns_skipped": 0}
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


def test_importing_again_adds_nothing_and_says_so(tmp_path, capsys):
    data = ["--data-dir", str(tmp_path / "data"), "--agent-id", "zoe"]
    grown = json.loads(json.dumps(CHATGPT))
    grown[0]["mapping"]["c"]["children"] = ["d"]
    grown[0]["mapping"]["d"] = {"id": "d", "parent": "c", "children": [], "message": {
        "author": {"role": "assistant"}, "content": {"parts": ["Mia sounds happy."]}}}
    grown[0]["current_node"] = "d"
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as archive:  # ChatGPT's download
        archive.writestr("conversations.json", json.dumps(CHATGPT))
    (tmp_path / "later.json").write_text(json.dumps(grown))
    # The format is told from the file: a .zip, and a conversations.json.
    first = run_text(capsys, "import", str(tmp_path / "export.zip"), *data)
    assert first.strip() == ("Imported 1 conversation into zoe: 1 new, 0 updated, "
                             "0 unchanged; 2 turns added, 0 turns held already.")
    again = run_text(capsys, "import", str(tmp_path / "export.zip"), *data)
    assert "0 new, 0 updated, 1 unchanged; 0 turns added, 2 turns held already" in again
    later = run_json(capsys, "import", str(tmp_path / "later.json"), *data)
    # The last turn got its reply: that turn is new, the first one held already.
    assert (later["updated"], later["turns_ingested"], later["turns_skipped"]) == (1, 1, 1)
    sessions = run_json(capsys, "agents", *data[:2])["agents"]
    assert sessions[0]["turns"] == 3
    # A JSON Lines history without conversation ids is found again by its content.
    (tmp_path / "chat.jsonl").write_text('{"role": "user", "content": "I like tea."}\n')
    assert run_json(capsys, "import", str(tmp_path / "chat.jsonl"), *data)["new"] == 1
    assert run_json(capsys, "import", str(tmp_path / "chat.jsonl"), *data)["unchanged"] == 1


def test_output_is_for_people_unless_json_is_asked(tmp_path, capsys):
    data = ["--data-dir", str(tmp_path / "data"), "--agent-id", "zoe"]
    (tmp_path / "chatgpt.json").write_text(json.dumps(CHATGPT))
    # --data-dir before the command word too.
    assert main(["--data-dir", str(tmp_path / "data"), "import", str(tmp_path / "chatgpt.json"),
                 "--agent-id", "zoe"]) == 0
    capsys.readouterr()
    listed = run_text(capsys, "agents", *data[:2])
    assert re.search(r"zoe\s+\d+\s+\d+\s+2\s+2024-03-01", listed), listed
    shown = run_text(capsys, "show", *data)
    assert shown.startswith("zoe: ") and " 2 turns; last active 2024-03-01" in shown
    assert "{" not in shown  # not a Python dict
    found = run_text(capsys, "search", "Porto", *data)
    scores = re.findall(r"\s(\d+\.\d+)\s", found)
    assert scores and all(len(s.split(".")[1]) == 2 for s in scores), found
    assert run_text(capsys, "search", "xylophone", *data, "--scope", "documents").strip() == (
        "Nothing in zoe's memory matches 'xylophone'.")
    assert main(["export", *data, "-o", str(tmp_path / "zoe.jsonl")]) == 0
    records = len((tmp_path / "zoe.jsonl").read_text().splitlines())
    assert capsys.readouterr().out.strip() == (
        f"Wrote {records} records of zoe's memory to {tmp_path / 'zoe.jsonl'}.")
    assert run_text(capsys, "consolidate", *data[:2]).startswith("Consolidated 1 agent in ")
    assert run_text(capsys, "dead-letters", "retry", *data[:2]).strip() == (
        "Queued 0 sessions (0 turns) to be distilled again.")
    assert re.fullmatch(r"Forgot agent zoe: 1 session, 4 messages, \d+ facts?, \d+ episodes?\.",
                        run_text(capsys, "forget", "--yes", *data).strip())


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
        assert main(["--url", server.url, "agents"]) == 1
        assert "401" in capsys.readouterr().err


def test_a_bare_mnemoproxy_prints_help(capsys):
    assert main([]) == 0
    assert "usage: mnemoproxy" in capsys.readouterr().out


def test_eval_takes_the_evaluations_own_options(capsys):
    with pytest.raises(SystemExit) as done:
        main(["eval", "--help"])
    assert done.value.code == 0
    assert "--neighbour" in capsys.readouterr().out
