"""Bad input and upstream faults: OpenAI-shaped 4xx/5xx errors, never a crash."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.fake_upstream import FakeUpstream
from tests.proxy_server import ProxyServer, free_port, make_settings


def assert_openai_error(response: httpx.Response, status: int, *, param: str | None = None):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"]
    if param is not None:
        assert error["param"] == param
    return error


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b"{not json", None),
        (b"[1, 2]", None),
        (b'"text"', None),
        (b"{}", "messages"),
        (b'{"messages": "hi"}', "messages"),
        (b'{"messages": []}', "messages"),
        (b'{"messages": [42]}', "messages[0]"),
        (b'{"messages": [{"content": "no role"}]}', "messages[0].role"),
        (b'{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}', "stream"),
        (b"\xff\xfe\x00garbage", None),
    ],
)
def test_bad_chat_bodies_get_400(proxy: ProxyServer, fake_upstream: FakeUpstream, body, param):
    response = httpx.post(
        proxy.base_url + "/chat/completions",
        content=body,
        headers={"content-type": "application/json", "x-agent-id": "a1"},
    )
    error = assert_openai_error(response, 400, param=param)
    assert error["type"] == "invalid_request_error"
    assert fake_upstream.requests == []  # nothing bad is forwarded


def test_body_over_limit_gets_413(fake_upstream: FakeUpstream):
    settings = make_settings(upstream_url=fake_upstream.base_url, max_body_bytes=2048)
    with ProxyServer(settings) as server:
        big = "x" * 5000
        response = httpx.post(
            server.base_url + "/chat/completions",
            json={"messages": [{"role": "user", "content": big}]},
        )
        error = assert_openai_error(response, 413)
        assert "max_body_bytes" in error["message"]
        assert httpx.get(server.url + "/health").status_code == 200


def test_unreachable_upstream_gets_502(tmp_path):
    settings = make_settings(upstream_url=f"http://127.0.0.1:{free_port()}/v1", enabled=False)
    with ProxyServer(settings) as server:
        response = httpx.post(
            server.base_url + "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
        )
        error = assert_openai_error(response, 502)
        assert "upstream_url" in error["message"]
        with pytest.raises(openai.InternalServerError):
            openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0).models.list()


def test_stalled_upstream_gets_504(fake_upstream: FakeUpstream):
    settings = make_settings(
        upstream_url=fake_upstream.base_url, upstream_read_timeout=0.5, enabled=False
    )
    with ProxyServer(settings) as server:
        fake_upstream.stall(3)
        response = httpx.post(
            server.base_url + "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
            timeout=10,
        )
        error = assert_openai_error(response, 504)
        assert "upstream_read_timeout" in error["message"]


def test_unknown_route_is_openai_shaped_404(proxy: ProxyServer):
    assert_openai_error(httpx.get(proxy.url + "/nope"), 404)


def test_wrong_method_is_openai_shaped_405(proxy: ProxyServer):
    assert_openai_error(httpx.get(proxy.base_url + "/chat/completions"), 405)


def test_overlong_agent_id_is_a_400(proxy: ProxyServer, fake_upstream: FakeUpstream):
    response = httpx.post(
        proxy.base_url + "/chat/completions",
        json={"messages": [{"role": "user", "content": "x"}]},
        headers={"x-agent-id": "a" * 300},
    )
    assert_openai_error(response, 400, param="X-Agent-Id")
    assert fake_upstream.requests == []
