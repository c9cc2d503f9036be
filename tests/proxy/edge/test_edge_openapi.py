"""The OpenAPI schema at /schema/openapi.json describes every route of the proxy's own API
(all but OpenAI's /v1 ones, MCP, /metrics, the web UI and the schema itself): its methods,
its request body, its answer's model and its errors in OpenAI's shape. The routes are read
from the app, so a new one without models fails here; and real answers keep to the schema,
every key of them documented."""

from __future__ import annotations

from typing import Any

import httpx

from mnemoproxy.proxy.app import create_app
from tests.support.servers.proxy_server import ProxyServer

# Routes the schema leaves out: OpenAI's, MCP's own protocol, Prometheus text, HTML pages.
NOT_DOCUMENTED = ("/v1", "/mcp", "/metrics", "/ui", "/schema")
ERROR_BODY = {"$ref": "#/components/schemas/ErrorBody"}
Schema = dict[str, Any]


def documented_routes(server: ProxyServer) -> dict[str, set[str]]:
    """Every path the app serves but NOT_DOCUMENTED, as OpenAPI spells it, with its methods."""
    routes: dict[str, set[str]] = {}
    for route in create_app(server.settings).routes:
        path = route.path_format
        if any(path == prefix or path.startswith(prefix + "/") for prefix in NOT_DOCUMENTED):
            continue
        methods = {method.lower() for method in getattr(route, "methods", ())} - {"options"}
        routes.setdefault(path, set()).update(methods)
    return routes


def openapi(server: ProxyServer) -> Schema:
    response = httpx.get(server.url + "/schema/openapi.json", timeout=30)
    assert response.status_code == 200, response.text
    document: Schema = response.json()
    return document


def component(document: Schema, schema: Schema) -> Schema:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def test_every_route_of_the_proxys_own_api_is_in_the_schema(memory_proxy):
    paths = openapi(memory_proxy)["paths"]
    routes = documented_routes(memory_proxy)
    assert {"/health", "/memory/ingest", "/agents/{agent_id}/facts/{fact_id}"} <= set(routes)
    missing = {path: methods - set(paths.get(path, {})) for path, methods in routes.items()}
    assert {path: methods for path, methods in missing.items() if methods} == {}
    assert not any(path.startswith("/v1") for path in paths)


def test_every_answer_body_and_error_has_a_model(memory_proxy):
    document = openapi(memory_proxy)
    for path, methods in documented_routes(memory_proxy).items():
        for method in methods:
            where = f"{method.upper()} {path}"
            operation = document["paths"][path][method]
            responses = operation["responses"]
            success = [status for status in responses if status in ("200", "201")]
            assert len(success) == 1, where
            for media_type, content in responses[success[0]]["content"].items():
                model = component(document, content["schema"])
                if media_type == "application/json":
                    assert model.get("properties"), f"{where}: its answer has no model"
                else:  # JSON Lines: a string of that media type
                    assert model.get("type") == "string", where
            errors = {status: answer for status, answer in responses.items()
                      if int(status) >= 400}
            assert errors or path == "/health", f"{where}: no error documented"
            for status, answer in errors.items():
                assert answer["content"] == {"application/json": {"schema": ERROR_BODY}}, (
                    f"{where} {status}: not OpenAI's error shape")
            if method in ("post", "patch"):
                body = operation.get("requestBody", {}).get("content", {})
                assert body and all(c.get("schema") for c in body.values()), where
    error = component(document, ERROR_BODY)
    assert set(component(document, error["properties"]["error"])["properties"]) == {
        "message", "type", "param", "code"}


def problems(document: Schema, value: Any, schema: Schema, at: str = "$") -> list[str]:
    """Where `value` breaks `schema`. Stricter than JSON Schema in one way: a key the schema
    does not name is a problem, because the schema must document every key sent."""
    schema = component(document, schema)
    if "oneOf" in schema:
        branches = [problems(document, value, branch, at) for branch in schema["oneOf"]]
        return [] if any(not found for found in branches) else [f"{at}: {branches}"]
    if "const" in schema and value != schema["const"]:
        return [f"{at}: {value!r} is not {schema['const']!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{at}: {value!r} is not one of {schema['enum']}"]
    types = schema.get("type") or []
    types = [types] if isinstance(types, str) else types
    if types and not any(is_a(value, name) for name in types):
        return [f"{at}: {value!r} is not {'/'.join(types)}"]
    found: list[str] = []
    if isinstance(value, dict) and "properties" in schema:
        fields = schema["properties"]
        found += [f"{at}: undocumented key {key!r}" for key in value if key not in fields]
        found += [f"{at}: no {key!r}" for key in schema.get("required", []) if key not in value]
        for key in value.keys() & fields.keys():
            found += problems(document, value[key], fields[key], f"{at}.{key}")
    elif isinstance(value, dict) and schema.get("additionalProperties"):
        for key, item in value.items():
            found += problems(document, item, schema["additionalProperties"], f"{at}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found += problems(document, item, schema["items"], f"{at}[{index}]")
    return found


def is_a(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    return isinstance(value, kinds[name])


class Checked:
    """Requests to the proxy whose answers are checked against the schema of their route,
    method and status."""

    def __init__(self, server: ProxyServer) -> None:
        self.server = server
        self.document = openapi(server)
        self.checked: set[str] = set()

    def __call__(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """`path` is the route's template, maybe with a query: /agents/{agent_id}?limit=1."""
        response = httpx.request(method, self.server.url + path.format(**params),
                                 json=body, timeout=60)
        route = path.split("?")[0]
        operation = self.document["paths"][route][method.lower()]
        answer = operation["responses"][str(response.status_code)]
        schema = answer["content"]["application/json"]["schema"]
        assert problems(self.document, response.json(), schema) == [], (method, path)
        self.checked.add(f"{method} {route} {response.status_code}")
        return response.json()


def test_answers_keep_to_the_schema(memory_proxy):
    call = Checked(memory_proxy)
    call("GET", "/health")
    for conversation, text in (("c1", "Hi, my name is Dana. I live in Berlin."),
                               ("c2", "I moved to Paris.")):
        call("POST", "/memory/ingest", {
            "agent_id": "dana", "conversation_id": conversation, "session_date": "2024-05-08",
            "turns": [{"user": text, "assistant": "Noted."}]})
    skipped = call("POST", "/memory/ingest", {  # a distillation without episode_id or reason
        "agent_id": "dana", "conversation_id": "c3", "skip_extraction": True,
        "turns": [{"user": "Just chatting.", "assistant": "Sure."}]})
    assert "episode_id" not in skipped["distillation"]
    call("POST", "/memory/search", {"agent_id": "dana", "query": "where does Dana live"})
    for question in ("Where do I live?", "hello"):  # a block, and none
        call("POST", "/memory/preview", {
            "agent_id": "dana", "messages": [{"role": "user", "content": question}]})
    call("GET", "/agents")
    call("GET", "/agents/{agent_id}", agent_id="dana")
    facts = call("GET", "/agents/{agent_id}/facts?status=all&limit=1", agent_id="dana")
    assert facts["next_cursor"] is not None
    call("GET", "/agents/{agent_id}/facts?status=all", agent_id="dana")
    superseded = call("GET", "/agents/{agent_id}/facts?status=superseded", agent_id="dana")
    detail = call("GET", "/agents/{agent_id}/facts/{fact_id}", agent_id="dana",
                  fact_id=superseded["facts"][0]["id"])
    assert len(detail["history"]) == 2
    sessions = call("GET", "/agents/{agent_id}/sessions", agent_id="dana")["sessions"]
    call("GET", "/agents/{agent_id}/sessions/{session_id}", agent_id="dana",
         session_id=sessions[0]["id"])
    episodes = call("GET", "/agents/{agent_id}/episodes", agent_id="dana")["episodes"]
    added = call("POST", "/agents/{agent_id}/facts", {"content": "User likes tea."},
                 agent_id="dana")
    call("PATCH", "/agents/{agent_id}/facts/{fact_id}", {"salience": 0.25}, agent_id="dana",
         fact_id=added["id"])
    call("DELETE", "/agents/{agent_id}/facts/{fact_id}", agent_id="dana", fact_id=added["id"])
    call("DELETE", "/agents/{agent_id}/episodes/{episode_id}", agent_id="dana",
         episode_id=episodes[0]["id"])
    call("POST", "/memory/consolidate", {"agent_id": "dana"})
    call("POST", "/memory/dead-letters/retry", {})
    call("DELETE", "/agents/{agent_id}/sessions/{session_id}", agent_id="dana",
         session_id=sessions[0]["id"])
    call("GET", "/health")
    call("DELETE", "/agents/{agent_id}", agent_id="dana")
    call("GET", "/agents/{agent_id}/facts/{fact_id}", agent_id="dana", fact_id=1)  # a 404
    call("POST", "/agents/{agent_id}/facts", {"content": " "}, agent_id="dana")  # a 400
    assert {"GET /agents/{agent_id}/facts/{fact_id} 200",
            "GET /agents/{agent_id}/facts/{fact_id} 404",
            "POST /agents/{agent_id}/facts 400"} <= call.checked


def test_an_import_and_its_answer_keep_to_the_schema(memory_proxy):
    call = Checked(memory_proxy)
    call("POST", "/agents/{agent_id}/facts", {"content": "User likes tea."}, agent_id="dana")
    export = httpx.get(memory_proxy.url + "/agents/dana/export")
    documented = call.document["paths"]["/agents/{agent_id}/export"]["get"]["responses"]["200"]
    assert export.headers["content-type"].split(";")[0] in documented["content"]
    body = call.document["paths"]["/agents/{agent_id}/import"]["post"]["requestBody"]
    media_type = next(iter(body["content"]))
    imported = httpx.post(memory_proxy.url + "/agents/bob/import", content=export.content,
                          headers={"Content-Type": media_type})
    assert imported.status_code == 200, imported.text
    schema = call.document["paths"]["/agents/{agent_id}/import"]["post"]["responses"]["200"]
    model = schema["content"]["application/json"]["schema"]
    assert problems(call.document, imported.json(), model) == []
    assert imported.json()["added"]["facts"] == 1


def test_health_with_memory_off_keeps_to_the_schema(proxy):
    call = Checked(proxy)
    assert call("GET", "/health")["memory"] == "disabled"
