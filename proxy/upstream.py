"""The one module that speaks HTTP to model servers: relaying client requests, and the JSON
calls memory makes (core model, embeddings) through the same pooled client.

One pooled httpx client is created in the app's lifespan. Its transport is aiohttp's
(`httpx-aiohttp`): same httpx API, about half the CPU per request of httpx's own
transport on this kind of machine (see tests/benchmarks/bench_proxy.py). httpx and
aiohttp exceptions are translated into mnemoproxy.errors here, and nowhere else imports
httpx: callers see `UpstreamResponse` and the domain's errors only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping
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
# The proxy's own HTTP server writes these on every response; relayed, they would be sent
# twice.
_SERVER_HEADERS = frozenset({"date", "server"})
RELAY_TIMEOUT_SETTING = "upstream_read_timeout"
RELAY_URL_SETTING = "upstream_url"
TOTAL_TIMEOUT_SETTING = "upstream_total_timeout_seconds"


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


_TIMEOUTS = (httpx.TimeoutException, asyncio.TimeoutError, TimeoutError)


def translate_error(
    exc: BaseException,
    base_url: str,
    timeout_setting: str | None = RELAY_TIMEOUT_SETTING,
    url_setting: str | None = RELAY_URL_SETTING,
) -> UpstreamError:
    """Map a transport failure onto UpstreamError (unreachable or broken) or UpstreamTimeout
    (too slow), naming the setting to look at: the limit that was hit, or the URL."""
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(chain) < 8:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    # The root cause decides, not the outer class: httpx-aiohttp reports a refused
    # connection, and a server that hung up without answering, as connect timeouts.
    timed_out = isinstance(chain[-1], _TIMEOUTS)
    if timed_out:
        remedy = f"raise {timeout_setting}" if timeout_setting else "check the server's load"
        return UpstreamTimeout(
            f"the model server at {base_url} did not answer in time; retry, or {remedy}"
        )
    where = f"that {url_setting} is right" if url_setting else "that its URL is right"
    return UpstreamError(
        f"no usable answer from the model server at {base_url} ({type(chain[-1]).__name__}: "
        f"{chain[-1]}); check that it is running and {where}",
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


class Deadline:
    """When a relayed request must be over, response body included: the read timeout
    bounds each wait between bytes, so an upstream that trickles (an SSE comment every few
    seconds) would otherwise hold a client forever."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = asyncio.get_running_loop().time() + seconds

    def error(self, exc: BaseException, base_url: str) -> UpstreamError:
        if isinstance(exc, TimeoutError) and asyncio.get_running_loop().time() >= self.at:
            return UpstreamTimeout(
                f"the model server at {base_url} did not finish within {self.seconds:g} s; "
                f"retry, or raise {TOTAL_TIMEOUT_SETTING}"
            )
        return translate_error(exc, base_url)


class UpstreamResponse:
    """A response whose status line and headers are in and whose body is not read yet;
    `waited` is how many seconds that took from sending the request (the upstream's
    latency, before any of its body)."""

    def __init__(
        self, response: httpx.Response, base_url: str, deadline: Deadline, waited: float = 0.0
    ) -> None:
        self._response = response
        self._base_url = base_url
        self._deadline = deadline
        self.status_code = response.status_code
        self.waited = waited

    def header(self, name: str) -> str | None:
        return self._response.headers.get(name)

    def relayed_headers(self) -> dict[str, str]:
        """The headers a client should get: everything but hop-by-hop and framing."""
        return {
            k: v
            for k, v in self._response.headers.items()
            if k.lower() not in _HOP_HEADERS and k.lower() not in _SERVER_HEADERS
        }

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives; a broken transfer raises UpstreamError, one that runs
        past the request's deadline UpstreamTimeout."""
        arriving = self._response.aiter_raw()
        while True:
            try:
                async with asyncio.timeout_at(self._deadline.at):
                    chunk = await anext(arriving)
            except StopAsyncIteration:
                return
            except Exception as exc:  # some aiohttp errors reach us unwrapped by httpx
                raise self._deadline.error(exc, self._base_url) from exc
            yield chunk

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def aclose(self) -> None:
        await self._response.aclose()


class Upstream:
    """A pooled client for the configured model server, also lent to memory for its own JSON
    calls (it implements memory's `JsonClient`)."""

    def __init__(
        self, settings: Settings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.base_url = settings.upstream_url.rstrip("/")
        self.api_key = settings.upstream_api_key
        self.total_seconds = settings.upstream_total_timeout_seconds
        self._client = httpx.AsyncClient(
            transport=transport or _make_transport(settings),
            timeout=_timeout(settings),
            follow_redirects=False,
        )

    def url_for(self, v1_path: str) -> str:
        """`/v1/chat/completions` -> `<upstream_url>/chat/completions`."""
        suffix = v1_path[len("/v1") :] if v1_path.startswith("/v1") else v1_path
        return self.base_url + suffix

    async def send(
        self,
        method: str,
        v1_path: str,
        *,
        headers: Mapping[str, str],
        content: bytes | None,
        query: str = "",
    ) -> UpstreamResponse:
        """Send a client's request and return once the status line and headers are in; the
        caller reads (or streams) the body and must close the response."""
        url = self.url_for(v1_path) + (f"?{query}" if query else "")
        request = self._client.build_request(method, url, headers=headers, content=content)
        deadline = Deadline(self.total_seconds)
        sent = time.perf_counter()
        try:
            async with asyncio.timeout_at(deadline.at):
                response = await self._client.send(request, stream=True)
        except Exception as exc:  # some aiohttp errors reach us unwrapped by httpx
            raise deadline.error(exc, self.base_url) from exc
        return UpstreamResponse(
            response, self.base_url, deadline, waited=time.perf_counter() - sent
        )

    async def post_json(
        self,
        url: str,
        body: dict[str, Any],
        *,
        api_key: str = "",
        timeout: float | None = None,
        timeout_setting: str | None = None,
        url_setting: str | None = None,
    ) -> dict[str, Any]:
        """A whole JSON exchange with a model server (core model, embeddings): the reply's
        JSON object, or UpstreamError naming what went wrong and the setting to change."""
        headers = {"content-type": "application/json"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        root = url.rsplit("/", 1)[0]
        try:
            response = await self._client.post(
                url,
                content=json.dumps(body).encode(),
                headers=headers,
                timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
            )
            payload = response.json()
        except ValueError as exc:
            raise UpstreamError(f"the model server at {root} answered with invalid JSON") from exc
        except Exception as exc:  # some aiohttp errors reach us unwrapped by httpx
            raise translate_error(exc, root, timeout_setting, url_setting) from exc
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
