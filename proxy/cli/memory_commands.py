"""The memory commands of `mnemoproxy` (agents, show, search, forget, export, import,
import-docs, consolidate, dead-letters): each sends requests to the proxy's routes, to a
running proxy (`--url`, with `--api-key` when it has keys) or to the app served in-process
on `data_dir` (no server needed; do not point it at a data_dir a running proxy uses).

Each prints a sentence or a table for people, or with `--json` the proxy's JSON
(proxy/cli/output.py); a failure is a message and a non-zero exit (proxy/cli/failures.py).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from mnemoproxy.config.settings import load_settings
from mnemoproxy.errors import InvalidArgument
from mnemoproxy.proxy.cli.chat_imports import (
    FORMATS,
    ImportedConversation,
    chatgpt_conversations,
    chosen_format,
    jsonl_conversations,
    read_import,
)
from mnemoproxy.proxy.cli.failures import CommandError
from mnemoproxy.proxy.cli.output import Output, ago, count, counts, one_line, score

# The key the memory commands send to a running proxy when --api-key is not given.
API_KEY_VARIABLE = "MNEMO_API_KEY"
COMMANDS = ("agents", "show", "search", "forget", "export", "import", "import-docs",
            "consolidate", "dead-letters")
# Commands that only look at (or remove) what memory holds: on a data_dir holding no memory
# they say so, rather than create an empty one wherever they were run.
_NEED_MEMORY = frozenset(COMMANDS) - {"import", "import-docs"}
CHANGES = ("new", "updated", "unchanged")


def add_commands(commands: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", help="a running proxy (e.g. http://127.0.0.1:1337); "
                                      "default: data_dir, in-process")
    common.add_argument("--api-key", default=os.environ.get(API_KEY_VARIABLE),
                        help=f"a key of the running proxy, when it has keys (default: "
                             f"${API_KEY_VARIABLE})")
    common.add_argument("--data-dir", dest="data_dir", help="memory's folder (without --url)")
    common.add_argument("--config", metavar="FILE", help="TOML settings file")
    common.add_argument("--json", action="store_true", help="print JSON, not text")
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
                                  help="a file into an agent's memory (again: only what is new)")
    imports.add_argument("file")
    imports.add_argument("--format", choices=FORMATS, default=None,
                         help="export: this tool's JSON Lines; jsonl: {role, content, "
                              "timestamp} lines; chatgpt: ChatGPT's conversations.json (or "
                              "its .zip); default: told from the file")
    imports.add_argument("--skip-extraction", action="store_true",
                         help="store chats verbatim without distilling them")
    docs = commands.add_parser(
        "import-docs", parents=[common, agent],
        help="a folder's documents (.md .markdown .txt .html .htm .pdf) into an agent's "
             "knowledge base (again: only what changed)")
    docs.add_argument("folder")
    docs.add_argument("--no-recursive", dest="recursive", action="store_false",
                      help="only the folder's own files, not its subfolders'")
    commands.add_parser("consolidate", parents=[common, some_agent],
                        help="run a consolidation pass now")
    dead = commands.add_parser("dead-letters", parents=[common, some_agent],
                               help="dead-lettered distillations")
    dead.add_argument("action", choices=("retry",))


class Proxy:
    """The proxy's routes, running or in-process: answers as JSON (or text), failures as
    CommandError in words."""

    def __init__(self, http: httpx.Client, where: str, remote: bool) -> None:
        self.http = http
        self.where = where  # "http://..." or "data_dir /path", for messages
        self.remote = remote

    def call(self, method: str, path: str, **options: Any) -> Any:
        return self.answer(self.send(method, path, **options))

    def send(self, method: str, path: str, **options: Any) -> httpx.Response:
        try:
            return self.http.request(method, path, **options)
        except httpx.TimeoutException:
            raise CommandError(f"the proxy at {self.where} did not answer in time") from None
        except httpx.HTTPError as exc:
            if not self.remote:
                raise
            reason = str(exc) or type(exc).__name__
            raise CommandError(
                f"cannot reach the proxy at {self.where} ({reason}): is it running? "
                "`mnemoproxy serve` starts one; without --url the command works on "
                "data_dir directly") from None

    @staticmethod
    def answer(response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise CommandError(f"{response.status_code}: {refusal(response)}")
        kind = response.headers.get("content-type", "")
        return response.json() if kind.startswith("application/json") else response.text


def refusal(response: httpx.Response) -> str:
    """What an error answer says (OpenAI's error shape), or the start of its text."""
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:500] or response.reason_phrase


@contextmanager
def _proxy(args: argparse.Namespace) -> Iterator[Proxy]:
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    if args.url:
        if not args.url.startswith(("http://", "https://")):
            raise CommandError(f"--url {args.url!r} needs its scheme: http://{args.url}",
                               status=2)
        with httpx.Client(base_url=args.url.rstrip("/"), headers=headers, timeout=600) as http:
            yield Proxy(http, args.url, remote=True)
        return
    settings = load_settings(cli={"data_dir": args.data_dir}, config_file=args.config)
    # Memory and the app are loaded here, not by every command (a second of start-up).
    from litestar.testing import TestClient

    from mnemoproxy.memory import Memory
    from mnemoproxy.proxy.app import create_app

    where = f"data_dir {Path(settings.data_dir).resolve()}"
    if args.command in _NEED_MEMORY and not Memory.held_at(settings):
        raise CommandError(
            f"no memory in {where}: nothing was stored there yet. Pass --data-dir DIR for "
            f"another folder, or --url http://{settings.host}:{settings.port} for a running "
            "proxy")
    # The owner of data_dir needs no key: the app is served to this process alone.
    local = load_settings(cli={"data_dir": settings.data_dir, "host": "127.0.0.1",
                               "keys_file": str(Path(settings.data_dir) / "no-keys.json"),
                               "reopen_without_keys": True},
                          config_file=args.config)
    app = create_app(local, announce=False, watch_upstream=False)
    with TestClient(app, base_url="http://127.0.0.1", timeout=600) as http:
        yield Proxy(http, where, remote=False)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "agent_id", None):
        # One path segment whatever the id holds ('/', '?', '#', '%'): never another agent.
        args.agent = quote(args.agent_id, safe="")
    # httpx logs every request at INFO: noise on a command's output.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    out = Output(args.json)
    # What a command reads from disk is read (and refused) before memory is opened.
    prepare = _PREPARE.get(args.command)
    args.inputs = prepare(args) if prepare is not None else None
    with _proxy(args) as proxy:
        return _HANDLERS[args.command](proxy, args, out)


# -- looking ---------------------------------------------------------------------------------


def _agents(proxy: Proxy, args: argparse.Namespace, out: Output) -> int:
    answer = proxy.call("GET", "/agents")
    if out.as_json:
        out.json(answer)
    elif not answer["agents"]:
        out.say(f"No agent has memory yet ({proxy.where}).")
    else:
        out.table(("agent", "facts", "episodes", "turns", "last active"),
                  ((a["id"], str(a["facts"]), str(a["episodes"]), str(a["turns"]),
                    ago(a["last_active"])) for a in answer["agents"]),
                  numeric=("facts", "episodes", "turns"))
    return 0


def _show(proxy: Proxy, args: argparse.Namespace, out: Output) -> int:
    agent = proxy.call("GET", f"/agents/{args.agent}")
    facts = proxy.call("GET", f"/agents/{args.agent}/facts")["facts"]
    if out.as_json:
        out.json({**agent, "facts": facts})
        return 0
    out.say(f"{agent['id']}: {counts(agent, ('fact', 'episode', 'turn'))}; last active "
            f"{ago(agent['last_active'])}")
    for line in agent["identity"]:
        out.say(f"  · {line}")
    if facts:
        out.table(("id", "kind", "fact", "salience", "kept"),
                  ((str(f["id"]), f["kind"], one_line(f["content"]), score(f["salience"]),
                    "kept" if f["pinned"] else "") for f in facts),
                  numeric=("id", "salience"))
    return 0


def _search(proxy: Proxy, args: argparse.Namespace, out: Output) -> int:
    body: dict[str, Any] = {"agent_id": args.agent_id, "query": args.query, "top_k": args.top_k}
    if args.scope:
        body["scope"] = args.scope
    answer = proxy.call("POST", "/memory/search", json=body)
    if out.as_json:
        out.json(answer)
    elif not answer["results"]:
        out.say(f"Nothing in {args.agent_id}'s memory matches {args.query!r}.")
    else:
        out.table(("kind", "score", "when", "text"),
                  ((r["kind"], score(r["score"]), ago(r["at"]), one_line(r["text"], 300))
                   for r in answer["results"]),
                  numeric=("score",))
    return 0


def _export(proxy: Proxy, args: argparse.Namespace, out: Output) -> int:
    text = proxy.call("GET", f"/agents/{args.agent}/export")
    if not args.output:
        sys.stdout.write(text)
        return 0
    Path(args.output).write_text(text, encoding="utf-8")
    records = sum(1 for line in text.splitlines() if line.strip())
    out.result({"agent_id": args.agent_id, "records": records, "file": args.output},
               f"Wrote {count(records, 'record')} of {args.agent_id}'s memory to "
               f"{args.output}.")
    return 0


# -- changing ------------------------------------------------------------------------------


def _forget(proxy: Proxy, args: argparse.Namespace, out: Output) -> int:
    if not args.yes:
        if not sys.stdin.isatty():
            raise CommandError(f"forget asks before it deletes, and nobody is there to "
                               f"answer: pass --yes to forget {args.agent_id!r}", status=2)
        try:
            reply = input(f"Forget agent {args.agent_id!r} completely, with no undo? [y/N] ")
        except EOFError:
            reply = ""
        if reply.strip().lower() not in ("y", "yes"):
            out.note("Nothing was forgotten.")
            return 1
    answer = proxy.call("DELETE", f"/agents/{args.agent}")
    gone = counts(answer["forgotten"], ("session", "message", "fact", "episode"))
    out.result(answer, f"Forgot agent {args.agent_id}: {gone}.")
    return 0


def _consolidate(proxy: Proxy, args: argparse.Namespace, out: Output) -> int:
    report = proxy.call("POST", "/memory/consolidate", json=_one_agent_or_all(args))
    out.result(report, f"Consolidated {count(report['agents'], 'agent')} in "
                       f"{report['seconds']:.1f} s: {count(report['facts_evicted'], 'fact')} "
                       f"evicted, {count(report['facts_promoted'], 'fact')} promoted, "
                       f"{count(report['episodes_merged'], 'episode')} merged, "
                       f"{count(report['episodes_pruned'], 'episode')} pruned.")
    return 0


def _dead_letters(proxy: Proxy, args: argparse.Namespace, out: Output) -> int:
    answer = proxy.call("POST", "/memory/dead-letters/retry", json=_one_agent_or_all(args))
    out.result(answer, f"Queued {count(answer['sessions'], 'session')} "
                       f"({count(answer['turns'], 'turn')}) to be distilled again.")
    return 0


def _one_agent_or_all(args: argparse.Namespace) -> dict[str, str]:
    return {"agent_id": args.agent_id} if args.agent_id else {}


# -- importing -----------------------------------------------------------------------------


def _read_import(args: argparse.Namespace) -> tuple[str, str, list[ImportedConversation]]:
    """The file to import: its format, its text, and its conversations (none for an
    export, which the proxy reads itself)."""
    path = Path(args.file)
    text = read_import(path)
    kind = chosen_format(text, args.format, str(path))
    return kind, text, [] if kind == "export" else _conversations(text, kind, path)


def _import(proxy: Proxy, args: argparse.Namespace, out: Output) -> int:
    path = Path(args.file)
    kind, text, conversations = args.inputs
    if kind == "export":
        answer = proxy.call("POST", f"/agents/{args.agent}/import", content=text.encode(),
                            headers={"Content-Type": "application/x-ndjson"})
        added = counts(answer["added"], ("session", "message", "fact", "episode", "document",
                                         "procedure"))
        out.result(answer, f"Imported {path} into {args.agent_id}: {added} added (what it "
                           "held already is not counted).")
        return 0
    tally = dict.fromkeys((*CHANGES, "turns_ingested", "turns_skipped"), 0)
    with out.progress() as progress:
        task = progress.add_task(f"importing into {args.agent_id}", total=len(conversations))
        for conversation in conversations:
            body: dict[str, Any] = {
                "agent_id": args.agent_id, "conversation_id": conversation.conversation_id,
                "turns": [{"user": u, "assistant": a} for u, a in conversation.turns],
                "skip_extraction": args.skip_extraction, "title": conversation.title[:300]}
            if conversation.date is not None:
                body["session_date"] = conversation.date.isoformat()
            answer = proxy.call("POST", "/memory/ingest", json=body)
            tally[answer["conversation"]] += 1
            tally["turns_ingested"] += answer["turns_ingested"]
            tally["turns_skipped"] += answer["turns_skipped"]
            progress.advance(task)
    out.result({"agent_id": args.agent_id, "format": kind,
                "conversations": len(conversations), **tally},
               f"Imported {count(len(conversations), 'conversation')} into {args.agent_id}: "
               f"{_changes(tally)}; {count(tally['turns_ingested'], 'turn')} added, "
               f"{count(tally['turns_skipped'], 'turn')} held already.")
    return 0


def _conversations(text: str, kind: str, path: Path) -> list[ImportedConversation]:
    if kind == "jsonl":
        return list(jsonl_conversations(text.splitlines()))
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidArgument(f"{path} is not JSON ({exc}): ChatGPT's export is a "
                              "conversations.json") from None
    return list(chatgpt_conversations(data))


def _changes(tally: dict[str, int]) -> str:
    return ", ".join(f"{tally[change]} {change}" for change in CHANGES)


def _document_files(args: argparse.Namespace) -> list[Path]:
    from mnemoproxy.memory import DOCUMENT_EXTENSIONS

    folder = Path(args.folder)
    if not folder.is_dir():
        raise CommandError(f"{folder} is not a folder: import-docs reads the documents of a "
                           "folder (import reads one chat file)")
    found = folder.rglob("*") if args.recursive else folder.glob("*")
    return sorted(p for p in found if p.is_file() and p.suffix.lower() in DOCUMENT_EXTENSIONS)


def _import_docs(proxy: Proxy, args: argparse.Namespace, out: Output) -> int:
    """Each document file under the folder, uploaded to POST /agents/{id}/documents with a
    progress bar; a file the proxy refuses is reported and the rest go on."""
    folder = Path(args.folder)
    files: list[Path] = args.inputs
    tally = dict.fromkeys((*CHANGES, "chunks"), 0)
    failed: list[dict[str, str]] = []
    with out.progress() as progress:
        task = progress.add_task(f"importing into {args.agent_id}", total=len(files))
        for path in files:
            name = str(path.relative_to(folder))
            response = proxy.send("POST", f"/agents/{args.agent}/documents",
                                  files={"file": (name, path.read_bytes())})
            if response.status_code in (200, 201):
                answer = response.json()
                tally[answer["status"]] += 1
                tally["chunks"] += answer["document"]["chunks"]
            elif response.status_code >= 500 or response.status_code in (401, 403, 503):
                raise CommandError(f"{response.status_code}: {refusal(response)}")
            else:
                failed.append({"file": name, "error": refusal(response)})
                out.note(f"{name}: {refusal(response)}")
            progress.advance(task)
    stored = sum(tally[change] for change in CHANGES)
    out.result({"agent_id": args.agent_id, "documents": stored, **tally, "failed": failed},
               f"Imported {count(stored, 'document')} into {args.agent_id}: "
               f"{_changes(tally)} ({count(tally['chunks'], 'chunk')})"
               + (f"; {count(len(failed), 'file')} refused." if failed else "."))
    return 1 if failed else 0


_PREPARE: dict[str, Callable[[argparse.Namespace], Any]] = {
    "import": _read_import, "import-docs": _document_files,
}
_HANDLERS: dict[str, Callable[[Proxy, argparse.Namespace, Output], int]] = {
    "agents": _agents, "show": _show, "search": _search, "export": _export,
    "forget": _forget, "consolidate": _consolidate, "dead-letters": _dead_letters,
    "import": _import, "import-docs": _import_docs,
}
