"""Memory's front door: everything outside memory/ imports from here and nothing deeper.

`Memory` is opened from settings and owns the store, the vector indexes, the embedding
worker, the write path and the consolidation schedule. The rest are the plain data and
contracts that cross the boundary.
"""

from mnemoproxy.memory.background.consolidate import ConsolidationReport
from mnemoproxy.memory.core_model.client import CoreModel, JsonClient
from mnemoproxy.memory.models import KINDS, SCOPES, Kind, Turn
from mnemoproxy.memory.search.hybrid import SearchResult
from mnemoproxy.memory.service import Memory
from mnemoproxy.memory.store.conversations.threads import ThreadSummary
from mnemoproxy.memory.store.knowledge.documents import StoredChunk, StoredDocument
from mnemoproxy.memory.store.records import Fact
from mnemoproxy.memory.write.documents import DOCUMENT_EXTENSIONS
from mnemoproxy.memory.write.pipeline import DistillOutcome, IngestResult

__all__ = [
    "DOCUMENT_EXTENSIONS",
    "KINDS",
    "SCOPES",
    "ConsolidationReport",
    "CoreModel",
    "DistillOutcome",
    "Fact",
    "IngestResult",
    "JsonClient",
    "Kind",
    "Memory",
    "SearchResult",
    "StoredChunk",
    "StoredDocument",
    "ThreadSummary",
    "Turn",
]
