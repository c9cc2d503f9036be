"""The JSON answers of the proxy's own routes (the memory API, the management routes and
/health) as msgspec structs: Litestar encodes them as they are and describes them in the
OpenAPI schema (/schema/openapi.json), their docstrings as descriptions.

A struct's fields are the answer's keys, in order. Where a key is sometimes absent (a
distillation's `reason`), the struct omits its default (`omit_defaults`), so the schema
says "optional" and the wire shows no null that was never sent. Structs are built field by
field, never converted: msgspec.convert would turn an int into 1.0 where a float is typed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

import msgspec

from mnemoproxy.gate import ReadResult, looks_like_instructions
from mnemoproxy.memory import (
    Change,
    ConsolidationReport,
    Fact,
    IngestResult,
    Kind,
    SearchResult,
    StoredChunk,
    StoredDocument,
)
from mnemoproxy.proxy.relay.probe import UpstreamProbe

FactKind = Literal["pinned", "identity"]
NextCursor = Annotated[int | None, msgspec.Meta(
    description="pass it as `cursor` for the next page; null: this was the last")]
Flagged = Annotated[bool, msgspec.Meta(
    description="the text reads like instructions to a model (the memory block quotes it)")]


def page_cursor(ids: list[int], limit: int) -> int | None:
    """The `next_cursor` of a page of `ids` asked for `limit` at most: the last id when the
    page is full (there may be more), None when it is not."""
    return ids[-1] if len(ids) == limit else None


# -- facts -----------------------------------------------------------------------------


class FactView(msgspec.Struct):
    """One fact: current or superseded (`superseded_by` names the fact that replaced it),
    how sure memory is of it (`salience`, sources, uses) and whether it is pinned (`pinned`:
    kept by consolidation, which never fades nor evicts it whatever its age; the inspector
    calls this "keep", to tell it from the kind `pinned`). Times are unix seconds."""

    id: int
    kind: FactKind
    content: str
    flagged: Flagged
    status: Literal["current", "superseded"]
    salience: float
    source_count: int
    use_count: int
    conversation_id: str | None
    valid_from: float
    valid_to: float | None
    superseded_by: int | None
    created_at: float
    updated_at: float
    pinned: bool

    @classmethod
    def of(cls, fact: Fact, conversation_id: str | None = None) -> FactView:
        return cls(
            id=fact.id,
            kind=cast(FactKind, fact.kind),  # the store holds no other kind
            content=fact.content,
            flagged=looks_like_instructions(fact.content),
            status="current" if fact.valid_to is None else "superseded",
            salience=fact.salience,
            source_count=fact.source_count,
            use_count=fact.use_count,
            conversation_id=conversation_id,
            valid_from=fact.valid_from,
            valid_to=fact.valid_to,
            superseded_by=fact.superseded_by,
            created_at=fact.created_at,
            updated_at=fact.updated_at,
            pinned=fact.pinned_at is not None,
        )


class FactDetail(FactView):
    """One fact with the session that stated it and its history: the values it replaced
    and those that replaced it, oldest first (the fact itself among them)."""

    source_session_id: int | None
    history: list[FactView]

    @classmethod
    def of_history(cls, fact: Fact, history: list[Fact]) -> FactDetail:
        return cls(**msgspec.structs.asdict(FactView.of(fact)),
                   source_session_id=fact.source_session_id,
                   history=[FactView.of(f) for f in history])


class FactPage(msgspec.Struct):
    """A page of an agent's facts in the order they were stored."""

    agent_id: str
    facts: list[FactView]
    next_cursor: NextCursor


class FactDeleted(msgspec.Struct):
    """The fact is deleted: reads no longer see it, nor the transcript lines that stated it
    (`lines_retracted`: they stay in the transcript, marked retracted); its row stays as
    history."""

    agent_id: str
    fact_id: int
    deleted: Literal[True]
    lines_retracted: int = 0


# -- agents ----------------------------------------------------------------------------


class AgentSummary(msgspec.Struct):
    """An agent and its counts: current facts, live episodes, turns (a user message and its
    reply), the messages they hold, and when it was last active (unix seconds)."""

    id: str
    facts: int
    episodes: int
    turns: int
    messages: int
    last_active: float


class AgentList(msgspec.Struct):
    """The agents the caller may see, the most recently active first."""

    agents: list[AgentSummary]


class AgentDetail(AgentSummary):
    """An agent's counts and its identity facts."""

    identity: list[str]


class Deletions(msgspec.Struct):
    """How many of each were deleted for good."""

    messages: int
    facts: int
    episodes: int


class AgentDeletions(Deletions):
    """How many of each were deleted for good, sessions included."""

    sessions: int


class AgentForgotten(msgspec.Struct):
    """The agent is forgotten completely, with no undo."""

    agent_id: str
    forgotten: AgentDeletions


class Imported(msgspec.Struct):
    """How many of each an import added (what memory already held is not counted)."""

    sessions: int
    messages: int
    facts: int
    episodes: int
    entities: int
    documents: int
    procedures: int


class ImportReport(msgspec.Struct):
    """What an import added to the agent."""

    agent_id: str
    added: Imported


# -- sessions and episodes ---------------------------------------------------------------


class SessionSummary(msgspec.Struct):
    """One session: its conversation id, its `title` (an imported conversation's own; ""
    when it has none), the start of its first user message (`first_message`, at most 200
    characters), when it started and had its last turn, when it was distilled (null: not
    yet), and how many messages it holds."""

    id: int
    conversation_id: str
    title: str
    first_message: str
    started_at: float
    last_turn_at: float | None
    distilled_at: float | None
    messages: int


class SessionPage(msgspec.Struct):
    """A page of an agent's sessions in the order they began."""

    agent_id: str
    sessions: list[SessionSummary]
    next_cursor: NextCursor


class TranscriptLine(msgspec.Struct):
    """One verbatim message of a session; a turn is a user message and its reply.
    `retracted`: a fact drawn from it was deleted or edited by hand, so it is no longer
    served as memory."""

    turn_index: int
    role: Literal["user", "assistant"]
    content: str
    at: float
    retracted: bool = False


class SessionTranscript(msgspec.Struct):
    """One session's verbatim transcript."""

    agent_id: str
    session_id: int
    messages: list[TranscriptLine]


class SessionForgotten(msgspec.Struct):
    """The session is forgotten for good: its messages, episodes and the facts only it
    stated."""

    agent_id: str
    session_id: int
    forgotten: Deletions


class EpisodeView(msgspec.Struct):
    """One episode: what a session was about, distilled."""

    id: int
    session_id: int | None
    summary: str
    topics: list[str]
    entities: list[str]
    decisions: list[str]
    action_items: list[str]
    salience: float
    started_at: float | None
    ended_at: float | None
    created_at: float


class EpisodePage(msgspec.Struct):
    """A page of an agent's live episodes in the order they were stored."""

    agent_id: str
    episodes: list[EpisodeView]
    next_cursor: NextCursor


class EpisodeDeleted(msgspec.Struct):
    """The episode is deleted: reads no longer see it; its row stays as history."""

    agent_id: str
    episode_id: int
    deleted: Literal[True]


# -- the memory API ----------------------------------------------------------------------


class DistillReport(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the distillation did. `reason`, `episode_id`, `retry_in_seconds` and `fallback`
    are present only when they apply."""

    status: Literal["distilled", "nothing_pending", "skipped", "failed", "dead_lettered",
                    "deferred"]
    reason: str | None = None
    episode_id: int | None = None
    facts_added: int
    facts_merged: int
    facts_superseded: int
    facts_historical: int
    facts_ungrounded: int
    identity_facts: int
    turns: int
    retry_in_seconds: float | None = None
    fallback: str | None = None  # distilled by the rules standing in for the core model: why


class IngestReport(msgspec.Struct):
    """The conversation is stored and, unless skipped, distilled. `conversation` says what
    happened to it: `new`, `updated` (turns added to one memory held already) or
    `unchanged` (it held every turn sent); `turns_skipped` counts the turns it held."""

    status: Literal["ok"]
    agent_id: str
    conversation_id: str
    conversation: Change
    turns_ingested: int
    turns_skipped: int
    distillation: DistillReport

    @classmethod
    def of(cls, agent_id: str, conversation_id: str, result: IngestResult) -> IngestReport:
        return cls("ok", agent_id, conversation_id, result.conversation,
                   result.turns_ingested, result.turns_skipped,
                   DistillReport(**result.distillation.as_dict()))


class SearchHit(msgspec.Struct):
    """One item memory found, with its score's components and where it came from
    (`provenance`: its session, turn or conversation, by kind). `at` is unix seconds."""

    kind: Kind
    item_id: int
    text: str
    score: float
    components: dict[str, float]
    provenance: dict[str, Any]
    at: float | None
    flagged: Flagged

    @classmethod
    def of(cls, result: SearchResult) -> SearchHit:
        return cls(result.kind, result.item_id, result.text, result.score, result.components,
                   result.provenance, result.at, looks_like_instructions(result.text))


class SearchAnswer(msgspec.Struct):
    """The agent's items best matching the query, best first."""

    agent_id: str
    query: str
    results: list[SearchHit]


class PreviewItem(msgspec.Struct):
    """An item the block would hold, as the model would read it."""

    kind: Kind
    item_id: int
    text: str


class PreviewAnswer(msgspec.Struct):
    """What memory would do for these messages: the gate's decision (`section`: which part
    of memory, or `none`; why; how sure) and the block it would inject (null: none)."""

    agent_id: str
    section: str
    reason: str
    confidence: Literal["high", "medium", "low"] | None
    inject: bool
    block: str | None
    tokens: int
    items: list[PreviewItem]

    @classmethod
    def of(cls, agent_id: str, result: ReadResult) -> PreviewAnswer:
        decided = result.as_dict()
        items = [PreviewItem(**item) for item in decided.pop("items")]
        return cls(agent_id=agent_id, items=items, **decided)


class ConsolidationAnswer(msgspec.Struct):
    """What the consolidation pass changed, and how long it took."""

    status: Literal["ok"]
    agents: int
    facts_evicted: int
    episodes_merged: int
    episodes_pruned: int
    facts_promoted: int
    seconds: float

    @classmethod
    def of(cls, report: ConsolidationReport) -> ConsolidationAnswer:
        return cls(status="ok", **report.as_dict())


class Requeued(msgspec.Struct):
    """Dead-lettered sessions (and their turns) queued again for distillation."""

    status: Literal["ok"]
    sessions: int
    turns: int


# -- /health -----------------------------------------------------------------------------


class ReadsSinceStart(msgspec.Struct):
    """How the chat path's memory reads went since start-up, and the tokens they added."""

    injected: int
    injected_tokens: int
    not_needed: int
    deadline_missed: int
    failed: int


class CoreModelBudget(msgspec.Struct):
    """The core model's tokens, as the server reported them in its usage: today's (UTC)
    against `core_model_daily_tokens` (0: no cap), `capped` once they reach it (sessions are
    then distilled by the rules and the LLM gate keeps the heuristic's decision until the
    day ends), and since start-up by purpose (distill, relevance_gate), with the calls
    refused past the cap."""

    daily_tokens: int
    tokens_today: int
    capped: bool
    tokens: dict[str, dict[str, int]]  # purpose -> {"prompt": n, "completion": n}
    refused_calls: dict[str, int]


class MemoryHealth(msgspec.Struct):
    """The store's counts: items, signals waiting for distillation or dead-lettered,
    embeddings, chat turns being stored; the reads and the distillations (by outcome;
    `fallback`: by the rules standing in for a capped core model) since start-up, and the
    core model's token budget."""

    db_path: str
    agents: int
    transcript_messages: int
    facts: int
    episodes: int
    pending_signals: int
    dead_signals: int
    embedded_items: int
    embedding_failures: int
    embedding_model: str
    records_in_flight: int
    records_waited_out: int
    status: Literal["ok"]
    reads: ReadsSinceStart
    distillations: dict[str, int]
    core_model: CoreModelBudget


class UpstreamHealth(msgspec.Struct):
    """The upstream model server: its URL (credentials hidden) and whether it accepted a
    connection at the proxy's last look (at start-up, then at most every 30 s in the
    background; null before the first): `error` says why not, `checked_at` when (unix
    seconds)."""

    url: str
    reachable: bool | None
    error: str | None
    checked_at: float | None

    @classmethod
    def of(cls, probe: UpstreamProbe) -> UpstreamHealth:
        last = probe.latest()
        return cls(probe.url, last.reachable, last.error, last.checked_at)


class Health(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Liveness: `status` is ok while the proxy serves, whatever the upstream does. Admin
    callers (anyone, without keys) also get the upstream's state and memory's (`disabled`
    when memory is off); other callers get `status` alone."""

    status: Literal["ok"]
    upstream: UpstreamHealth | None = None
    memory: MemoryHealth | Literal["disabled"] | None = None


# -- documents (a knowledge base per agent) ----------------------------------------------


class DocumentView(msgspec.Struct):
    """One document of the agent's knowledge base: its title, the file it came from
    (`source`, empty for a text sent as JSON), how it was read (`media_type`), its size in
    bytes as sent, how many chunks it was cut into, and when it was stored (unix seconds)."""

    id: int
    title: str
    source: str
    media_type: str
    size_bytes: int
    chunks: int
    created_at: float

    @classmethod
    def of(cls, document: StoredDocument) -> DocumentView:
        return cls(document.id, document.title, document.source, document.media_type,
                   document.size_bytes, document.chunks, document.created_at)


class DocumentChunk(msgspec.Struct):
    """One chunk of a document, as search finds it: its place in the document (`position`
    from 0, the `heading` path with " › " between levels, the PDF `page`) and its text."""

    id: int
    position: int
    heading: str
    page: int | None
    text: str
    flagged: Flagged

    @classmethod
    def of(cls, chunk: StoredChunk) -> DocumentChunk:
        return cls(chunk.id, chunk.position, chunk.heading, chunk.page, chunk.content,
                   looks_like_instructions(chunk.content))


class DocumentStored(msgspec.Struct):
    """The document is stored, cut into chunks and embedded: searches see it now.
    `status`: `new`; `updated` when it replaced the agent's document of the same file name
    (other content); `unchanged` when the agent held these very bytes already (nothing was
    stored again: `document` is the one held)."""

    agent_id: str
    document: DocumentView
    status: Change = "new"


class DocumentDetail(msgspec.Struct):
    """One document with its chunks in order."""

    agent_id: str
    document: DocumentView
    chunks: list[DocumentChunk]


class DocumentPage(msgspec.Struct):
    """A page of the agent's documents in the order they were stored."""

    agent_id: str
    documents: list[DocumentView]
    next_cursor: NextCursor


class DocumentDeleted(msgspec.Struct):
    """The document is deleted for good: its chunks, their search entries and vectors."""

    agent_id: str
    document_id: int
    deleted: Literal[True]
    chunks: int
