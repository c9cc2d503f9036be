"""The one exception tree of mnemoproxy.

    MnemoError                      base; carries an HTTP status and OpenAI error fields
    ├── SettingError                an invalid setting; stops start-up
    ├── InvalidRequest      400     a body the client must fix
    ├── NotFound            404     an unknown route or resource
    ├── PayloadTooLarge     413     a body over max_body_bytes
    ├── UpstreamError       502     the model server could not be reached or broke the reply
    │   └── UpstreamTimeout 504     the model server did not answer in time
    ├── MemoryUnavailable   503     memory is disabled on this proxy
    └── MemoryFailure       500     the memory store failed (the chat path fails open instead)

Third-party exceptions are translated into these where they enter the code, so that
callers never have to know which library raised.
"""

from __future__ import annotations


class MnemoError(Exception):
    status = 500
    error_type = "server_error"
    code: str | None = None

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code


class SettingError(MnemoError):
    error_type = "configuration_error"
    code = "invalid_setting"


class InvalidRequest(MnemoError):
    status = 400
    error_type = "invalid_request_error"
    code = "invalid_request"


class NotFound(MnemoError):
    status = 404
    error_type = "invalid_request_error"
    code = "not_found"


class PayloadTooLarge(MnemoError):
    status = 413
    error_type = "invalid_request_error"
    code = "payload_too_large"


class UpstreamError(MnemoError):
    status = 502
    error_type = "upstream_error"
    code = "upstream_unreachable"


class UpstreamTimeout(UpstreamError):
    status = 504
    code = "upstream_timeout"


class MemoryUnavailable(MnemoError):
    status = 503
    error_type = "memory_error"
    code = "memory_disabled"


class MemoryFailure(MnemoError):
    error_type = "memory_error"
    code = "memory_failure"
