"""The fake upstream speaks OpenAI's wire format well enough for the real SDK to parse it."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.client import HTTPConnection
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.servers.fake_upstream import FakeUpstream, Reply, embedding_for

USER_TURN = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def fake() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture
def sdk(fake: FakeUpstream) -> openai.OpenAI:
    # No retries: the SDK would otherwise answer a queued 429/500 by asking again.
    return openai.OpenAI(base_url=fake.base_url, api_key="x", max_retries=0)


@pytest.fixture
def http(fake: FakeUpstream) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fake.base_url) as client:
        yield client


def sse_payloads(response: httpx.Response) -> Iterator[str]:
    for line in response.iter_lines():
        if line.startswith("data: "):
            yield line.removeprefix("data: ")


def test_default_reply_echoes_the_last_user_message(fake: FakeUpstream, sdk: openai.OpenAI):
    completion = sdk.chat.completions.create(
        model="some-model",
        messages=[
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "second question"},
        ],
    )
    assert completion.model == "some-model"
    assert completion.choices[0].message.content == "echo: second question"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None and completion.usage.completion_tokens == 3


def test_multimodal_text_parts_are_joined(sdk: openai.OpenAI):
    content = [
        {"type": "text", "text": "look at"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": "this"},
    ]
    completion = sdk.chat.completions.create(
        model="m", messages=[{"role": "user", "content": content}]
    )
    assert completion.choices[0].message.content == "echo: look at this"


def test_stream_follows_the_request_and_reports_usage(sdk: openai.OpenAI):
    chunks = list(
        sdk.chat.completions.create(
            model="m",
            messages=USER_TURN,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    content_chunks = [chunk for chunk in chunks if chunk.choices]
    assert content_chunks[0].choices[0].delta.role == "assistant"
    text = "".join(chunk.choices[0].delta.content or "" for chunk in content_chunks)
    assert text == "echo: hello there"
    assert content_chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 3


def test_queued_behaviours_are_consumed_in_order(fake: FakeUpstream, sdk: openai.OpenAI):
    fake.reply("one").error(500).reply("three", stream=False)
    assert (
        sdk.chat.completions.create(model="m", messages=USER_TURN).choices[0].message.content
        == "one"
    )
    with pytest.raises(openai.InternalServerError):
        sdk.chat.completions.create(model="m", messages=USER_TURN)
    # stream=False overrides a request that asks for a stream
    raw = httpx.post(
        f"{fake.base_url}/chat/completions", json={"messages": USER_TURN, "stream": True}
    )
    assert raw.json()["choices"][0]["message"]["content"] == "three"
    default = sdk.chat.completions.create(model="m", messages=USER_TURN)
    assert default.choices[0].message.content == "echo: hello there"


def test_chunks_are_flushed_as_they_are_sent(fake: FakeUpstream, http: httpx.Client):
    fake.reply(chunks=["a", "b", "c", "d"], chunk_delay=0.1)
    body = {"model": "m", "messages": USER_TURN, "stream": True}
    arrivals: list[tuple[float, str]] = []
    started = time.perf_counter()
    with http.stream("POST", "/chat/completions", json=body) as response:
        for payload in sse_payloads(response):
            arrivals.append((time.perf_counter() - started, payload))
    contents = [
        json.loads(payload)["choices"][0]["delta"].get("content")
        for _, payload in arrivals
        if payload != "[DONE]"
    ]
    assert contents == ["", "a", "b", "c", "d", None]
    first_piece_at, last_event_at = arrivals[1][0], arrivals[-1][0]
    # 6 events, 0.1 s apart: the first piece must arrive long before the stream ends.
    assert last_event_at - first_piece_at >= 0.35
    assert arrivals[-1][1] == "[DONE]"


def test_tool_call_not_streamed_is_parsed_by_the_sdk(fake: FakeUpstream, sdk: openai.OpenAI):
    fake.tool_call("get_weather", {"city": "Paris"})
    choice = sdk.chat.completions.create(model="m", messages=USER_TURN).choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls or []
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}


def test_tool_call_streams_arguments_in_fragments(fake: FakeUpstream, sdk: openai.OpenAI):
    fake.tool_call("search", '{"query": "memory proxies", "top_k": 5}')
    chunks = list(sdk.chat.completions.create(model="m", messages=USER_TURN, stream=True))
    deltas = [chunk.choices[0].delta for chunk in chunks]
    opening = (deltas[0].tool_calls or [])[0]
    assert opening.id and opening.function and opening.function.name == "search"
    assert opening.function.arguments == ""
    fragments = [(delta.tool_calls or [])[0].function.arguments for delta in deltas[1:-1]]
    assert len(fragments) > 2
    assert "".join(fragments) == '{"query": "memory proxies", "top_k": 5}'
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_error_bodies(fake: FakeUpstream, sdk: openai.OpenAI, http: httpx.Client):
    fake.error(429).error(503, {"detail": "custom"}).error(502, "<html>bad gateway</html>")
    with pytest.raises(openai.RateLimitError) as caught:
        sdk.chat.completions.create(model="m", messages=USER_TURN)
    assert caught.value.body == {
        "message": "fake upstream error 429",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    custom = http.post("/chat/completions", json={"messages": USER_TURN})
    assert (custom.status_code, custom.json()) == (503, {"detail": "custom"})
    text = http.post("/chat/completions", json={"messages": USER_TURN})
    assert (text.status_code, text.text) == (502, "<html>bad gateway</html>")


def test_json_reply_is_sent_verbatim(fake: FakeUpstream, http: httpx.Client):
    fake.json({"choices": [{"message": {"content": '{"episode": {}}'}}]}, status=201)
    response = http.post("/chat/completions", json={"messages": USER_TURN})
    assert response.status_code == 201
    assert response.json()["choices"][0]["message"]["content"] == '{"episode": {}}'


def test_stall_times_out_the_client(fake: FakeUpstream, sdk: openai.OpenAI):
    fake.stall(5)
    started = time.perf_counter()
    with pytest.raises(openai.APITimeoutError):
        sdk.with_options(timeout=0.3).chat.completions.create(model="m", messages=USER_TURN)
    assert time.perf_counter() - started < 2
    assert fake.last_json["messages"] == USER_TURN  # recorded although never answered


def test_a_stall_does_not_block_other_requests(fake: FakeUpstream, http: httpx.Client):
    fake.stall(0.8)
    stalled: list[httpx.Response] = []
    waiter = threading.Thread(
        target=lambda: stalled.append(
            httpx.post(f"{fake.base_url}/chat/completions", json={"messages": USER_TURN})
        )
    )
    waiter.start()
    fake.wait_for_requests(1)
    started = time.perf_counter()
    assert http.get("/models").status_code == 200
    assert time.perf_counter() - started < 0.5 and not stalled
    waiter.join(5)
    # after the stall the default reply follows
    assert stalled[0].json()["choices"][0]["message"]["content"] == "echo: hello there"


def test_stop_is_prompt_while_a_request_is_stalled():
    server = FakeUpstream().start()
    server.stall(30)
    outcome: list[BaseException] = []

    def call_and_keep_waiting() -> None:
        try:
            httpx.post(f"{server.base_url}/chat/completions", json={"messages": USER_TURN})
        except httpx.HTTPError as exc:
            outcome.append(exc)

    waiter = threading.Thread(target=call_and_keep_waiting)
    waiter.start()
    server.wait_for_requests(1)
    started = time.perf_counter()
    server.stop()
    assert time.perf_counter() - started < 2
    waiter.join(5)
    assert outcome and isinstance(outcome[0], httpx.RemoteProtocolError)


def test_drop_mid_stream_closes_the_connection(fake: FakeUpstream, http: httpx.Client):
    fake.drop_mid_stream(after_chunks=3)
    received: list[str] = []
    with (
        pytest.raises(httpx.RemoteProtocolError),
        http.stream("POST", "/chat/completions", json={"messages": USER_TURN}) as response,
    ):
        received.extend(sse_payloads(response))
    assert len(received) == 3 and "[DONE]" not in received
    assert all(json.loads(payload)["choices"][0]["finish_reason"] is None for payload in received)
    assert len(fake.requests) == 1


def test_drop_mid_stream_surfaces_in_the_sdk(fake: FakeUpstream, sdk: openai.OpenAI):
    fake.drop_mid_stream()
    with pytest.raises((openai.APIConnectionError, httpx.RemoteProtocolError)):
        list(sdk.chat.completions.create(model="m", messages=USER_TURN, stream=True))


def test_requests_are_recorded(fake: FakeUpstream, http: httpx.Client):
    http.post(
        "/chat/completions?trace=1",
        content=b'{"messages": []}',
        headers={"X-Agent-Id": "alice", "Content-Type": "application/json"},
    )
    http.post("/chat/completions", content=b"not json")
    first, second = fake.requests
    assert (first.method, first.path, first.query) == ("POST", "/v1/chat/completions", "trace=1")
    assert first.headers["x-agent-id"] == "alice"
    assert first.body == b'{"messages": []}' and first.json == {"messages": []}
    assert second.body == b"not json" and second.json is None
    assert fake.last_json is None


def test_a_body_that_is_not_an_object_is_refused_without_consuming_the_queue(
    fake: FakeUpstream, http: httpx.Client
):
    fake.reply("kept")
    assert http.post("/chat/completions", json=[1, 2]).status_code == 400
    reply = http.post("/chat/completions", json={"messages": USER_TURN})
    assert reply.json()["choices"][0]["message"]["content"] == "kept"


def test_reset_clears_requests_and_queue(fake: FakeUpstream, http: httpx.Client):
    fake.error(500)
    http.get("/models")
    fake.reset()
    assert fake.requests == [] and fake.last_json is None
    assert http.post("/chat/completions", json={"messages": USER_TURN}).status_code == 200


def test_wait_for_requests_times_out(fake: FakeUpstream):
    with pytest.raises(TimeoutError):
        fake.wait_for_requests(1, timeout=0.05)


def test_reply_refuses_content_that_contradicts_chunks():
    with pytest.raises(ValueError):
        Reply("abc", chunks=["x"])


def test_models_and_embeddings_via_the_sdk(fake: FakeUpstream, sdk: openai.OpenAI):
    assert [model.id for model in sdk.models.list()] == list(FakeUpstream.models)
    # the SDK asks for base64 by default; plain floats must decode to the same vectors
    embedded = sdk.embeddings.create(model="e", input=["alpha", "beta"])
    as_floats = sdk.embeddings.create(model="e", input="alpha", encoding_format="float")
    assert [item.embedding for item in embedded.data] == [
        embedding_for("alpha"),
        embedding_for("beta"),
    ]
    assert as_floats.data[0].embedding == embedding_for("alpha")
    assert len(embedding_for("alpha")) == 8
    assert embedding_for("alpha") != embedding_for("beta")
    assert sum(value * value for value in embedding_for("alpha")) == pytest.approx(1, abs=1e-6)


def test_other_paths_echo_the_request(fake: FakeUpstream, http: httpx.Client):
    response = http.put("/files/f-1?purpose=x&n=2", content=b"payload", headers={"X-Trace": "t"})
    echoed = response.json()
    assert (echoed["method"], echoed["path"]) == ("PUT", "/v1/files/f-1")
    assert echoed["query"] == "purpose=x&n=2"
    assert echoed["body"] == "payload" and echoed["headers"]["x-trace"] == "t"
    assert httpx.get(f"{fake.url}/health").status_code == 404


def test_stream_echo_path(http: httpx.Client):
    with http.stream("GET", "/anything/stream-echo") as response:
        assert response.headers["content-type"] == "text/event-stream"
        payloads = list(sse_payloads(response))
    assert payloads[-1] == "[DONE]"
    assert [json.loads(p)["index"] for p in payloads[:-1]] == [0, 1, 2]


def test_keep_alive_reuses_one_quick_connection(fake: FakeUpstream):
    connection = HTTPConnection("127.0.0.1", fake.port)
    body = json.dumps({"messages": USER_TURN, "stream": True})
    sockets_used = set()
    started = time.perf_counter()
    for _ in range(20):
        connection.request("POST", "/v1/chat/completions", body=body)
        assert connection.getresponse().read().endswith(b"data: [DONE]\n\n")
        sockets_used.add(connection.sock)
    # Delayed ACKs without TCP_NODELAY would cost ~40 ms per streamed reply (0.8 s here).
    assert time.perf_counter() - started < 0.6
    assert len(sockets_used) == 1
    connection.close()


async def test_async_clients_are_served_concurrently(fake: FakeUpstream):
    fake.stall(0.4).stall(0.4)
    async with httpx.AsyncClient(base_url=fake.base_url) as client:
        started = time.perf_counter()
        replies = await asyncio.gather(
            *(client.post("/chat/completions", json={"messages": USER_TURN}) for _ in range(2))
        )
        elapsed = time.perf_counter() - started
    assert [reply.status_code for reply in replies] == [200, 200]
    assert elapsed < 0.75


def test_runs_as_a_process_until_sigterm():
    command = [sys.executable, "-m", "tests.support.servers.fake_upstream", "--port", "0"]
    root = Path(__file__).resolve().parents[2]
    with subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, text=True) as server:
        try:
            assert server.stdout is not None
            base_url = server.stdout.readline().strip()
            assert httpx.get(f"{base_url}/models").json()["data"][0]["id"] == "fake-model"
            server.send_signal(signal.SIGTERM)
            assert server.wait(10) == 0
        finally:
            server.kill()  # a no-op once it has exited
