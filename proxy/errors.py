"""Every error body leaves through `error_body`, in OpenAI's shape, so SDKs parse it."""

from __future__ import annotations

import json
import logging
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException

from mnemoproxy.errors import MnemoError

log = logging.getLogger("mnemoproxy")

_HTTP_TYPES = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}


def error_body(
    message: str, *, error_type: str, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def error_response(exc: MnemoError) -> Response[dict[str, Any]]:
    return Response(
        error_body(exc.message, error_type=exc.error_type, param=exc.param, code=exc.code),
        status_code=exc.status,
    )


def sse_error_event(exc: MnemoError) -> bytes:
    """The event that ends a stream the upstream broke: clients see why, then the close."""
    body = error_body(exc.message, error_type=exc.error_type, param=exc.param, code=exc.code)
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _on_mnemo_error(_: Request[Any, Any, Any], exc: MnemoError) -> Response[dict[str, Any]]:
    return error_response(exc)


def _on_http_exception(
    request: Request[Any, Any, Any], exc: HTTPException
) -> Response[dict[str, Any]]:
    status = exc.status_code
    code: str | None
    if isinstance(exc, ValidationException) or status == 400:
        message = f"invalid request: {exc.detail}"
        kind, code = "invalid_request_error", "invalid_request"
    elif status == 404:
        message = (
            f"no route {request.method} {request.url.path}; the proxy serves /v1/*, /memory/*, "
            "/agents and /health"
        )
        kind, code = "invalid_request_error", "not_found"
    elif status == 413:
        message = (
            "the request body is larger than the proxy accepts; send a smaller body or raise "
            "the max_body_bytes setting"
        )
        kind, code = "invalid_request_error", _HTTP_TYPES[413]
    elif status == 405:
        message = f"method {request.method} is not allowed on {request.url.path}"
        kind, code = "invalid_request_error", _HTTP_TYPES[405]
    else:
        message = str(exc.detail)
        kind = "invalid_request_error" if status < 500 else "server_error"
        code = _HTTP_TYPES.get(status)
    return Response(error_body(message, error_type=kind, code=code), status_code=status)


def _on_unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return Response(
        error_body(
            "the proxy hit an internal error; it is logged, please report it",
            error_type="server_error",
            code="internal_error",
        ),
        status_code=500,
    )


EXCEPTION_HANDLERS: Any = {
    MnemoError: _on_mnemo_error,
    HTTPException: _on_http_exception,
    Exception: _on_unexpected,
}
