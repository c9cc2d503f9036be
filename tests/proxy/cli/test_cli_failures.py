"""Every `mnemoproxy` command, run as a user runs it (a process of its own), meets the usual
mistakes: a proxy that is not running, a file that is not there, a file that is not JSON
(or not TOML), and a reader that stops early (`| head`). Each answers with a message and a
non-zero exit (or, for the early reader, ends quietly), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.support.servers.backends import store_url_for
from tests.support.servers.ports import free_port
from tests.support.servers.proxy_server import ProxyServer

ROOT = Path(__file__).resolve().parents[3]
MEMORY_COMMANDS = (["agents"], ["show", "--agent-id", "zoe"],
                   ["search", "porto", "--agent-id", "zoe"],
                   ["forget", "--agent-id", "zoe", "--yes"], ["export", "--agent-id", "zoe"],
                   ["consolidate"], ["dead-letters", "retry"])


def mnemoproxy(args: list[str], cwd: Path, *, close_stdout: bool = False,
               env: dict[str, str] | None = None) -> tuple[int, str]:
    """(exit code, standard error) of `mnemoproxy ARGS`; with `close_stdout`, its output's
    reader is gone before it writes anything."""
    environment = {**os.environ, "MNEMO_EMBEDDING_BACKEND": "hashing", **(env or {})}
    process = subprocess.Popen(
        [sys.executable, "-m", "mnemoproxy.proxy.cli.main", *args], cwd=cwd, env=environment,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    if close_stdout:
        process.stdout.close()
        error = process.stderr.read()
    else:
        _, error = process.communicate()
    process.wait(timeout=120)
    return process.returncode, error.decode(errors="replace")


def run_all(cases: list[tuple[list[str], bool]], cwd: Path,
            env: dict[str, str] | None = None) -> list[tuple[list[str], int, str]]:
    with ThreadPoolExecutor(3) as pool:
        done = list(pool.map(lambda case: mnemoproxy(case[0], cwd, close_stdout=case[1],
                                                     env=env), cases))
    return [(args, code, error) for (args, _), (code, error) in zip(cases, done, strict=True)]


def files(tmp_path: Path) -> dict[str, Path]:
    chatgpt = tmp_path / "conversations.json"
    chatgpt.write_text(json.dumps([{"id": "c1", "title": "Porto", "current_node": "b",
                                    "mapping": {
        "a": {"parent": None, "message": {"author": {"role": "user"},
                                          "content": {"parts": ["I moved to Porto."]}}},
        "b": {"parent": "a", "message": {"author": {"role": "assistant"},
                                         "content": {"parts": ["Lovely!"]}}}}}]))
    bad = tmp_path / "bad.json"
    bad.write_text('{"role": "user", "content": ')
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("port = [")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "kettle.md").write_text("# Kettle\n\nDescale it every 6 weeks.\n")
    return {"chatgpt": chatgpt, "bad": bad, "bad_toml": bad_toml, "folder": folder}


@pytest.mark.slow
def test_no_command_answers_a_mistake_with_a_traceback(memory_proxy: ProxyServer, tmp_path):
    given = files(tmp_path)
    dead = f"http://127.0.0.1:{free_port()}"
    missing = str(tmp_path / "missing.json")
    live = ["--url", memory_proxy.url]
    httpx.post(memory_proxy.url + "/memory/ingest", json={
        "agent_id": "zoe", "conversation_id": "c", "turns": [
            {"user": f"I moved to Porto in {year}.", "assistant": "Lovely!"}
            for year in range(1990, 2030)]}).raise_for_status()
    # (arguments, close stdout first)
    cases: list[tuple[list[str], bool]] = []
    for command in MEMORY_COMMANDS:
        cases += [([*command, "--url", dead], False),
                  ([*command, "--config", missing], False),
                  ([*command, "--config", str(given["bad_toml"])], False),
                  ([*command[:1], "--help"], True)]
    cases += [([*command, *live], True) for command in MEMORY_COMMANDS[:3]]
    cases += [(["export", "--agent-id", "zoe", *live], True),
              (["export", "--agent-id", "zoe", *live, "-o", str(tmp_path / "no" / "x")], False)]
    for fmt in ([], ["--format", "chatgpt"], ["--format", "jsonl"], ["--format", "export"]):
        cases += [(["import", missing, "--agent-id", "zoe", *fmt, *live], False),
                  (["import", str(given["bad"]), "--agent-id", "zoe", *fmt, *live], False)]
    cases += [(["import", str(given["chatgpt"]), "--agent-id", "zoe", "--url", dead], False),
              (["import", str(given["chatgpt"]), "--agent-id", "zoe", "--format", "export",
                *live], False),
              (["import", str(given["folder"]), "--agent-id", "zoe", *live], False),
              (["import-docs", missing, "--agent-id", "zoe", *live], False),
              (["import-docs", str(given["chatgpt"]), "--agent-id", "zoe", *live], False),
              (["import-docs", str(given["folder"]), "--agent-id", "zoe", "--url", dead], False),
              (["import", str(given["chatgpt"]), "--agent-id", "zoe", *live], True),
              (["import-docs", str(given["folder"]), "--agent-id", "zoe", *live], True)]
    keys_file = tmp_path / "keys.json"
    keys_file.write_text("{not json")
    cases += [(["serve", "--config", missing], False),
              (["serve", "--config", str(given["bad_toml"])], False),
              (["serve", "--port", "99999"], False), (["serve", "--help"], True),
              (["keys", "--keys-file", str(keys_file), "list"], False),
              (["keys", "--keys-file", str(keys_file), "add"], False),
              (["keys", "--help"], True),
              (["mcp", "--config", missing], False), (["mcp", "--help"], True),
              (["eval", "--help"], True), (["--help"], True), ([], True),
              (["agents", "--url", "127.0.0.1:1337"], False),
              (["--url", dead, "agents"], False)]
    for args, code, error in run_all(cases, tmp_path,
                                     env={"MNEMO_STORE_URL": store_url_for(str(tmp_path))}):
        assert "Traceback" not in error, (args, error)
        closed = next(close for command, close in cases if command is args)
        if not closed:
            assert code != 0, (args, error)
            assert error.strip(), args  # a message saying what went wrong
    # Nothing was left in the folder the commands ran in.
    assert not (tmp_path / "mnemo-data").exists()


def test_the_messages_say_what_to_do(memory_proxy: ProxyServer, tmp_path):
    given = files(tmp_path)
    dead = f"http://127.0.0.1:{free_port()}"
    live = ["--url", memory_proxy.url]
    cases: list[tuple[list[str], bool]] = [
        (["agents", "--url", dead], False),
        (["import", str(given["chatgpt"]), "--agent-id", "zoe", "--format", "export", *live],
         False),
        (["import", str(tmp_path / "missing.json"), "--agent-id", "zoe", *live], False),
        (["forget", "--agent-id", "zoe", *live], False),
        (["agents"], False),
    ]
    said = {" ".join(args[:1]) + str(n): error
            for n, (args, _, error) in enumerate(run_all(cases, tmp_path, env={
                "MNEMO_STORE_URL": ""}))}
    assert "cannot reach the proxy at " + dead in said["agents0"]
    assert "use --format chatgpt" in said["import1"]
    assert "missing.json" in said["import2"] and "No such file" in said["import2"]
    assert "pass --yes" in said["forget3"]
    # Without --url, on a data_dir holding no memory: it says where it looked, and
    # leaves no empty memory behind.
    assert f"no memory in data_dir {tmp_path / 'mnemo-data'}" in said["agents4"]
    assert not (tmp_path / "mnemo-data").exists()
