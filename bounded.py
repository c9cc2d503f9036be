"""A dict that keeps its most recently used entries only.

For caches keyed by what a client can mint (agent ids, session ids): an entry per id ever
seen would grow with every id a client makes up, and nothing would ever shrink it.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar, overload

_K = TypeVar("_K")
_V = TypeVar("_V")
_D = TypeVar("_D")


class LruDict(OrderedDict[_K, _V]):
    """At most `max_entries` entries: storing one more forgets the least recently stored or
    read (`get`, `[]`) one. A plain dict otherwise (`pop`, `in`, iteration)."""

    def __init__(self, max_entries: int) -> None:
        super().__init__()
        self.max_entries = max_entries

    def __getitem__(self, key: _K) -> _V:
        value = super().__getitem__(key)
        self.move_to_end(key)
        return value

    @overload
    def get(self, key: _K, default: None = None) -> _V | None: ...
    @overload
    def get(self, key: _K, default: _V | _D) -> _V | _D: ...

    def get(self, key: _K, default: object = None) -> object:
        if key in self:
            return self[key]
        return default

    def __setitem__(self, key: _K, value: _V) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.max_entries:
            self.popitem(last=False)
