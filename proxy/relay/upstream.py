"""The one module that speaks HTTP to model servers: relaying client requests, and the JSON
calls memory makes (core model, embeddings) through the same pooled client.

One pooled aiohttp session is created in the app's lifespan. aiohttp is used directly:
the httpx API over aiohttp's transport cost 0.28-0.46 ms of CPU per relayed request
here, aiohttp alone 0.12-0.15 ms (`python -m tests.benchmarks.relay.bench_upstream_client`),
on a path whose whole budget is half a millisecond. Requests go out as the client sent
them: the URL is not re-quoted, no header is made up (aiohttp's default Accept-Encoding,
User-Agent and Content-Type are skipped) and bodies are relayed undecoded. aiohttp's
exceptions are translated into mnemoproxy.errors here; callers see `UpstreamResponse` and
the domain's errors only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import aiohttp
from yarl import URL

from mnemoproxy.config.settings import Settings
from mnemoproxy.config.urls import hide_credentials, without_credentials
from mnemoproxy.errors import UpstreamError, UpstreamTimeout

log = logging.getLogger(__name__)

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
_NOT_RELAYED = _HOP_HEADERS | _SERVER_HEADERS
RELAY_TIMEOUT_SETTING = "upstream_read_timeout"
RELAY_URL_SETTING = "upstream_url"
TOTAL_TIMEOUT_SETTING = "upstream_total_timeout_seconds"


def _timeout(settings: Settings) -> aiohttp.ClientTimeout:
    """Per wait, not per request: the total is the Deadline's (it covers the body too)."""
    return aiohttp.ClientTimeout(
        total=None,
        connect=settings.upstream_connect_timeout,  # a pooled connection included
        sock_connect=settings.upstream_connect_timeout,
        sock_read=settings.upstream_read_timeout,
    )


def _session(settings: Settings) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=settings.upstream_max_connections,
                                       limit_per_host=settings.upstream_max_connections),
        timeout=_timeout(settings),
        auto_decompress=False,  # bytes relayed as they come, Content-Encoding with them
        cookie_jar=aiohttp.DummyCookieJar(),  # the upstream's cookies are the client's
        skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"),
    )


_TIMEOUTS = (asyncio.TimeoutError, TimeoutError)


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
    # A timeout anywhere in the chain decides (aiohttp's own is a TimeoutError raised from
    # the CancelledError that stopped the wait).
    timed_out = any(isinstance(error, _TIMEOUTS) for error in chain)
    if timed_out:
        remedy = f"raise {timeout_setting}" if timeout_setting else "check the server's load"
        return UpstreamTimeout(
            f"the model server at {base_url} did not answer in time; retry, or {remedy}"
        )
    where = f"that {url_setting} is right" if url_setting else "that its URL is right"
    return UpstreamError(hide_credentials(
        f"no usable answer from the model server at {base_url} ({type(chain[-1]).__name__}: "
        f"{chain[-1]}); check that it is running and {where}"),
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
        self, response: aiohttp.ClientResponse, base_url: str, deadline: Deadline,
        waited: float = 0.0,
    ) -> None:
        self._response = response
        self._base_url = base_url
        self._deadline = deadline
        self.status_code = response.status
        self.waited = waited

    def header(self, name: str) -> str | None:
        return self._response.headers.get(name)

    def relayed_headers(self) -> dict[str, str]:
        """The headers a client should get: everything but hop-by-hop and framing."""
        return {
            k: v
            for k, v in self._response.headers.items()
            if k.lower() not in _NOT_RELAYED
        }

    def raw_relayed_headers(self) -> list[tuple[bytes, bytes]]:
        """`relayed_headers` as ASGI wants them, repeated ones (Set-Cookie) kept."""
        return [(name.lower(), value) for name, value in self._response.raw_headers
                if name.lower().decode("latin-1") not in _NOT_RELAYED]

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives; a broken transfer raises UpstreamError, one that runs
        past the request's deadline UpstreamTimeout."""
        content = self._response.content
        while True:
            try:
                async with asyncio.timeout_at(self._deadline.at):
                    chunk = await content.readany()
            except Exception as exc:
                raise self._deadline.error(exc, self._base_url) from exc
            if not chunk:
                return
            yield chunk

    async def read(self) -> bytes:
        try:
            async with asyncio.timeout_at(self._deadline.at):
                return await self._response.read()
        except Exception as exc:
            raise self._deadline.error(exc, self._base_url) from exc

    async def aclose(self) -> None:
        # A body read to its end gives the connection back to the pool; one left unread
        # (the client went away) closes it.
        self._response.release()


class Upstream:
    """A pooled client for the configured model server, also lent to memory for its own JSON
    calls (it implements memory's `JsonClient`)."""

    def __init__(self, settings: Settings) -> None:
        self.base_url = settings.upstream_url.rstrip("/")
        # What messages, /health and the log name it: without its credentials.
        self.shown_url = without_credentials(self.base_url)
        self.api_key = settings.upstream_api_key
        self.total_seconds = settings.upstream_total_timeout_seconds
        self._session = _session(settings)

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
        # Sent as the client wrote it: yarl would otherwise re-quote the path and query.
        url = URL(self.url_for(v1_path) + (f"?{query}" if query else ""), encoded=True)
        deadline = Deadline(self.total_seconds)
        sent = time.perf_counter()
        try:
            async with asyncio.timeout_at(deadline.at):
                response = await self._session.request(
                    method, url, headers=headers, data=content, allow_redirects=False)
        except Exception as exc:
            raise deadline.error(exc, self.shown_url) from exc
        return UpstreamResponse(
            response, self.shown_url, deadline, waited=time.perf_counter() - sent
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
        root = without_credentials(url.rsplit("/", 1)[0])
        limit = self._session.timeout if timeout is None else aiohttp.ClientTimeout(
            total=timeout)
        try:
            async with self._session.post(
                url, data=json.dumps(body).encode(), headers=headers, timeout=limit,
            ) as response:
                status, raw = response.status, await response.read()
            payload = json.loads(raw)
        except ValueError as exc:
            raise UpstreamError(f"the model server at {root} answered with invalid JSON") from exc
        except Exception as exc:
            raise translate_error(exc, root, timeout_setting, url_setting) from exc
        if status >= 400:
            message = payload.get("error", {}) if isinstance(payload, dict) else payload
            raise UpstreamError(
                f"the model server at {root} answered {status}: {message}",
                code=f"upstream_{status}",
            )
        if not isinstance(payload, dict):
            raise UpstreamError(f"the model server at {root} answered JSON that is not an object")
        return payload

    async def aclose(self) -> None:
        await self._session.close()
