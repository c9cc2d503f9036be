"""What the proxy says when it starts: one block that tells the truth about where it
forwards, where memory lives, whether keys guard it and where the inspector is, then every
warning found. Logged once per start (by the one process that serves, or by `serve`'s
parent when several workers do), at WARNING when there is something to fix.

Warnings come from STARTUP_CHECKS, each a function of the settings and the keys: a part of
the proxy with something to warn about at start-up adds its check there."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from importlib.metadata import version
from pathlib import Path

from mnemoproxy.config.settings import Settings, unknown_environment
from mnemoproxy.config.urls import without_credentials
from mnemoproxy.proxy.edge.access import is_closed, key_notes
from mnemoproxy.proxy.edge.keys import KeyFile
from mnemoproxy.proxy.relay.probe import Reachability

log = logging.getLogger("mnemoproxy.startup")

StartupCheck = Callable[[Settings, KeyFile], Iterable[str]]


def environment_typos(settings: Settings, keys: KeyFile) -> Iterator[str]:
    """MNEMO_ variables that name no setting (settings.py refuses unknown TOML keys; a
    variable cannot be refused, since the environment holds what other tools set)."""
    for name, meant in unknown_environment():
        hint = f"did you mean {meant}?" if meant else "docs/settings.md lists the settings"
        yield f"{name} is not a setting and is ignored: {hint}"


# Each check says, in words, what is wrong with the settings and keys the proxy starts with:
# unknown variables, and the keys' (a closed proxy, keys that only relay, keys without an
# upstream_api_key; proxy/edge/access.py).
STARTUP_CHECKS: list[StartupCheck] = [environment_typos, key_notes]


def startup_report(settings: Settings, keys: KeyFile, upstream: Reachability) -> str:
    """The block, its warnings last."""
    served = f"http://{settings.host}:{settings.port}"
    data_dir = Path(settings.data_dir).resolve()
    lines = [f"mnemoproxy {version('mnemoproxy')} serving {served}",
             _row("upstream", f"{without_credentials(settings.upstream_url)} "
                              f"({_answered(upstream)})"),
             _row("data dir", str(data_dir)),
             _row("store", _store(settings, data_dir)),
             _row("memory", _memory(settings)),
             _row("keys", _keys(settings, keys)),
             _row("inspector", f"{served}/ui")]
    warnings = [w for check in STARTUP_CHECKS for w in check(settings, keys)]
    if upstream.reachable is False:
        warnings.append(f"the upstream cannot be reached ({upstream.error}): chats fail until "
                        "it can; /health shows when it is back")
    lines.append(_row("warnings", str(len(warnings)) if warnings else "none"))
    lines += [f"  ! {warning}" for warning in warnings]
    return "\n".join(lines)


def announce(settings: Settings, keys: KeyFile, upstream: Reachability) -> None:
    report = startup_report(settings, keys, upstream)
    log.log(logging.WARNING if "\n  ! " in report else logging.INFO, "%s", report)


def _row(label: str, value: str) -> str:
    return f"  {label:<10} {value}"


def _answered(upstream: Reachability) -> str:
    if upstream.reachable is None:
        return "not looked at yet"
    return "reachable" if upstream.reachable else "not reachable"


def _store(settings: Settings, data_dir: Path) -> str:
    if settings.store_url:
        return f"PostgreSQL, {without_credentials(settings.store_url)}"
    encrypted = ", encrypted" if settings.encryption_key_file else ""
    return f"SQLite, {data_dir / 'memory.db'}{encrypted}"


def _memory(settings: Settings) -> str:
    if not settings.enabled:
        return "off (enabled = false): every request is relayed untouched"
    distiller = (f"distilled by {settings.core_model}" if settings.core_model
                 else "distilled by rules (no core_model)")
    return (f"on: embeddings {settings.embedding_backend}, gate "
            f"{settings.relevance_gate_mode}, {distiller}; chats name their agent in "
            "X-Agent-Id")


def _keys(settings: Settings, keys: KeyFile) -> str:
    known = keys.all
    active = len(keys.active)
    if is_closed(settings, keys):
        return (f"closed: no active key in {keys.path}, and keys existed: every request but "
                "/health is refused (see the warning)")
    if not known:
        return "off: no keys file, loopback clients only; `mnemoproxy keys add` makes one"
    return (f"on: {active} active, {len(known) - active} revoked, in {keys.path}")
