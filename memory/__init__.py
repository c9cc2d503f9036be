"""Memory's front door: everything outside memory/ imports from here and nothing deeper.

`Memory` is opened from settings and owns the store, the vector indexes, the embedding
worker, the write path and the consolidation schedule. The rest are the plain data and
contracts that cross the boundary, and the shared word handling.

    memory/
    ├── service.py      Memory: lifecycle, the chat path's reads and writes, upkeep
    ├── management.py   Memory's management operations (facts, sessions, documents, ...)
    ├── models.py       plain data crossing module boundaries
    ├── store/          every SQL statement, SQLite and PostgreSQL
    ├── search/         hybrid search, vectors, query terms, periods
    ├── write/          recording, debounce, fact merging, redaction, documents
    ├── distill/        the LLM and rule distillers
    ├── core_model/     the core model's client, budget, breaker and fallback
    ├── embedders/      wordllama, minilm, multilingual, openai, hashing
    ├── background/     embedding worker, helper process, ownership, consolidation
    └── text/           words, stems, stop words, sentences, dates
"""

from mnemoproxy.memory.background.consolidate import ConsolidationReport
from mnemoproxy.memory.core_model.client import CoreModel, JsonClient
from mnemoproxy.memory.models import KINDS, NEXT_TURN, SCOPES, Change, Kind, Turn
from mnemoproxy.memory.search.hybrid import SearchResult
from mnemoproxy.memory.service import Memory
from mnemoproxy.memory.store.conversations.threads import ThreadSummary
from mnemoproxy.memory.store.knowledge.documents import StoredChunk, StoredDocument
from mnemoproxy.memory.store.records import Fact
from mnemoproxy.memory.text.language import (
    detect_language,
    latin_language,
    script_language,
    word_languages,
)
from mnemoproxy.memory.text.rarity import everyday_zipf, zipf
from mnemoproxy.memory.text.segments import has_unspaced, unspaced_terms
from mnemoproxy.memory.text.sentences import sentence_spans, sentences
from mnemoproxy.memory.text.words import CHATTER, STOP_WORDS, WORD, content_words, stem
from mnemoproxy.memory.write.documents import DOCUMENT_EXTENSIONS
from mnemoproxy.memory.write.pipeline import DistillOutcome, IngestResult

__all__ = [
    "CHATTER",
    "DOCUMENT_EXTENSIONS",
    "KINDS",
    "NEXT_TURN",
    "SCOPES",
    "STOP_WORDS",
    "WORD",
    "Change",
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
    "content_words",
    "detect_language",
    "everyday_zipf",
    "has_unspaced",
    "latin_language",
    "script_language",
    "sentence_spans",
    "sentences",
    "stem",
    "unspaced_terms",
    "word_languages",
    "zipf",
]
