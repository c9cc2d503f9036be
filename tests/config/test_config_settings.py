"""The settings table: sources and their order, validation, and docs/settings.md staying in step."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from mnemoproxy.config.settings import SETTINGS_TABLE, Settings, load_settings
from mnemoproxy.errors import SettingError
from tests.support.blackbox import running_proxy

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_match_design():
    s = Settings()
    assert (s.host, s.port) == ("127.0.0.1", 1337)
    assert s.memory_budget_tokens == 800
    assert s.relevance_gate_mode == "heuristic"
    assert s.injection == "user_prefix"
    assert s.summary_debounce_seconds == 60


def test_sources_later_wins(tmp_path):
    config = tmp_path / "m.toml"
    config.write_text('port = 2000\nmemory_budget_tokens = 900\ninjection = "system"\n')
    env = {"MNEMO_PORT": "3000", "MNEMO_ENABLED": "false"}
    s = load_settings(cli={"port": "4000"}, config_file=config, environ=env)
    assert s.port == 4000  # CLI beats env beats file
    assert s.memory_budget_tokens == 900  # file beats default
    assert s.enabled is False  # env
    assert s.injection == "system"
    s = load_settings(config_file=config, environ=env)
    assert s.port == 3000


def test_default_file_is_read_from_working_directory(tmp_path, monkeypatch):
    (tmp_path / "mnemoproxy.toml").write_text("port = 2222\n")
    monkeypatch.chdir(tmp_path)
    assert load_settings(environ={}).port == 2222
    assert load_settings(environ={}, read_default_file=False).port == 1337


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ({"cli": {"memory_budget_tokens": "50"}}, "memory_budget_tokens"),
        ({"environ": {"MNEMO_PORT": "70000"}}, "port"),
        ({"environ": {"MNEMO_PORT": "abc"}}, "port"),
        ({"cli": {"injection": "sideways"}}, "injection"),
        ({"cli": {"relevance_gate_mode": "always"}}, "relevance_gate_mode"),
        ({"environ": {"MNEMO_ENABLED": "perhaps"}}, "enabled"),
        ({"cli": {"summary_debounce_seconds": "0"}}, "summary_debounce_seconds"),
    ],
)
def test_invalid_values_name_the_setting_and_range(source, name):
    source.setdefault("environ", {})
    with pytest.raises(SettingError) as info:
        load_settings(read_default_file=False, **source)
    assert name in info.value.message
    assert info.value.param == name


def test_settings_that_need_each_other():
    with pytest.raises(SettingError, match="core_model"):
        load_settings(cli={"relevance_gate_mode": "llm"}, environ={}, read_default_file=False)
    with pytest.raises(SettingError, match="embedding_model"):
        load_settings(cli={"embedding_backend": "openai"}, environ={}, read_default_file=False)
    s = load_settings(
        cli={"relevance_gate_mode": "llm", "core_model": "m"}, environ={}, read_default_file=False
    )
    assert s.relevance_gate_mode == "llm"
    with pytest.raises(SettingError, match="postgresql://") as info:
        load_settings(cli={"store_url": "mysql://u@h/d"}, environ={}, read_default_file=False)
    assert info.value.param == "store_url"
    with pytest.raises(SettingError, match="server's storage"):
        load_settings(cli={"store_url": "postgresql://u@h/d", "encryption_key_file": "k"},
                      environ={}, read_default_file=False)


def test_unknown_setting_in_file_is_refused(tmp_path):
    config = tmp_path / "m.toml"
    config.write_text("prot = 1\n")
    with pytest.raises(SettingError, match="prot"):
        load_settings(config_file=config, environ={})


def test_missing_config_file_is_refused(tmp_path):
    with pytest.raises(SettingError, match="does not exist"):
        load_settings(config_file=tmp_path / "absent.toml", environ={})


def test_invalid_setting_stops_startup_with_message():
    result = subprocess.run(
        [sys.executable, "-m", "mnemoproxy.proxy.cli.main", "serve",
         "--memory-budget-tokens", "99999"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert "memory_budget_tokens" in result.stderr
    assert "100 - 4000" in result.stderr


def test_every_setting_is_documented_in_docs():
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", page, flags=re.MULTILINE))
    missing = {f.name for f in SETTINGS_TABLE} - documented
    assert not missing, f"settings missing from docs/settings.md's table: {sorted(missing)}"


def test_log_level_decides_what_the_server_logs(tmp_path):
    body = {"agent_id": "a", "conversation_id": "c",
            "turns": [{"user": "I live in Porto.", "assistant": "Nice."}]}
    for level in ("warning", "info"):
        data_dir = tmp_path / level
        data_dir.mkdir()
        with running_proxy("http://127.0.0.1:9/v1", data_dir, {"log_level": level}) as url:
            assert httpx.post(url + "/memory/ingest", json=body, timeout=30).status_code == 200
        logged = "ingested 1 of 1 turns" in (data_dir / "proxy.log").read_text()
        assert logged == (level == "info"), level
