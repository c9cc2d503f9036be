"""Heavy resources (models, tokenizers, matchers) built on first use, once, from any thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

_T = TypeVar("_T")


class LazyResource(Generic[_T]):
    """Builds a heavy object on first use, once, even when several threads ask at once.

    Keeps model loading out of import and construction time, so start-up stays fast and a
    backend that is configured but never used costs nothing.
    """

    def __init__(self, build: Callable[[], _T]):
        self._build = build
        self._value: _T | None = None
        self._lock = threading.Lock()

    def get(self) -> _T:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._build()
                value = self._value
        return value
