"""Model servers as memory sees them: a JSON client it is lent, and the core model on top.

memory/ never imports an HTTP library: the proxy's pooled upstream client implements
`JsonClient` and is handed in, so memory stays below proxy in the layering while the
core model and a remote embedder share the proxy's connections.
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class Completion:
    """What the core model answered: its text, whether it stopped because `max_tokens` ran
    out (the text is then cut off), and the tokens it used."""

    text: str
    truncated: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0


class CoreModel(Protocol):
    """One chat completion against the core model.

    `json_schema` is a bare JSON Schema object (the shape of the expected reply); the client
    wraps it into the wire format it speaks. Raises `UpstreamError` or `UpstreamTimeout`
    on failure."""

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion: ...


class CoreModelClient:
    """The core model over an OpenAI-compatible /chat/completions endpoint."""

    def __init__(self, client: JsonClient, settings: Settings) -> None:
        self._client = client
        self.model = settings.core_model
        self._temperature = settings.core_temperature
        self._frequency_penalty = settings.core_frequency_penalty
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
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self._temperature,
        }
        if self._frequency_penalty:
            body["frequency_penalty"] = self._frequency_penalty
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
            choice = payload["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise UpstreamError("the core model's reply has no choices[0].message") from exc
        usage = payload.get("usage")
        if not isinstance(usage, dict):
            usage = {}
        return Completion(
            content if isinstance(content, str) else "",
            truncated=choice.get("finish_reason") == "length",
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
        )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
