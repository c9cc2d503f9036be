"""The inspector's sign-in session: a token keyed by a secret of the server's own (not by
anything in keys.json), that expires, that sign-out ends for good, and whose cookie is
Secure when the inspector is served over TLS."""

from __future__ import annotations

import hashlib
import hmac
import time
from pathlib import Path

import httpx

from mnemoproxy.proxy.edge.keys import KeyFile
from mnemoproxy.proxy.edge.sessions import SECRET_NAME, SESSION_SECONDS, InspectorSessions
from tests.support.memory_client import memory_settings
from tests.support.servers.proxy_server import ProxyServer

COOKIE = "mnemoproxy_key"


def sign_in(url: str, key: str, **headers: str) -> httpx.Response:
    return httpx.post(url + "/ui/login", data={"key": key}, headers={"Origin": url, **headers})


def opens_the_inspector(url: str, token: str) -> bool:
    answer = httpx.get(url + "/ui", cookies={COOKIE: token})
    return answer.status_code == 200


def test_the_session_is_keyed_by_a_secret_of_its_own(fake_upstream, tmp_path):
    keys = KeyFile(tmp_path / "data" / "keys.json")
    admin, secret = keys.add(agents=None, admin=True)
    settings = memory_settings(fake_upstream, tmp_path)
    with ProxyServer(settings) as server:
        signed_in = sign_in(server.url, secret)
        token = signed_in.cookies[COOKIE]
        assert opens_the_inspector(server.url, token)
        # What keys.json holds (the key's hash) no longer makes a session: the token the
        # cookie held before, a MAC keyed with that hash, is refused.
        from_keys_file = hmac.new(admin.hash.encode(), b"mnemoproxy inspector session:"
                                  + admin.id.encode(), hashlib.sha256).hexdigest()
        assert not opens_the_inspector(server.url, f"{admin.id}.{from_keys_file}")
        forged = token[:-4] + ("0000" if not token.endswith("0000") else "1111")
        assert not opens_the_inspector(server.url, forged)
    held = Path(settings.data_dir) / SECRET_NAME
    assert held.stat().st_mode & 0o777 == 0o600
    assert held.read_bytes() not in keys.path.read_bytes()


def test_a_session_expires(fake_upstream, tmp_path):
    keys = KeyFile(tmp_path / "data" / "keys.json")
    admin, secret = keys.add(agents=None, admin=True)
    settings = memory_settings(fake_upstream, tmp_path)
    with ProxyServer(settings) as server:
        cookie = sign_in(server.url, secret).headers["set-cookie"]
        assert f"Max-Age={SESSION_SECONDS}" in cookie
        sessions = InspectorSessions(Path(settings.data_dir))
        issued_long_ago = sessions.issue(admin, now=time.time() - SESSION_SECONDS - 60)
        assert not opens_the_inspector(server.url, issued_long_ago)
        assert opens_the_inspector(server.url, sessions.issue(admin))


def test_sign_out_ends_the_session_for_good(fake_upstream, tmp_path):
    keys = KeyFile(tmp_path / "data" / "keys.json")
    _, secret = keys.add(agents=None, admin=True)
    settings = memory_settings(fake_upstream, tmp_path)
    with ProxyServer(settings) as server:
        token = sign_in(server.url, secret).cookies[COOKIE]
        other = sign_in(server.url, secret).cookies[COOKIE]
        signed_out = httpx.post(server.url + "/ui/logout", cookies={COOKIE: token},
                                headers={"Origin": server.url})
        assert signed_out.status_code == 303
        # A copy of the cookie kept elsewhere opens nothing any more; other sessions stay.
        assert not opens_the_inspector(server.url, token)
        assert opens_the_inspector(server.url, other)
    with ProxyServer(settings) as server:  # revoked across a restart too
        assert not opens_the_inspector(server.url, token)
        assert opens_the_inspector(server.url, other)


def test_the_cookie_is_secure_when_served_over_tls(fake_upstream, tmp_path):
    keys = KeyFile(tmp_path / "data" / "keys.json")
    _, secret = keys.add(agents=None, admin=True)
    with ProxyServer(memory_settings(fake_upstream, tmp_path)) as server:
        plain = sign_in(server.url, secret).headers["set-cookie"]
        assert "secure" not in plain.lower()
        behind_tls = sign_in(server.url, secret,
                             **{"X-Forwarded-Proto": "https"}).headers["set-cookie"]
        assert "Secure" in behind_tls and "HttpOnly" in behind_tls
        assert "samesite=strict" in behind_tls.lower() and "Path=/ui" in behind_tls
