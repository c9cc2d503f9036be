"""What the routes are given: the collaborators created in the app's lifespan."""

from __future__ import annotations

from dataclasses import dataclass, field

from mnemoproxy.config.settings import Settings
from mnemoproxy.errors import MemoryDisabled
from mnemoproxy.gate import ReadPath
from mnemoproxy.memory import Memory
from mnemoproxy.proxy.keys import KeyFile
from mnemoproxy.proxy.metrics import Metrics
from mnemoproxy.proxy.upstream import Upstream


@dataclass
class Services:
    settings: Settings
    upstream: Upstream
    memory: Memory | None = None  # None when memory is disabled
    read_path: ReadPath | None = None
    metrics: Metrics = field(default_factory=Metrics)
    keys: KeyFile | None = None  # the inspector's sign-in checks a key typed into it

    def require_memory(self) -> tuple[Memory, ReadPath]:
        if self.memory is None or self.read_path is None:
            raise MemoryDisabled("memory is disabled on this proxy; start it with enabled = true")
        return self.memory, self.read_path
