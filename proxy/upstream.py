"""The one place that talks to model servers: relaying client requests and core-model calls.

One pooled httpx client is created in the app's lifespan. Its transport is aiohttp's
(`httpx-aiohttp`): same httpx API, about half the CPU per request of httpx's own
transport on this kind of machine (see tests/benchmarks/bench_proxy.py). Library
exceptions are translated into mnemoproxy.errors here, so callers never see httpx or aiohttp.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from mnemoproxy.config.settings import Settings
from mnemoproxy.errors import UpstreamError, UpstreamTimeout

log = logging.getLogger("mnemoproxy.upstream")

# Hop-by-hop and framing headers are the two ends' own business and never relayed.
_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
# Memory headers are for the proxy, not for the model server.
_PROXY_HEADERS = frozenset({"x-agent-id", "x-session-id"})


def _make_transport(settings: Settings) -> httpx.AsyncBaseTransport:
    limits = httpx.Limits(
        max_connections=settings.upstream_max_connections,
        max_keepalive_connections=settings.upstream_max_connections,
    )
    try:
        from httpx_aiohttp import AiohttpTransport
    except ImportError:  # the faster transport is optional; httpx's own works the same
        return httpx.AsyncHTTPTransport(limits=limits)
    return AiohttpTransport(limits=limits)


def _timeout(settings: Settings) -> httpx.Timeout:
    return httpx.Timeout(
        connect=settings.upstream_connect_timeout,
        read=settings.upstream_read_timeout,
        write=settings.upstream_read_timeout,
        pool=settings.upstream_connect_timeout,
    )


def translate_error(exc: BaseException, base_url: str) -> UpstreamError:
    """Map a transport failure onto 502 (unreachable or broken) or 504 (too slow)."""
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(chain) < 8:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    # aiohttp reports a refused connection through an exception httpx-aiohttp maps to a
    # timeout class, so the root cause decides, not the outer class.
    refused = any(
        isinstance(e, ConnectionError | OSError) and not isinstance(e, TimeoutError)
        for e in chain[1:]
    )
    timed_out = not refused and any(
        isinstance(e, httpx.TimeoutException | asyncio.TimeoutError | TimeoutError) for e in chain
    )
    if timed_out:
        return UpstreamTimeout(
            f"the upstream at {base_url} did not answer in time; retry, or raise "
            "upstream_read_timeout / upstream_connect_timeout",
        )
    return UpstreamError(
        f"cannot reach the upstream at {base_url} ({type(chain[-1]).__name__}: {chain[-1]}); "
        "check that the model server is running and that upstream_url is right",
    )


def forward_headers(
    client_headers: Iterable[tuple[str, str]], *, api_key: str, identity_encoding: bool
) -> dict[str, str]:
    """The client's headers as the upstream should see them."""
    out: dict[str, str] = {}
    for name, value in client_headers:
        key = name.lower()
        if key in _HOP_HEADERS or key in _PROXY_HEADERS:
            continue
        out[key] = value
    if api_key:
        out["authorization"] = f"Bearer {api_key}"
    if identity_encoding:
        # The proxy reads chat replies to remember them, so it asks for plain bytes.
        out["accept-encoding"] = "identity"
    return out


def response_headers(upstream_headers: httpx.Headers) -> dict[str, str]:
    return {k: v for k, v in upstream_headers.items() if k.lower() not in _HOP_HEADERS}


class Upstream:
    """A pooled client for the configured model server."""

    def __init__(
        self, settings: Settings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.base_url = settings.upstream_url.rstrip("/")
        self.api_key = settings.upstream_api_key
        self._client = httpx.AsyncClient(
            transport=transport or _make_transport(settings),
            timeout=_timeout(settings),
            follow_redirects=False,
        )

    def url_for(self, v1_path: str, base_url: str | None = None) -> str:
        """`/v1/chat/completions` -> `<upstream_url>/chat/completions` (or another base)."""
        suffix = v1_path[len("/v1") :] if v1_path.startswith("/v1") else v1_path
        return (base_url or self.base_url).rstrip("/") + suffix

    async def send(
        self,
        method: str,
        v1_path: str,
        *,
        headers: Mapping[str, str],
        content: bytes | None,
        query: str = "",
        timeout: float | None = None,
    ) -> httpx.Response:
        """Send a request and return once the status line and headers are in; the caller
        reads (or streams) the body and must close the response."""
        url = self.url_for(v1_path) + (f"?{query}" if query else "")
        request = self._client.build_request(
            method,
            url,
            headers=headers,
            content=content,
            timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
        )
        try:
            return await self._client.send(request, stream=True)
        except (TimeoutError, httpx.HTTPError, OSError) as exc:
            raise translate_error(exc, self.base_url) from exc

    async def post_json(
        self,
        v1_path: str,
        body: dict[str, Any],
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """A whole JSON exchange, for the proxy's own calls (core model, embeddings)."""
        key = self.api_key if api_key is None else api_key
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        root = (base_url or self.base_url).rstrip("/")
        url = self.url_for(v1_path, root)
        try:
            response = await self._client.post(
                url,
                content=json.dumps(body).encode(),
                headers=headers,
                timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
            )
            payload = response.json()
        except (TimeoutError, httpx.HTTPError, OSError) as exc:
            raise translate_error(exc, root) from exc
        except ValueError as exc:
            raise UpstreamError(f"the model server at {root} answered with invalid JSON") from exc
        if response.status_code >= 400:
            message = payload.get("error", {}) if isinstance(payload, dict) else payload
            raise UpstreamError(
                f"the model server at {root} answered {response.status_code}: {message}",
                code=f"upstream_{response.status_code}",
            )
        if not isinstance(payload, dict):
            raise UpstreamError(f"the model server at {root} answered JSON that is not an object")
        return payload

    async def aclose(self) -> None:
        await self._client.aclose()


class CoreModelClient:
    """The core model (distiller, LLM gate) as an injected object: `complete()` and nothing
    about HTTP leaks to memory/ or gate/."""

    def __init__(self, upstream: Upstream, settings: Settings) -> None:
        self._upstream = upstream
        self.model = settings.core_model
        self._base_url = settings.core_url or settings.upstream_url
        self._api_key = settings.core_api_key or settings.upstream_api_key

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
    ) -> str:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": json_schema, "strict": True},
            }
        payload = await self._upstream.post_json(
            "/v1/chat/completions",
            body,
            base_url=self._base_url,
            api_key=self._api_key,
            timeout=timeout,
        )
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise UpstreamError("the core model's reply has no choices[0].message") from exc
        return content if isinstance(content, str) else ""
