"""Every setting of mnemoproxy, in one table, and how they are loaded.

Sources, later wins: built-in defaults < `mnemoproxy.toml` (or `--config FILE`) <
`MNEMO_<NAME>` environment variables < command-line flags (`--name-with-dashes`).
The table is the `Settings` dataclass: each field carries its default, range and help,
so the CLI, the README check and validation all read the same place.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mnemoproxy.errors import SettingError

ENV_PREFIX = "MNEMO_"
# MNEMO_ variables that are not settings: the command line's key for a running proxy, and
# the test and benchmark tools' paths. Any other is a mistake start-up warns about.
OTHER_ENV_NAMES = frozenset({"MNEMO_API_KEY", "MNEMO_CHROMIUM", "MNEMO_LOCOMO_PATH",
                             "MNEMO_LONGMEMEVAL_PATH", "MNEMO_BENCH_FIGURES_FILE"})
EMBEDDING_BACKENDS = ("wordllama", "minilm", "multilingual", "openai", "hashing")
DEFAULT_CONFIG_FILE = "mnemoproxy.toml"
# Below this a long thread's budget could not hold a system prompt, a summary and a turn.
MIN_CONTEXT_BUDGET_TOKENS = 500


def _setting(
    default: Any,
    help: str,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: tuple[str, ...] | None = None,
    secret: bool = False,
) -> Any:
    return field(
        default=default,
        metadata={"help": help, "low": low, "high": high, "choices": choices, "secret": secret},
    )


@dataclass(frozen=True)
class Settings:
    # The HTTP face
    host: str = _setting("127.0.0.1", "Address the proxy listens on.")
    port: int = _setting(1337, "Port the proxy listens on.", low=1, high=65535)
    workers: int = _setting(
        1,
        "Processes serving the one port (`mnemoproxy serve`). They share data_dir: one of "
        "them (whichever holds data_dir/owner.lock) distils, embeds and consolidates, every "
        "one records turns and reads memory, and a turn recorded by one is found by all.",
        low=1,
        high=64,
    )
    max_body_bytes: int = _setting(
        8_000_000, "Largest request body accepted; larger ones get 413.", low=1024, high=200_000_000
    )
    request_body_timeout_seconds: float = _setting(
        30.0,
        "Longest a client may take to send a request's body; slower ones get 408.",
        low=0.1,
        high=3600,
    )
    keys_file: str = _setting(
        "",
        "Client and admin keys, stored as hashes (written by `mnemoproxy keys add`); empty "
        "means keys.json under data_dir. With no keys the proxy serves loopback only; once "
        "keys have existed it stays closed without an active one.",
    )
    reopen_without_keys: bool = _setting(
        False,
        "Serve loopback clients without a key when no key is active, even though keys "
        "existed once (all revoked, or the keys file gone). False keeps such a proxy closed "
        "until `mnemoproxy keys reset`; a non-loopback host is closed either way.",
    )
    allowed_hosts: str = _setting(
        "",
        "Comma-separated host names the proxy answers to besides loopback names, IP "
        "addresses and `host` (a Host header naming any other is refused: DNS rebinding).",
    )
    allowed_origins: str = _setting(
        "",
        "Comma-separated browser origins (e.g. https://app.example.com) allowed to call the "
        "proxy; requests from any other Origin are refused (no CORS by default).",
    )
    log_level: str = _setting(
        "info", "Logging verbosity.", choices=("debug", "info", "warning", "error")
    )
    log_format: str = _setting(
        "text",
        "How the server writes its log: text (one readable line a record) or json (one JSON "
        "object a line: time, level, logger, message, exc_info), for log collectors; "
        "uvicorn's records included.",
        choices=("text", "json"),
    )
    # The upstream model server
    upstream_url: str = _setting(
        "https://api.openai.com/v1", "Base URL of the OpenAI-compatible model server."
    )
    upstream_api_key: str = _setting(
        "",
        "API key sent upstream; empty passes the client's own Authorization header through.",
        secret=True,
    )
    upstream_connect_timeout: float = _setting(
        10.0, "Seconds to wait for a connection to the upstream.", low=0.1, high=300
    )
    upstream_total_timeout_seconds: float = _setting(
        1800.0,
        "Longest a relayed request may take from sending it to the response's last byte, "
        "streams included.",
        low=1,
        high=86400,
    )
    upstream_read_timeout: float = _setting(
        600.0,
        "Seconds to wait for the upstream between bytes of a response.",
        low=0.1,
        high=3600,
    )
    upstream_max_connections: int = _setting(
        256, "Pooled connections kept to the upstream.", low=1, high=10_000
    )
    # Memory
    enabled: bool = _setting(True, "Read and write memory for requests carrying X-Agent-Id.")
    data_dir: str = _setting(
        "./mnemo-data", "Folder holding the SQLite database and the vector indexes."
    )
    store_url: str = _setting(
        "",
        "Where memory is stored: empty for SQLite in data_dir, or a PostgreSQL URL "
        "(postgresql://user:password@host:5432/database) shared by any number of proxy "
        "processes; data_dir then holds only what each process derives from it (vector "
        "indexes).",
        secret=True,
    )
    encryption_key_file: str = _setting(
        "",
        "A file holding a passphrase (or 64 hex digits) to encrypt memory at rest with "
        "SQLCipher; vector indexes then live in memory only. Empty: no encryption.",
    )
    redact_pii: bool = _setting(
        False,
        "Replace e-mail addresses, phone numbers, payment card numbers, IBANs, national ids "
        "and IP addresses with typed placeholders ([email], [card], ...) before anything is "
        "stored. Off by default: memory is its user's own, and recalling their own number is "
        "often the point; turn it on where memory is shared or audited.",
    )
    core_model: str = _setting(
        "",
        "Model that distils sessions into memory; empty uses the offline rule-based distiller.",
    )
    core_url: str = _setting("", "Base URL for the core model; empty means upstream_url.")
    core_api_key: str = _setting(
        "", "API key for the core model; empty means upstream_api_key.", secret=True
    )
    core_timeout_seconds: float = _setting(
        60.0, "Seconds one distillation call to the core model may take.", low=1, high=600
    )
    core_max_tokens: int = _setting(
        1024,
        "Most tokens the core model may write for one distillation; an answer cut off there "
        "is repaired or asked again shorter.",
        low=64,
        high=32768,
    )
    core_context_tokens: int = _setting(
        4096,
        "The context one core-model call may fill, prompt and answer: a session whose prompt "
        "would not fit is distilled in parts. Set it to the server's context per slot "
        "(llama-server: -c divided by --parallel; Ollama: num_ctx).",
        low=1024,
        high=1_000_000,
    )
    core_temperature: float = _setting(
        0.2,
        "Sampling temperature of core-model calls; a little above 0 keeps small models from "
        "looping on one phrase.",
        low=0,
        high=2,
    )
    core_frequency_penalty: float = _setting(
        0.3,
        "Frequency penalty of core-model calls (OpenAI's parameter): discourages the "
        "repetition small models fall into inside long JSON strings.",
        low=-2,
        high=2,
    )
    core_model_daily_tokens: int = _setting(
        0,
        "Most core-model tokens (prompt and completion, as the server reports them in its "
        "usage) spent per UTC day, counted by this process since it started; past it "
        "distillation uses the rule-based distiller and relevance_gate_mode=llm the "
        "heuristic until the day ends (/health and /metrics say so). 0: no cap.",
        low=0,
        high=1_000_000_000_000,
    )
    core_concurrency: int = _setting(
        1,
        "Distillations sent to the core model at once; more wait their turn in the "
        "background (chat requests never wait behind them).",
        low=1,
        high=64,
    )
    embedding_backend: str = _setting(
        "wordllama",
        "Embedder: wordllama (static, English, fast, offline), minilm (all-MiniLM-L6-v2, "
        "English, offline), multilingual (Universal Sentence Encoder multilingual v3: one "
        "space for 16 languages, offline, ~50x wordllama's CPU per text), openai (an "
        "OpenAI-compatible /v1/embeddings endpoint), hashing (dependency-free word hashing, "
        "the last-resort fallback).",
        choices=EMBEDDING_BACKENDS,
    )
    embedding_model: str = _setting(
        "", "Model name for the openai embedding backend (e.g. text-embedding-3-small)."
    )
    embedding_url: str = _setting(
        "", "Base URL for the openai embedding backend; empty means upstream_url."
    )
    relevance_gate_mode: str = _setting(
        "heuristic",
        "When to inject memory: off (always), heuristic (lexical rules + retrieval probe, "
        "within a quarter of memory_read_deadline_seconds), "
        "llm (the heuristic, and where it is unsure whether to inject, a yes/no call to the "
        "core model within half of memory_read_deadline_seconds).",
        choices=("off", "heuristic", "llm"),
    )
    memory_budget_tokens: int = _setting(
        800, "Most tokens of memory injected into one request.", low=100, high=4000
    )
    memory_read_deadline_seconds: float = _setting(
        2.0,
        "Longest a chat waits for its memory: the read (past it the request goes on "
        "without memory, header X-Memory-Error: deadline) and the turn's write before the "
        "reply completes (past it the write finishes in the background).",
        low=0.05,
        high=30,
    )
    max_backfill_turns: int = _setting(
        100,
        "Most earlier turns of a conversation recorded from one chat request when memory "
        "never saw them (the latest are kept).",
        low=0,
        high=100_000,
    )
    identity_max_facts: int = _setting(
        20, "Most identity facts kept per agent and always injected.", low=0, high=200
    )
    injection: str = _setting(
        "user_prefix",
        "Where the memory block goes: user_prefix (before the latest user message) or "
        "system (a system message).",
        choices=("user_prefix", "system"),
    )
    suspicious_memory: str = _setting(
        "quote",
        "What the memory block does with remembered text that reads like instructions to a "
        "model (override phrases, role markers, chat-template tokens): quote (shown flagged "
        "and quoted, as something once said) or omit (left out).",
        choices=("quote", "omit"),
    )
    memory_tool: bool = _setting(
        False,
        "Offer the model a search_memory tool on chat requests carrying X-Agent-Id (besides "
        "the injected block): when the model calls it, the proxy searches the agent's memory, "
        "hands it the results and asks again (3 searches at most; after them, once more "
        "for an answer), and the client receives only the final answer. False: no tool is "
        "offered and requests go out as before.",
    )
    context_budget_tokens: int = _setting(
        0,
        "Long threads: most tokens (o200k, text of the messages) a chat request carrying "
        "X-Agent-Id (memory enabled) may send upstream before its oldest turns are replaced "
        "by a running summary kept per session (the core model's with core_model, else "
        "extractive); the system prompt and the latest turn stay as sent, and the summary is "
        "reused until the budget is exceeded again, so the compressed prefix stays "
        "byte-stable for prompt caching. 0: long threads are relayed as they are; otherwise "
        "at least 500.",
        low=0,
        high=10_000_000,
    )
    context_summary_tokens: int = _setting(
        1000,
        "Most tokens of a long thread's summary (at most a quarter of context_budget_tokens).",
        low=100,
        high=100_000,
    )
    summary_debounce_seconds: float = _setting(
        60.0, "Quiet seconds after a session's last turn before it is distilled.", low=1, high=3600
    )
    distill_max_attempts: int = _setting(
        5, "Attempts to distil a session before its signals are dead-lettered.", low=1, high=50
    )
    consolidation_interval_hours: float = _setting(
        24.0, "Hours between consolidation passes; 0 turns them off.", low=0, high=8760
    )
    salience_floor: float = _setting(
        0.2, "Facts whose decayed salience falls below this are evicted.", low=0, high=1
    )
    episode_retention_days: int = _setting(
        365, "Episodes older than this are pruned.", low=1, high=36500
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            _validate(f, getattr(self, f.name))
        if self.relevance_gate_mode == "llm" and not self.core_model:
            raise SettingError(
                "setting relevance_gate_mode=llm needs core_model: set core_model to a model "
                "the upstream serves, or use relevance_gate_mode=heuristic",
                param="relevance_gate_mode",
            )
        if self.embedding_backend == "openai" and not self.embedding_model:
            raise SettingError(
                "setting embedding_backend=openai needs embedding_model (for example "
                "text-embedding-3-small), or choose embedding_backend=wordllama",
                param="embedding_model",
            )
        if 0 < self.context_budget_tokens < MIN_CONTEXT_BUDGET_TOKENS:
            raise SettingError(
                f"setting context_budget_tokens ({self.context_budget_tokens}) leaves no room "
                "for a conversation: use 0 (off) or at least "
                f"{MIN_CONTEXT_BUDGET_TOKENS}",
                param="context_budget_tokens",
            )
        if self.store_url and not self.store_url.startswith(("postgresql://", "postgres://")):
            raise SettingError(
                f"setting store_url must be a postgresql:// URL (or empty: SQLite in "
                f"data_dir), not {self.store_url.split(':', 1)[0]!r}", param="store_url")
        if self.store_url and self.encryption_key_file:
            raise SettingError(
                "setting encryption_key_file encrypts the SQLite database in data_dir; with "
                "store_url memory lives in PostgreSQL: encrypt the server's storage instead "
                "and leave encryption_key_file empty", param="encryption_key_file")
        if self.core_max_tokens * 2 > self.core_context_tokens:
            raise SettingError(
                f"setting core_max_tokens ({self.core_max_tokens}) leaves too little of "
                f"core_context_tokens ({self.core_context_tokens}) for the session: keep it "
                "at most half the context",
                param="core_max_tokens",
            )


SETTINGS_TABLE: tuple[dataclasses.Field[Any], ...] = dataclasses.fields(Settings)


def describe_range(f: dataclasses.Field[Any]) -> str:
    meta = f.metadata
    if meta["choices"]:
        return ", ".join(meta["choices"])
    if meta["low"] is not None:
        return f"{_num(meta['low'])} - {_num(meta['high'])}"
    if f.type in ("bool", bool):
        return "true, false"
    return "text"


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _validate(f: dataclasses.Field[Any], value: Any) -> None:
    meta = f.metadata
    if meta["choices"] and value not in meta["choices"]:
        raise SettingError(
            f"setting {f.name}={value!r} is not allowed; choose one of {describe_range(f)}",
            param=f.name,
        )
    if meta["low"] is not None and not (meta["low"] <= value <= meta["high"]):
        raise SettingError(
            f"setting {f.name}={value!r} is out of range; allowed {describe_range(f)}",
            param=f.name,
        )


def _coerce(f: dataclasses.Field[Any], raw: Any, source: str) -> Any:
    """Turn a raw value (text from env/CLI, or a TOML value) into the field's type."""
    kind = f.type if isinstance(f.type, str) else f.type.__name__
    try:
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if kind == "int":
            if isinstance(raw, bool):
                raise ValueError(raw)
            return int(raw)
        if kind == "float":
            if isinstance(raw, bool):
                raise ValueError(raw)
            return float(raw)
        return str(raw)
    except (TypeError, ValueError):
        raise SettingError(
            f"setting {f.name}={raw!r} (from {source}) is not a valid {kind}; "
            f"allowed {describe_range(f)}",
            param=f.name,
        ) from None


def load_settings(
    *,
    cli: Mapping[str, Any] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    read_default_file: bool = True,
) -> Settings:
    """Merge every source into one validated Settings; raise SettingError on a bad value.

    `read_default_file=False` ignores ./mnemoproxy.toml (tests must not read the user's)."""
    environ = os.environ if environ is None else environ
    by_name = {f.name: f for f in SETTINGS_TABLE}
    values: dict[str, Any] = {}

    path = Path(config_file) if config_file else Path(DEFAULT_CONFIG_FILE)
    if config_file and not path.is_file():
        raise SettingError(f"config file {path} does not exist; check the --config path")
    if (config_file or read_default_file) and path.is_file():
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SettingError(f"config file {path} is not valid TOML: {exc}") from exc
        for name, raw in table.items():
            if name not in by_name:
                raise SettingError(
                    f"unknown setting {name!r} in {path}; see the table in docs/settings.md"
                )
            values[name] = _coerce(by_name[name], raw, str(path))

    for name, f in by_name.items():
        env_name = ENV_PREFIX + name.upper()
        if env_name in environ:
            values[name] = _coerce(f, environ[env_name], env_name)

    for name, raw in (cli or {}).items():
        if raw is None:
            continue
        if name not in by_name:
            raise SettingError(f"unknown setting {name!r}")
        values[name] = _coerce(by_name[name], raw, "--" + name.replace("_", "-"))

    return Settings(**values)


def unknown_environment(environ: Mapping[str, str] | None = None) -> list[tuple[str, str | None]]:
    """MNEMO_ variables that name no setting (a typo is silently ignored otherwise), each
    with the setting's variable it most likely meant, if one is close."""
    environ = os.environ if environ is None else environ
    known = [ENV_PREFIX + f.name.upper() for f in SETTINGS_TABLE]
    unknown = sorted(name for name in environ if name.startswith(ENV_PREFIX)
                     and name not in known and name not in OTHER_ENV_NAMES)
    return [(name, _meant(name, known)) for name in unknown]


def _meant(name: str, known: list[str]) -> str | None:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    if close:
        return close[0]
    # A part of a longer name (MNEMO_DEBOUNCE): the one setting that holds it.
    holding = [k for k in known if name.removeprefix(ENV_PREFIX) in k]
    return holding[0] if len(holding) == 1 else None
