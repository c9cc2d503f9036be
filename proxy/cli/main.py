"""The `mnemoproxy` command: `serve` (settings from every source, then the app on uvicorn +
uvloop), `keys add|list|revoke`, and the memory commands (proxy/cli/memory_commands.py)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemoproxy.config.settings import SETTINGS_TABLE, Settings, describe_range, load_settings
from mnemoproxy.proxy.cli.failures import reported
from mnemoproxy.proxy.cli.memory_commands import COMMANDS, add_commands, run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemoproxy", description="OpenAI-compatible memory proxy."
    )
    commands = parser.add_subparsers(dest="command")
    serve = commands.add_parser("serve", help="serve the proxy (default 127.0.0.1:1337)")
    serve.add_argument("--config", metavar="FILE", help="TOML settings file")
    for f in SETTINGS_TABLE:
        flag = "--" + f.name.replace("_", "-")
        default_text = "***" if f.metadata["secret"] and f.default else repr(f.default)
        serve.add_argument(
            flag,
            dest=f.name,
            default=None,
            metavar=f.name.upper(),
            help=f"{f.metadata['help']} [default {default_text}; {describe_range(f)}]",
        )
    keys = commands.add_parser("keys", help="client and admin keys (stored hashed)")
    _add_key_file_options(keys, default=None)
    actions = keys.add_subparsers(dest="action", required=True)
    # The same options after the action too (`keys add --data-dir D`); SUPPRESS keeps an
    # action's absent option from overwriting one given before it.
    where = argparse.ArgumentParser(add_help=False)
    _add_key_file_options(where, default=argparse.SUPPRESS)
    add = actions.add_parser("add", parents=[where],
                             help="create a key; it is printed once, only its hash kept")
    add.add_argument("--agents", default=None, metavar="A,B",
                     help="agent ids whose memory the key reaches, '*' for every agent "
                          "(default: none, the key relays chats without memory)")
    add.add_argument("--admin", action="store_true",
                     help="may use the memory and agent routes for every agent")
    actions.add_parser("list", parents=[where],
                       help="the keys (ids, agents, admin, created, revoked)")
    revoke = actions.add_parser("revoke", parents=[where], help="revoke a key by its id")
    revoke.add_argument("key_id")
    reset = actions.add_parser(
        "reset", parents=[where],
        help="remove every key, and the record that there were keys: a loopback proxy "
             "serves without keys again")
    reset.add_argument("--yes", action="store_true", help="also when active keys remain")
    evaluate = commands.add_parser(
        "eval", help="measure memory quality through the API (make eval; a source checkout)",
        add_help=False)
    evaluate.add_argument("options", nargs=argparse.REMAINDER,
                          help="the options of tests/benchmarks/quality/eval_memory.py "
                          "(--help for them)")
    mcp = commands.add_parser("mcp", help="memory's MCP tools over stdio, on data_dir")
    mcp.add_argument("--config", metavar="FILE", help="TOML settings file")
    mcp.add_argument("--data-dir", dest="data_dir", default=None, metavar="DIR")
    add_commands(commands)
    return parser


def _add_key_file_options(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("--config", metavar="FILE", default=default, help="TOML settings file")
    parser.add_argument("--keys-file", dest="keys_file", default=default, metavar="FILE")
    parser.add_argument("--data-dir", dest="data_dir", default=default, metavar="DIR")


def keys_command(args: argparse.Namespace) -> int:
    from mnemoproxy.proxy.edge.ids import normalised_id
    from mnemoproxy.proxy.edge.keys import EVERY_AGENT, KeyFile

    settings = load_settings(
        cli={"keys_file": args.keys_file, "data_dir": args.data_dir}, config_file=args.config
    )
    keys = KeyFile.of(settings.keys_file, settings.data_dir)
    if args.action == "add":
        agents = None if args.agents is None else tuple(
            normalised_id(a.strip()) for a in args.agents.split(",") if a.strip())
        if agents and EVERY_AGENT in agents:
            agents = (EVERY_AGENT,)
        key, secret = keys.add(agents=agents, admin=args.admin)
        print(secret)
        reach = ("every route, every agent" if args.admin else
                 "chats relayed without memory (no --agents)" if not agents else
                 "chats and memory routes of every agent" if agents == (EVERY_AGENT,) else
                 f"chats and memory routes of {', '.join(agents)}")
        print(f"{key.id}: {reach}; shown once, clients send it as their api_key (stored "
              f"hashed in {keys.path})", file=sys.stderr)
        if not settings.upstream_api_key:
            print("mnemoproxy: warning: upstream_api_key is empty; with keys, a client's "
                  "Authorization header carries its proxy key and is no longer forwarded, so "
                  "a hosted upstream answers 401: set upstream_api_key (MNEMO_UPSTREAM_API_KEY "
                  "or mnemoproxy.toml) unless the model server needs no key", file=sys.stderr)
    elif args.action == "list":
        for key in keys.all:
            print(json.dumps(key.as_dict()))
    elif args.action == "reset":
        active = len(keys.active)
        if active and not args.yes:
            print(f"mnemoproxy: {keys.path} holds {active} active key(s); `keys reset --yes` "
                  "removes them too", file=sys.stderr)
            return 1
        keys.reset()
        print(f"keys reset: {keys.path} and its marker removed; a loopback proxy on this "
              "data_dir serves without keys again", file=sys.stderr)
    elif keys.revoke(args.key_id) is None:
        print(f"mnemoproxy: no active key {args.key_id!r} in {keys.path}", file=sys.stderr)
        return 1
    return 0


def evaluate_memory(options: Sequence[str]) -> int:
    """`mnemoproxy eval`: the memory evaluation (tests/benchmarks/quality/eval_memory.py),
    which lives with the tests in a source checkout (the package's root is the
    repository's)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "tests" / "benchmarks" / "quality" / "eval_memory.py").is_file():
        print("mnemoproxy: eval needs a source checkout of mnemoproxy (its tests/benchmarks)",
              file=sys.stderr)
        return 2
    sys.path.insert(0, str(root))
    from tests.benchmarks.quality.eval_memory import main as evaluate

    evaluate(list(options))
    return 0


def settings_from_args(args: argparse.Namespace) -> Settings:
    cli: dict[str, Any] = {f.name: getattr(args, f.name) for f in SETTINGS_TABLE}
    return load_settings(cli=cli, config_file=args.config)


def serve(settings: Settings) -> None:
    import uvicorn

    from mnemoproxy.proxy.app import create_app
    from mnemoproxy.proxy.edge.logs import configure_logging

    configure_logging(settings.log_level, settings.log_format)
    options: dict[str, Any] = {
        "loop": "uvloop",
        "http": "httptools",
        "log_level": settings.log_level,
        "log_config": None,  # uvicorn's records go through the handler configured above
        "access_log": False,
        # Clients talk to the proxy directly and nothing reads their address: uvicorn's
        # X-Forwarded-* rewriting (on by default, trusting loopback) would only cost a
        # layer per request and let any local client name another address.
        "proxy_headers": False,
        "timeout_graceful_shutdown": 15,
    }
    if settings.workers > 1:  # several processes on the one port (proxy/cli/workers.py)
        from mnemoproxy.proxy.cli.workers import announce_once, serve_workers

        announce_once(settings)
        serve_workers(settings, **options)
        return
    app = create_app(settings)
    uvicorn.run(app, host=settings.host, port=settings.port, **options)


# Options a user may give before the command word (`mnemoproxy --data-dir D agents`), each
# with whether it takes a value; the command's own parser reads them after the word.
LEADING_OPTIONS = {"--data-dir": True, "--url": True, "--config": True, "--api-key": True,
                   "--json": False}


def command_first(given: Sequence[str]) -> list[str]:
    """The arguments with the options given before the command word moved after it, so
    `--data-dir` and `--url` are accepted in any position."""
    leading: list[str] = []
    at = 0
    while at < len(given):
        name = given[at].split("=", 1)[0]
        if name not in LEADING_OPTIONS:
            break
        takes_value = LEADING_OPTIONS[name] and "=" not in given[at]
        leading += given[at:at + 1 + takes_value]
        at += 1 + takes_value
    if not leading or at >= len(given) or given[at].startswith("-"):
        return list(given)
    return [given[at], *leading, *given[at + 1:]]


def main(argv: Sequence[str] | None = None) -> int:
    given = command_first(sys.argv[1:] if argv is None else argv)
    return reported(lambda: _run(given))


def _run(given: list[str]) -> int:
    if given[:1] == ["eval"]:  # every option after it is the evaluation's own
        return evaluate_memory(given[1:])
    parser = build_parser()
    args = parser.parse_args(given)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "keys":
        return keys_command(args)
    if args.command in COMMANDS:
        return run(args)
    if args.command == "mcp":
        import asyncio

        from mnemoproxy.proxy.mcp.tools import serve_stdio

        asyncio.run(serve_stdio(load_settings(cli={"data_dir": args.data_dir},
                                              config_file=args.config)))
        return 0
    settings = settings_from_args(args)
    serve(settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
