"""Every route against arbitrary input, through a real memory-enabled server: whatever a
client sends, the answer is a success or a 4xx in OpenAI's error shape, never a 5xx, and
the server keeps serving. Bounded: about a hundred requests per route."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.memory_client import memory_settings
from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.proxy_server import ProxyServer

# Per route and kind of body; FUZZ_EXAMPLES=2000 for a deeper run than the suite's.
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
# What an HTTP client can put in a header: no control characters.
header_text = st.text(
    st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=12
).map(lambda text: text.strip(" \t")).filter(bool)
ids = st.text(max_size=20) | st.integers() | st.none()
texts = st.text(max_size=60) | st.integers() | st.none() | st.lists(st.text(max_size=5), max_size=2)
dates = st.none() | st.integers() | st.floats() | st.text(max_size=30) | st.sampled_from(
    ["2024-05-08", "9999-12-31T23:59:59-14:00", "0001-01-01", "2024-13-45", "1e400", "-1"]
)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "tool", "bogus"]) | texts},
        optional={"content": texts | json_values, "tool_calls": json_values, "name": texts},
    ),
    max_size=4,
)
# Bodies shaped like each route's, with any value in any field, and bodies of any shape.
BODIES: dict[str, st.SearchStrategy[Any]] = {
    "/v1/chat/completions": st.fixed_dictionaries(
        {"messages": messages | json_values},
        optional={"model": texts, "stream": json_values, "tools": json_values},
    ),
    "/memory/ingest": st.fixed_dictionaries(
        {"agent_id": ids, "conversation_id": ids},
        optional={
            "turns": st.lists(
                st.fixed_dictionaries(
                    {}, optional={"user": texts, "assistant": texts, "date": dates}
                ),
                max_size=3,
            ) | json_values,
            "session_date": dates,
            "skip_extraction": json_values,
        },
    ),
    "/memory/search": st.fixed_dictionaries(
        {"agent_id": ids, "query": texts},
        optional={"scope": texts, "top_k": json_values, "days": json_values},
    ),
    "/memory/preview": st.fixed_dictionaries({"agent_id": ids, "messages": messages | json_values}),
    "/agents/fuzz/facts": st.fixed_dictionaries(
        {"content": texts | json_values},
        optional={"kind": texts | json_values, "salience": json_values, "pinned": json_values},
    ),
    "/memory/consolidate": st.fixed_dictionaries({}, optional={"agent_id": ids}),
    "/memory/dead-letters/retry": st.fixed_dictionaries({}, optional={"agent_id": ids}),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    with FakeUpstream() as fake:
        settings_ = memory_settings(fake, tmp_path_factory.mktemp("fuzz"))
        with ProxyServer(settings_) as proxy:
            yield proxy


def assert_not_a_server_error(response: httpx.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.status_code >= 400:
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"} and error["message"]


def send(server: ProxyServer, path: str, body: bytes, agent: str | None = None) -> None:
    headers: dict[str, str | bytes] = {"content-type": "application/json"}
    if agent is not None:
        headers["x-agent-id"] = agent.encode()  # UTF-8 on the wire
    response = httpx.post(server.url + path, content=body, headers=headers, timeout=30)
    assert_not_a_server_error(response)


@pytest.mark.parametrize("path", list(BODIES))
def test_shaped_bodies_never_get_a_server_error(server: ProxyServer, path: str) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(body=BODIES[path], agent=st.none() | header_text)
    def check(body: Any, agent: str | None) -> None:
        send(server, path, json.dumps(body, allow_nan=True).encode(), agent)

    check()


@pytest.mark.parametrize("path", list(BODIES))
def test_any_bytes_never_get_a_server_error(server: ProxyServer, path: str) -> None:
    @settings(max_examples=EXAMPLES // 2, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(body=st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()))
    def check(body: bytes) -> None:
        send(server, path, body, "fuzz")

    check()


# Import records: each type with any values in its fields, or anything at all.
records = st.fixed_dictionaries(
    {"type": st.sampled_from(["agent", "session", "fact", "episode", "entity"]) | texts},
    optional={name: json_values for name in (
        "key", "started_at", "messages", "ref", "kind", "content", "valid_from", "created_at",
        "updated_at", "superseded_by", "session", "summary", "name", "first_seen",
        "last_seen", "tags", "salience")},
) | json_values


def test_imports_of_any_records_never_get_a_server_error(server: ProxyServer) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(lines=st.lists(records, max_size=6), agent=st.text(min_size=1, max_size=20))
    def check(lines: list[Any], agent: str) -> None:
        body = "\n".join(json.dumps(line, allow_nan=True) for line in lines).encode()
        response = httpx.post(f"{server.url}/agents/{quote(agent, safe='')}/import",
                              content=body, headers={"content-type": "application/x-ndjson"},
                              timeout=30)
        assert_not_a_server_error(response)
        exported = httpx.get(f"{server.url}/agents/{quote(agent, safe='')}/export", timeout=30)
        assert_not_a_server_error(exported)

    check()


def test_fact_edits_of_any_shape_never_get_a_server_error(server: ProxyServer) -> None:
    created = httpx.post(server.url + "/agents/fuzz/facts", json={"content": "User likes tea."})
    assert created.status_code == 201, created.text
    fact_id = created.json()["id"]

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(body=st.fixed_dictionaries({}, optional={
        "content": texts | json_values, "salience": json_values, "pinned": json_values,
    }) | json_values, target=st.sampled_from([str(fact_id), "0", "-1", "99999999999999999999",
                                              "x", "1.5"]))
    def check(body: Any, target: str) -> None:
        for method in ("PATCH", "GET", "DELETE"):
            # Sent as written (NaN and Infinity included), not through httpx's JSON encoder.
            sent = json.dumps(body, allow_nan=True).encode() if method == "PATCH" else None
            response = httpx.request(method, f"{server.url}/agents/fuzz/facts/{target}",
                                     content=sent, timeout=30,
                                     headers={"Content-Type": "application/json"})
            assert_not_a_server_error(response)

    check()


def test_the_server_still_serves_after_the_fuzzing(server: ProxyServer) -> None:
    assert httpx.get(server.url + "/health").status_code == 200
    for route in ("/agents", "/agents/fuzz/facts", "/agents/fuzz/export"):
        assert_not_a_server_error(httpx.get(server.url + route))
    assert_not_a_server_error(httpx.delete(server.url + "/agents/fuzz"))
