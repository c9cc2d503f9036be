"""The pass-through proxy, driven by the real openai SDK over loopback."""

from __future__ import annotations

import json
import socket
import time

import httpx
import openai
import pytest

from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.proxy_server import ProxyServer, make_settings


def client_for(base_url: str, **kwargs) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="sk-client", max_retries=0, **kwargs)


def test_non_streaming_answer_matches_direct(proxy: ProxyServer, fake_upstream: FakeUpstream):
    messages = [{"role": "user", "content": "hello there"}]
    via_proxy = client_for(proxy.base_url).chat.completions.create(
        model="fake-model", messages=messages
    )
    direct = client_for(fake_upstream.base_url).chat.completions.create(
        model="fake-model", messages=messages
    )
    assert via_proxy.choices[0].message.content == "echo: hello there"
    assert via_proxy.choices[0].message.content == direct.choices[0].message.content
    assert via_proxy.model == direct.model


def test_body_and_auth_forwarded_untouched(proxy: ProxyServer, fake_upstream: FakeUpstream):
    body = {
        "model": "fake-model",
        "messages": [
            {"role": "system", "content": "be brief"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ],
            },
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "tool_choice": "auto",
        "response_format": {"type": "json_object"},
        "some_future_field": {"nested": [1, 2, 3]},
    }
    raw = json.dumps(body).encode()
    response = httpx.post(
        proxy.base_url + "/chat/completions",
        content=raw,
        headers={"authorization": "Bearer sk-client", "content-type": "application/json"},
    )
    assert response.status_code == 200
    seen = fake_upstream.requests[-1]
    assert seen.body == raw  # byte for byte when no memory is involved
    assert seen.headers["authorization"] == "Bearer sk-client"


def test_configured_api_key_replaces_client_key(fake_upstream: FakeUpstream, tmp_path):
    settings = make_settings(
        upstream_url=fake_upstream.base_url, upstream_api_key="sk-server", enabled=False
    )
    with ProxyServer(settings) as server:
        client_for(server.base_url).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    assert fake_upstream.requests[-1].headers["authorization"] == "Bearer sk-server"


def test_streaming_first_chunk_arrives_before_upstream_finishes(
    proxy: ProxyServer, fake_upstream: FakeUpstream
):
    fake_upstream.reply(chunks=["one ", "two ", "three ", "four"], chunk_delay=0.3)
    started = time.monotonic()
    stream = client_for(proxy.base_url).chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "count"}], stream=True
    )
    arrivals, pieces = [], []
    for chunk in stream:
        arrivals.append(time.monotonic() - started)
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
    assert "".join(pieces) == "one two three four"
    # The upstream needs >= 0.9 s to finish; the first chunk must not wait for that.
    assert arrivals[0] < 0.5
    assert arrivals[-1] > 0.8


def test_streaming_matches_direct(proxy: ProxyServer, fake_upstream: FakeUpstream):
    def collect(base_url: str) -> str:
        stream = client_for(base_url).chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "stream me please"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    assert collect(proxy.base_url) == collect(fake_upstream.base_url) == "echo: stream me please"
    assert fake_upstream.requests[0].json["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_pass_through(proxy: ProxyServer, fake_upstream: FakeUpstream, stream: bool):
    fake_upstream.tool_call("get_weather", {"city": "Paris"}, stream=stream)
    client = client_for(proxy.base_url)
    kwargs = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "weather in Paris?"}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ],
    }
    if not stream:
        result = client.chat.completions.create(**kwargs)
        call = result.choices[0].message.tool_calls[0]
        assert call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == {"city": "Paris"}
        return
    name, args = "", ""
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        for delta in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            name += delta.function.name or ""
            args += delta.function.arguments or ""
    assert name == "get_weather"
    assert json.loads(args) == {"city": "Paris"}


async def test_async_sdk_streaming_and_not(proxy: ProxyServer):
    client = openai.AsyncOpenAI(base_url=proxy.base_url, api_key="x", max_retries=0)
    result = await client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "async hi"}]
    )
    assert result.choices[0].message.content == "echo: async hi"
    stream = await client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "async stream"}], stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "echo: async stream"
    await client.close()


def test_upstream_error_status_and_body_pass_through(
    proxy: ProxyServer, fake_upstream: FakeUpstream
):
    body = {"error": {"message": "slow down", "type": "rate_limit", "param": None, "code": "rl"}}
    fake_upstream.error(429, body)
    response = httpx.post(
        proxy.base_url + "/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
    )
    assert response.status_code == 429
    assert response.json() == body


def test_models_and_other_routes_relayed(proxy: ProxyServer, fake_upstream: FakeUpstream):
    models = client_for(proxy.base_url).models.list()
    assert [m.id for m in models.data] == list(FakeUpstream.models)

    response = httpx.put(
        proxy.base_url + "/files/abc?purpose=test&x=1",
        content=b"raw-bytes",
        headers={"x-custom": "kept", "x-agent-id": "not-forwarded"},
    )
    echoed = response.json()
    assert echoed["method"] == "PUT"
    assert echoed["path"] == "/v1/files/abc"
    assert echoed["query"] == "purpose=test&x=1"
    assert echoed["body"] == "raw-bytes"
    assert echoed["headers"]["x-custom"] == "kept"
    assert "x-agent-id" not in echoed["headers"]

    embeddings = client_for(proxy.base_url).embeddings.create(model="e", input=["a", "b"])
    assert len(embeddings.data) == 2


def test_a_relayed_request_reaches_the_upstream_as_the_client_wrote_it(
    proxy: ProxyServer, fake_upstream: FakeUpstream
):
    """No header is made up on the way (encoding, agent, type) and the query is not
    re-quoted."""
    with socket.create_connection(("127.0.0.1", proxy.port)) as raw:
        raw.sendall(b"POST /v1/files/a%2Fb?q=%41+b&empty=&x=%7e HTTP/1.1\r\n"
                    b"Host: 127.0.0.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    seen = fake_upstream.requests[-1]
    assert seen.path == "/v1/files/a%2Fb" and seen.query == "q=%41+b&empty=&x=%7e"
    assert seen.body == b"abc"
    assert not {"accept-encoding", "user-agent", "content-type", "cookie"} & set(seen.headers)


def test_other_routes_stream(proxy: ProxyServer):
    with httpx.stream("GET", proxy.base_url + "/anything/stream-echo") as response:
        lines = [line for line in response.iter_lines() if line]
    assert response.headers["content-type"].startswith("text/event-stream")
    assert len(lines) >= 2


def test_drop_mid_stream_ends_cleanly_and_proxy_stays_healthy(
    proxy: ProxyServer, fake_upstream: FakeUpstream
):
    fake_upstream.drop_mid_stream(after_chunks=2)
    with httpx.stream(
        "POST",
        proxy.base_url + "/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True},
    ) as response:
        events = [line for line in response.iter_lines() if line.startswith("data:")]
    assert response.status_code == 200
    last = json.loads(events[-1][len("data:") :])
    assert last["error"]["code"] == "upstream_stream_broken"
    assert httpx.get(proxy.url + "/health").json()["status"] == "ok"
    # and the SDK sees an error rather than a silent truncation
    fake_upstream.drop_mid_stream(after_chunks=1)
    with pytest.raises(openai.APIError):
        for _ in client_for(proxy.base_url).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        ):
            pass


def test_health(proxy: ProxyServer):
    response = httpx.get(proxy.url + "/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_head_and_unknown_methods_on_relayed_routes(proxy: ProxyServer):
    # The fake answers HEAD with the length its echo of the request would have.
    head = httpx.head(proxy.base_url + "/models")
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) > 0  # the upstream's, not the empty body's
    refused = httpx.request("TRACE", proxy.base_url + "/models")
    assert refused.status_code == 405 and refused.json()["error"]["type"]
