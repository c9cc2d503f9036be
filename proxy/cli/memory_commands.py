"""The memory commands of `mnemoproxy` (agents, show, search, forget, export, import,
import-docs, consolidate, dead-letters): each sends requests to the proxy's routes, to a
running proxy (`--url`, with `--api-key` when it has keys) or to the app served in-process
on `data_dir` (no server needed; do not point it at a data_dir a running proxy uses).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from mnemoproxy.config.settings import Settings, load_settings
from mnemoproxy.memory import DOCUMENT_EXTENSIONS
from mnemoproxy.proxy.cli.chat_imports import (
    ImportedConversation,
    chatgpt_conversations,
    jsonl_conversations,
)

# The key the memory commands send to a running proxy when --api-key is not given.
API_KEY_VARIABLE = "MNEMO_API_KEY"
COMMANDS = ("agents", "show", "search", "forget", "export", "import", "import-docs",
            "consolidate", "dead-letters")


def add_commands(commands: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", help="a running proxy (e.g. http://127.0.0.1:1337); "
                                      "default: data_dir, in-process")
    common.add_argument("--api-key", default=os.environ.get(API_KEY_VARIABLE),
                        help=f"a key of the running proxy, when it has keys (default: "
                             f"${API_KEY_VARIABLE})")
    common.add_argument("--data-dir", dest="data_dir", help="memory's folder (without --url)")
    common.add_argument("--config", metavar="FILE", help="TOML settings file")
    common.add_argument("--json", action="store_true", help="print JSON, not tables")
    agent = argparse.ArgumentParser(add_help=False)
    agent.add_argument("--agent-id", required=True)
    some_agent = argparse.ArgumentParser(add_help=False)
    some_agent.add_argument("--agent-id", help="one agent (default: every agent)")

    commands.add_parser("agents", parents=[common], help="the agents memory holds")
    commands.add_parser("show", parents=[common, agent], help="one agent: counts and facts")
    search = commands.add_parser("search", parents=[common, agent], help="search memory")
    search.add_argument("query")
    search.add_argument("--scope",
                        choices=("pinned", "identity", "episodes", "transcript", "documents"))
    search.add_argument("--top-k", type=int, default=10)
    forget = commands.add_parser("forget", parents=[common, agent],
                                 help="forget an agent completely (no undo)")
    forget.add_argument("--yes", action="store_true", help="do not ask")
    export = commands.add_parser("export", parents=[common, agent],
                                 help="an agent's memory as JSON Lines")
    export.add_argument("-o", "--output", help="file (default: standard output)")
    imports = commands.add_parser("import", parents=[common, agent],
                                  help="a file into an agent's memory")
    imports.add_argument("file")
    imports.add_argument("--format", choices=("export", "jsonl", "chatgpt"), default="export",
                         help="export: this tool's JSON Lines; jsonl: {role, content, "
                              "timestamp} lines; chatgpt: ChatGPT's conversations.json")
    imports.add_argument("--skip-extraction", action="store_true",
                         help="store chats verbatim without distilling them")
    docs = commands.add_parser(
        "import-docs", parents=[common, agent],
        help="a folder's documents (.md .markdown .txt .html .htm .pdf) into an agent's "
             "knowledge base")
    docs.add_argument("folder")
    docs.add_argument("--no-recursive", dest="recursive", action="store_false",
                      help="only the folder's own files, not its subfolders'")
    commands.add_parser("consolidate", parents=[common, some_agent],
                        help="run a consolidation pass now")
    dead = commands.add_parser("dead-letters", parents=[common, some_agent],
                               help="dead-lettered distillations")
    dead.add_argument("action", choices=("retry",))


@contextmanager
def _client(args: argparse.Namespace) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    if args.url:
        with httpx.Client(base_url=args.url.rstrip("/"), headers=headers, timeout=600) as http:
            yield http
        return
    from litestar.testing import TestClient

    from mnemoproxy.proxy.app import create_app

    settings: Settings = load_settings(cli={"data_dir": args.data_dir}, config_file=args.config)
    # The owner of data_dir needs no key: the app is served to this process alone.
    local = load_settings(cli={"data_dir": settings.data_dir, "host": "127.0.0.1",
                               "keys_file": str(Path(settings.data_dir) / "no-keys.json"),
                               "reopen_without_keys": True},
                          config_file=args.config)
    with TestClient(create_app(local), base_url="http://127.0.0.1", timeout=600) as http:
        yield http


def _answer(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = response.text[:500]
        raise SystemExit(f"mnemoproxy: {response.status_code}: {message}")
    kind = response.headers.get("content-type", "")
    return response.json() if kind.startswith("application/json") else response.text


def run(args: argparse.Namespace) -> int:
    if getattr(args, "agent_id", None):
        # One path segment whatever the id holds ('/', '?', '#', '%'): never another agent.
        args.agent = quote(args.agent_id, safe="")
    # httpx logs every request at INFO: noise on a command's output.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    console = Console()
    with _client(args) as http:
        if args.command == "agents":
            shown = _answer(http.get("/agents"))
            _show(console, args, shown, "agents",
                  ("id", "facts", "episodes", "turns", "last_active"))
        elif args.command == "show":
            agent = _answer(http.get(f"/agents/{args.agent}"))
            facts = _answer(http.get(f"/agents/{args.agent}/facts"))
            if args.json:
                print(json.dumps({**agent, "facts": facts["facts"]}))
            else:
                console.print(agent)
                _show(console, args, facts, "facts", ("id", "kind", "content", "salience"))
        elif args.command == "search":
            body = {"agent_id": args.agent_id, "query": args.query, "top_k": args.top_k}
            if args.scope:
                body["scope"] = args.scope
            _show(console, args, _answer(http.post("/memory/search", json=body)), "results",
                  ("kind", "score", "text"))
        elif args.command == "forget":
            if not args.yes and input(f"forget agent {args.agent_id!r} completely? [y/N] ") \
                    .strip().lower() != "y":
                return 1
            print(json.dumps(_answer(http.delete(f"/agents/{args.agent}"))))
        elif args.command == "export":
            text = _answer(http.get(f"/agents/{args.agent}/export"))
            if args.output:
                Path(args.output).write_text(text, encoding="utf-8")
            else:
                sys.stdout.write(text)
        elif args.command == "import":
            return _import(http, args, console)
        elif args.command == "import-docs":
            return _import_docs(http, args, console)
        elif args.command in ("consolidate", "dead-letters"):
            path = "/memory/consolidate" if args.command == "consolidate" else (
                "/memory/dead-letters/retry")
            body = {"agent_id": args.agent_id} if args.agent_id else {}
            print(json.dumps(_answer(http.post(path, json=body))))
    return 0


def _import(http: httpx.Client, args: argparse.Namespace, console: Console) -> int:
    path = Path(args.file)
    if args.format == "export":
        answer = _answer(http.post(f"/agents/{args.agent}/import", content=path.read_bytes(),
                                   headers={"Content-Type": "application/x-ndjson"}))
        print(json.dumps(answer))
        return 0
    text = path.read_text(encoding="utf-8")
    conversations: list[ImportedConversation] = list(
        chatgpt_conversations(json.loads(text)) if args.format == "chatgpt"
        else jsonl_conversations(text.splitlines()))
    added = 0
    with Progress(console=console, transient=args.json) as progress:
        task = progress.add_task(f"importing into {args.agent_id}", total=len(conversations))
        for conversation in conversations:
            body: dict[str, Any] = {
                "agent_id": args.agent_id, "conversation_id": conversation.conversation_id,
                "turns": [{"user": u, "assistant": a} for u, a in conversation.turns],
                "skip_extraction": args.skip_extraction}
            if conversation.date is not None:
                body["session_date"] = conversation.date.isoformat()
            added += _answer(http.post("/memory/ingest", json=body))["turns_ingested"]
            progress.advance(task)
    print(json.dumps({"conversations": len(conversations), "turns_ingested": added}))
    return 0


def _import_docs(http: httpx.Client, args: argparse.Namespace, console: Console) -> int:
    """Each document file under the folder, uploaded to POST /agents/{id}/documents with a
    progress bar; a file the proxy refuses is reported and the rest go on."""
    folder = Path(args.folder)
    if not folder.is_dir():
        raise SystemExit(f"mnemoproxy: {folder} is not a folder")
    found = folder.rglob("*") if args.recursive else folder.glob("*")
    files = sorted(p for p in found if p.is_file() and p.suffix.lower() in DOCUMENT_EXTENSIONS)
    stored: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []
    with Progress(console=console, transient=args.json) as progress:
        task = progress.add_task(f"importing into {args.agent_id}", total=len(files))
        for path in files:
            name = str(path.relative_to(folder))
            response = http.post(f"/agents/{args.agent}/documents",
                                 files={"file": (name, path.read_bytes())})
            if response.status_code == 201:
                stored.append(response.json()["document"])
            else:
                try:
                    reason = response.json()["error"]["message"]
                except (ValueError, KeyError, TypeError):
                    reason = response.text[:500]
                if response.status_code >= 500 or response.status_code in (401, 403, 503):
                    raise SystemExit(f"mnemoproxy: {response.status_code}: {reason}")
                failed.append({"file": name, "error": reason})
                Console(stderr=True).print(f"[red]{name}[/red]: {reason}", highlight=False)
            progress.advance(task)
    print(json.dumps({"documents": len(stored), "chunks": sum(d["chunks"] for d in stored),
                      "failed": failed}))
    return 1 if failed else 0


def _show(console: Console, args: argparse.Namespace, answer: dict[str, Any], key: str,
          columns: tuple[str, ...]) -> None:
    if args.json:
        print(json.dumps(answer))
        return
    table = Table(*columns)
    for row in answer[key]:
        table.add_row(*(str(row.get(c, "")) for c in columns))
    console.print(table)
