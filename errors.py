"""The one exception tree of mnemoproxy: what went wrong, in the domain's own words.

    MnemoError                  base: a message that says what to do, and the `param` at fault
    ├── SettingError            a setting is invalid; start-up stops
    ├── InvalidArgument         input the caller must fix (a body, an id, a search option)
    │   ├── MethodNotAllowed    ┐
    │   ├── BodyTimeout         │ the HTTP edge's own (proxy/edge/errors.py): a method the
    │   ├── NotAuthenticated    │ route does not take, a body too slow to arrive, no key
    │   ├── Forbidden           │ or an unknown one, a key not allowed this, a body that
    │   ├── UnsupportedMediaType│ is not JSON, too many uploads at once from one key
    │   └── TooManyRequests     ┘
    ├── NotFound                no such route, agent or item
    ├── TooLarge                a body or a text over a limit
    ├── UpstreamError           a model server could not be reached or broke its reply
    │   └── UpstreamTimeout     it did not answer in time
    ├── MemoryDisabled          memory is off on this proxy
    ├── MemoryFailure           the memory store failed
    ├── DistillError            the core model answered, but nothing usable
    └── CoreModelCapped         the core model's tokens for today are spent (never HTTP:
                                its callers fall back to their rule-based twins)

memory/ and gate/ raise these and know nothing of HTTP; proxy/edge/errors.py maps each class to
its status and OpenAI error type in one table. Third-party exceptions are translated where
they enter the code, so callers never have to know which library raised.
"""

from __future__ import annotations


class MnemoError(Exception):
    # A stable machine-readable code for the error body; subclasses set their own.
    code: str = "internal_error"

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code


class SettingError(MnemoError):
    code = "invalid_setting"


class InvalidArgument(MnemoError):
    code = "invalid_request"


class NotFound(MnemoError):
    code = "not_found"


class TooLarge(MnemoError):
    code = "payload_too_large"


class UpstreamError(MnemoError):
    code = "upstream_unreachable"


class UpstreamTimeout(UpstreamError):
    code = "upstream_timeout"


class MemoryDisabled(MnemoError):
    code = "memory_disabled"


class MemoryFailure(MnemoError):
    code = "memory_failure"


class DistillError(MnemoError):
    """The core model answered, but its output could not be used (empty or garbage).

    Retrying may help (models are not deterministic); `reason` says what was wrong, so a
    dead-lettered session can be diagnosed."""

    code = "distill_failed"

    def __init__(self, reason: str):
        super().__init__(f"Distiller output was unusable: {reason}")
        self.reason = reason


class CoreModelCapped(MnemoError):
    """The core model was not called: today's `core_model_daily_tokens` are spent. Whoever
    asked falls back to doing without it (the rule distiller, the heuristic gate)."""

    code = "core_model_capped"
