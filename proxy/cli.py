"""`mnemoproxy serve`: settings from every source, then the app on uvicorn + uvloop."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from mnemoproxy.config.settings import SETTINGS_TABLE, Settings, describe_range, load_settings
from mnemoproxy.errors import SettingError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mnemoproxy", description="OpenAI-compatible memory proxy."
    )
    commands = parser.add_subparsers(dest="command", required=True)
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
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    cli: dict[str, Any] = {f.name: getattr(args, f.name) for f in SETTINGS_TABLE}
    return load_settings(cli=cli, config_file=args.config)


def serve(settings: Settings) -> None:
    import uvicorn

    from mnemoproxy.proxy.app import create_app

    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # httpx logs every request at INFO: a measurable cost per relayed request.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    app = create_app(settings)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        log_level=settings.log_level,
        access_log=False,
        timeout_graceful_shutdown=15,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = settings_from_args(args)
    except SettingError as exc:
        print(f"mnemoproxy: {exc.message}", file=sys.stderr)
        return 2
    if args.command == "serve":
        serve(settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
