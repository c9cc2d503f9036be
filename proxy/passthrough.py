"""Every other /v1/* route, relayed as it is: method, query, body, headers, streaming."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, route
from litestar.di import NamedDependency
from litestar.enums import HttpMethod

from mnemoproxy.proxy.metrics import PASS_THROUGH_ROUTE
from mnemoproxy.proxy.relay import relay
from mnemoproxy.proxy.services import Services
from mnemoproxy.proxy.upstream import forward_headers

_METHODS = [
    HttpMethod.GET,
    HttpMethod.POST,
    HttpMethod.PUT,
    HttpMethod.PATCH,
    HttpMethod.DELETE,
    HttpMethod.HEAD,
    HttpMethod.OPTIONS,
]


def relayed_path(scope: Any) -> str:
    """The path as the client wrote it (`a%2Fb` stays one segment for the upstream); the
    decoded one when the raw path does not name /v1 literally (the guard judged that)."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes) else ""
    return path if path.startswith("/v1/") else str(scope["path"])


@route("/v1/{path:path}", http_method=_METHODS, status_code=200, include_in_schema=False)
async def pass_through(
    request: Request[Any, Any, Any], services: NamedDependency[Services]
) -> Response[Any]:
    body = await request.body()
    headers = forward_headers(
        request.headers.items(), api_key=services.upstream.api_key, identity_encoding=False
    )
    upstream_response = await services.upstream.send(
        request.method,
        relayed_path(request.scope),
        headers=headers,
        content=body or None,
        query=request.scope["query_string"].decode("latin-1"),  # as sent, not re-encoded
    )
    services.metrics.upstream[PASS_THROUGH_ROUTE].observe(upstream_response.waited)
    return await relay(upstream_response)
