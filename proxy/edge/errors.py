"""Errors as HTTP: each class of the domain's error tree has its status and OpenAI error type
here, in one table, and every error body leaves through `error_body`, in OpenAI's shape, so
SDKs parse it. Litestar's own HTTP exceptions are first translated into the domain's."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec

from mnemoproxy.config.urls import hide_credentials
from mnemoproxy.errors import (
    DistillError,
    InvalidArgument,
    MemoryDisabled,
    MemoryFailure,
    MnemoError,
    NotFound,
    SettingError,
    TooLarge,
    UpstreamError,
    UpstreamTimeout,
)

log = logging.getLogger(__name__)


_MISSING_FIELD = re.compile(r"missing required field `([^`]+)`")


class MethodNotAllowed(InvalidArgument):
    code = "method_not_allowed"


class BodyTimeout(InvalidArgument):
    code = "request_timeout"


class NotAuthenticated(InvalidArgument):
    code = "invalid_api_key"


class Forbidden(InvalidArgument):
    code = "forbidden"


class UnsupportedMediaType(InvalidArgument):
    code = "unsupported_media_type"


class TooManyRequests(InvalidArgument):
    code = "too_many_requests"


# (HTTP status, OpenAI error type) per error class; an error takes its nearest ancestor's.
HTTP_STATUS: dict[type[MnemoError], tuple[int, str]] = {
    InvalidArgument: (400, "invalid_request_error"),
    MethodNotAllowed: (405, "invalid_request_error"),
    BodyTimeout: (408, "invalid_request_error"),
    NotAuthenticated: (401, "invalid_request_error"),
    Forbidden: (403, "permission_error"),
    UnsupportedMediaType: (415, "invalid_request_error"),
    TooManyRequests: (429, "rate_limit_error"),
    NotFound: (404, "invalid_request_error"),
    TooLarge: (413, "invalid_request_error"),
    UpstreamError: (502, "upstream_error"),
    UpstreamTimeout: (504, "upstream_error"),
    MemoryDisabled: (503, "memory_error"),
    MemoryFailure: (500, "memory_error"),
    DistillError: (502, "memory_error"),
    SettingError: (500, "configuration_error"),
    MnemoError: (500, "server_error"),
}


def http_status(exc: MnemoError) -> tuple[int, str]:
    for cls in type(exc).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return HTTP_STATUS[MnemoError]


class ErrorDetail(msgspec.Struct):
    """What went wrong: `message` says what to do about it, `type` is OpenAI's error type,
    `param` names the field or parameter at fault (`turns[3].date`; null when none is) and
    `code` is a stable machine-readable code."""

    message: str
    type: str
    param: str | None
    code: str | None


class ErrorBody(msgspec.Struct):
    """An error answer, in OpenAI's shape (its SDKs parse it)."""

    error: ErrorDetail


def error_body(exc: MnemoError) -> dict[str, Any]:
    _, error_type = http_status(exc)
    # A message may quote a URL another library put in its exception: never its password.
    body: dict[str, Any] = msgspec.to_builtins(
        ErrorBody(ErrorDetail(hide_credentials(exc.message), error_type, exc.param, exc.code))
    )
    return body


# When each documented error status is answered (the schema's description of it).
_WHEN = {
    400: "a parameter or the body is invalid; `param` names the field",
    401: "the proxy has keys and the request carries none, or an unknown one",
    403: "the key may not use this agent, or this route",
    404: "memory holds no such agent, or the agent no such item",
    408: "the body did not arrive within request_body_timeout_seconds",
    413: "the body is larger than max_body_bytes",
    415: "the body's Content-Type is not the one the route takes",
    429: "the key has as many uploads under way as it may",
    503: "memory is disabled on this proxy",
}


def error_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """The OpenAPI description of the errors a route answers: each in OpenAI's shape, so the
    schema does not show Litestar's own error body, which the proxy never sends."""
    return {
        status: ResponseSpec(ErrorBody, description=_WHEN[status], generate_examples=False)
        for status in statuses
    }


def error_response(exc: MnemoError) -> Response[dict[str, Any]]:
    return Response(error_body(exc), status_code=http_status(exc)[0])


def sse_error_event(exc: MnemoError) -> bytes:
    """The event that ends a stream the upstream broke: clients see why, then the close."""
    return b"data: " + json.dumps(error_body(exc)).encode() + b"\n\n"


def from_http_exception(request: Request[Any, Any, Any], exc: HTTPException) -> MnemoError:
    """Litestar's own refusals (routing, body size, typed-body validation) as domain errors."""
    status = exc.status_code
    if isinstance(exc, ValidationException) or status == 400:
        return _invalid_body(exc)
    if status == 404:
        return NotFound(
            f"no route {request.method} {request.url.path}; the proxy serves /v1/*, /memory/*, "
            "/agents, /health, /ui (the inspector), /mcp, /metrics and /schema/openapi.json"
        )
    if status == 413:
        return TooLarge(
            "the request body is larger than the proxy accepts; send a smaller body or raise "
            "the max_body_bytes setting"
        )
    if status == 405:
        return MethodNotAllowed(f"method {request.method} is not allowed on {request.url.path}")
    if status < 500:
        return InvalidArgument(str(exc.detail))
    return MnemoError(str(exc.detail))


def _invalid_body(exc: HTTPException) -> InvalidArgument:
    """The first problem a typed body reported, naming the field: its path (`turns[0].user`),
    or the missing field's own name (Litestar calls the whole body `data`)."""
    problems = exc.extra if isinstance(exc.extra, list) else []
    first = problems[0] if problems and isinstance(problems[0], dict) else {}
    message = str(first.get("message") or exc.detail)
    key = str(first.get("key") or "")
    path = "" if key == "data" else key
    missing = _MISSING_FIELD.search(message)
    if missing:
        path = f"{path}.{missing[1]}" if path else missing[1]
    if path and path not in message:
        message = f"'{path}': {message}"
    return InvalidArgument(f"invalid request: {message}", param=path or None)


def _on_mnemo_error(_: Request[Any, Any, Any], exc: MnemoError) -> Response[dict[str, Any]]:
    return error_response(exc)


def _on_http_exception(
    request: Request[Any, Any, Any], exc: HTTPException
) -> Response[dict[str, Any]]:
    return error_response(from_http_exception(request, exc))


def _on_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(
        MnemoError("the proxy hit an internal error; it is logged, please report it")
    )


EXCEPTION_HANDLERS: Any = {
    MnemoError: _on_mnemo_error,
    HTTPException: _on_http_exception,
    Exception: _on_unexpected,
}
