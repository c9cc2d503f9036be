"""Model servers as memory sees them: a JSON client it is lent, and the core model on top.

memory/ never imports an HTTP library: the proxy's pooled upstream client implements
`JsonClient` and is handed in, so memory stays below proxy in the layering while the
core model and a remote embedder share the proxy's connections.
"""

from __future__ import annotations

from typing import Any, Protocol

from mnemoproxy.config.settings import Settings
from mnemoproxy.errors import UpstreamError

CORE_TIMEOUT_SETTING = "core_timeout_seconds"
CORE_URL_SETTING = "core_url"


class JsonClient(Protocol):
    """POST a JSON body to a model server and get its JSON object back.

    Raises UpstreamError (unreachable, an error status, not JSON), naming `url_setting` as
    the one to check, or UpstreamTimeout, naming `timeout_setting` as the limit to raise."""

    async def post_json(
        self,
        url: str,
        body: dict[str, Any],
        *,
        api_key: str = "",
        timeout: float | None = None,
        timeout_setting: str | None = None,
        url_setting: str | None = None,
    ) -> dict[str, Any]: ...


class CoreModel(Protocol):
    """One chat completion against the core model.

    `json_schema` is a bare JSON Schema object (the shape of the expected reply); the client
    wraps it into the wire format it speaks. Returns the assistant text; raises
    `UpstreamError` or `UpstreamTimeout` on failure."""

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
    ) -> str: ...


class CoreModelClient:
    """The core model over an OpenAI-compatible /chat/completions endpoint."""

    def __init__(self, client: JsonClient, settings: Settings) -> None:
        self._client = client
        self.model = settings.core_model
        self._url = (settings.core_url or settings.upstream_url).rstrip("/") + "/chat/completions"
        self._core_url_set = bool(settings.core_url)
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
        payload = await self._client.post_json(
            self._url,
            body,
            api_key=self._api_key,
            timeout=timeout,
            timeout_setting=CORE_TIMEOUT_SETTING,
            url_setting=CORE_URL_SETTING if self._core_url_set else "upstream_url",
        )
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise UpstreamError("the core model's reply has no choices[0].message") from exc
        return content if isinstance(content, str) else ""
