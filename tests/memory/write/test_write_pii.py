"""Personal data as typed placeholders (redact_pii): what is caught, and what ordinary
numbers are left alone."""

from __future__ import annotations

import json

import httpx
import pytest

from mnemoproxy.memory.write.pii import redact_pii
from tests.support.memory_client import memory_settings, sdk
from tests.support.servers.proxy_server import ProxyServer
from tests.support.servers.raw_store import stored_bytes


@pytest.mark.parametrize("text,expected", [
    ("Mail dana.w@example.co.uk today", "Mail [email] today"),
    ("Call +44 20 7946 0958.", "Call [phone]."),
    ("call (555) 123-4567 or 555-123-4567.", "call [phone] or [phone]."),
    ("call 555 123 4567 today", "call [phone] today"),
    ("SSN 123 45 6789.", "SSN [national_id]."),
    ("Tel 0612 345 678, ask for Ana", "Tel [phone], ask for Ana"),
    ("My card is 4111 1111 1111 1111, exp 12/27.", "My card is [card], exp 12/27."),
    ("IBAN DE89 3704 0044 0532 0130 00 please", "IBAN [iban] please"),
    ("SSN 123-45-6789.", "SSN [national_id]."),
    ("NI number AB 12 34 56 C.", "NI number [national_id]."),
    ("router at 192.168.1.20, server 2001:db8::8a2e:370:7334.", "router at [ip], server [ip]."),
    ("Card: 4111-1111-1111-1111.", "Card: [card]."),
])
def test_personal_data_becomes_typed_placeholders(text, expected):
    assert redact_pii(text) == expected


@pytest.mark.parametrize("text", [
    "On 2024-05-08 at 10:30 I paid $1,250.00 for order 123456789.",
    "Card 4111-1111-1111-1112 fails its Luhn check",
    "The ratio was 3:2:1 in 1999, room 4417, 12/27/2024.",
    "I ran 5 km in 00:25:13 and weigh 72.5 kg",
    "DE89 is a postcode prefix, not an IBAN",
])
def test_ordinary_numbers_are_left_alone(text):
    assert redact_pii(text) == text


def test_with_redact_pii_nothing_personal_is_stored(fake_upstream, tmp_path):
    with ProxyServer(memory_settings(fake_upstream, tmp_path, redact_pii=True)) as server:
        client = sdk(server, "dana", "s1")
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": (
            "Reach me at dana@example.com or +1 415 555 0132; my card 4111 1111 1111 1111.")}])
    stored = stored_bytes(tmp_path / "data")
    for secret in (b"dana@example.com", b"555 0132", b"4111 1111"):
        assert secret not in stored
    assert b"[email]" in stored and b"[phone]" in stored and b"[card]" in stored


def test_every_way_in_is_scrubbed(fake_upstream, tmp_path):
    with ProxyServer(memory_settings(fake_upstream, tmp_path, redact_pii=True)) as server:
        added = httpx.post(server.url + "/agents/dana/facts", json={
            "content": "Email dana@example.com, key sk-abcdefghijklmnop1234"}).json()
        assert "dana@example.com" not in added["content"] and "sk-abc" not in added["content"]
        edited = httpx.patch(f"{server.url}/agents/dana/facts/{added['id']}", json={
            "content": "Call +1 415 555 0132"}).json()
        assert "555 0132" not in edited["content"]
        record = {"type": "session", "key": "s", "started_at": 1.7e9, "messages": [
            {"turn_index": 0, "role": "user", "content": "I am at bo@example.org", "at": 1.7e9}]}
        httpx.post(server.url + "/agents/dana/import", content=(json.dumps(record) + "\n").encode(),
                   headers={"Content-Type": "application/x-ndjson"})
    stored = stored_bytes(tmp_path / "data")
    for secret in (b"dana@example.com", b"sk-abcdefghijklmnop1234", b"555 0132", b"bo@example"):
        assert secret not in stored
