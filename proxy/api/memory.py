"""The memory API: /memory/ingest, /memory/search, /memory/preview, /memory/consolidate and
/memory/dead-letters/retry (an agent's memory, looked at and fixed by hand, is
proxy/api/agents.py's).

Bodies are typed (msgspec structs): Litestar validates them, and a bad one gets a 400 in
OpenAI's shape naming the field (proxy/edge/errors.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from mnemoproxy.memory import SCOPES, Turn
from mnemoproxy.proxy.api.models import (
    ConsolidationAnswer,
    IngestReport,
    PreviewAnswer,
    Requeued,
    SearchAnswer,
    SearchHit,
)
from mnemoproxy.proxy.edge.access import authorize, record_change
from mnemoproxy.proxy.edge.errors import error_responses
from mnemoproxy.proxy.edge.ids import MAX_ID_CHARS, normalised_id
from mnemoproxy.proxy.services import Services

MAX_INGEST_TURNS = 10_000
MAX_TITLE_CHARS = 300
# Dates outside these years are typos or attacks, and some date arithmetic overflows on them.
FIRST_YEAR, LAST_YEAR = 1900, 2999

Id = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_CHARS, pattern=r"\S")]
Scope = Literal["pinned", "identity", "episodes", "episode", "transcript", "documents"]
# The errors the schema documents: a body may be invalid, late, too large or not JSON, name
# an agent the key may not use, or come to a proxy with memory off.
ERRORS = error_responses(400, 401, 403, 408, 413, 415, 503)


class Moment(datetime):
    """A time a client sends: ISO 8601 text (a date or a date-time; naive means UTC) or unix
    seconds. Decoded by `decode_moment`, which Litestar is given as a type decoder."""


def decode_moment(_: type, value: Any) -> Moment:
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            moment = datetime.fromtimestamp(float(value), UTC)
        elif isinstance(value, str):
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        else:
            raise TypeError(value)
        if not FIRST_YEAR <= moment.astimezone(UTC).year <= LAST_YEAR:
            raise ValueError(value)
    except (ValueError, OverflowError, OSError, TypeError):
        # msgspec reports this message at the field's path (turns[3].date).
        raise ValueError(
            "must be an ISO 8601 date such as 2024-05-08T14:30:00Z, or unix seconds, "
            f"between the years {FIRST_YEAR} and {LAST_YEAR}"
        ) from None
    return Moment.fromtimestamp(moment.timestamp(), moment.tzinfo)


TYPE_DECODERS = [(lambda kind: kind is Moment, decode_moment)]


class IngestTurn(msgspec.Struct, forbid_unknown_fields=True):
    """A user message and its reply (either may be empty, not both)."""

    user: str = ""
    assistant: str = ""
    date: Moment | None = None

    def __post_init__(self) -> None:
        if not self.user.strip() and not self.assistant.strip():
            raise ValueError("a turn needs user or assistant text")


class _Keyed(msgspec.Struct):
    """A body naming an agent (and maybe a conversation): the ids as the chat route keys
    them (proxy/edge/ids.py)."""

    def __post_init__(self) -> None:
        for name in ("agent_id", "conversation_id"):
            value = getattr(self, name, None)
            if isinstance(value, str):
                setattr(self, name, normalised_id(value))


class IngestBody(_Keyed):
    """A conversation to store, distilled now unless `skip_extraction`. Turns at the start
    of `turns` that the conversation holds already (in that order) are skipped, so sending
    it again adds nothing; `title` names it (shown by the inspector)."""

    agent_id: Id
    conversation_id: Id
    turns: Annotated[list[IngestTurn], msgspec.Meta(min_length=1, max_length=MAX_INGEST_TURNS)]
    session_date: Moment | None = None
    skip_extraction: bool = False
    title: Annotated[str, msgspec.Meta(max_length=MAX_TITLE_CHARS)] = ""


class SearchBody(_Keyed):
    """A query over one agent's memory: `scope` narrows it to one kind of item, `days` to
    the recent ones."""

    agent_id: Id
    query: str
    scope: Scope | None = None
    top_k: Annotated[int, msgspec.Meta(ge=1, le=200)] = 10
    days: Annotated[float, msgspec.Meta(gt=0, le=36500)] | None = None


class PreviewBody(_Keyed):
    """Chat messages, as a chat completion request would send them."""

    agent_id: Id
    messages: Annotated[list[dict[str, Any]], msgspec.Meta(min_length=1)]


class AgentBody(_Keyed):
    """A body that may name one agent; without it, the route acts on every agent."""

    agent_id: Id | None = None


@post("/memory/ingest", status_code=200, responses=ERRORS)
async def ingest(
    request: Request[Any, Any, Any], data: JSONBody[IngestBody],
    services: NamedDependency[Services],
) -> IngestReport:
    """Store a conversation and distil it now (awaited): reads see it as they will later."""
    authorize(request, data.agent_id)
    memory, _ = services.require_memory()
    result = await memory.ingest(
        data.agent_id,
        data.conversation_id,
        [Turn(t.user, t.assistant, t.date) for t in data.turns],
        session_date=data.session_date,
        skip_extraction=data.skip_extraction,
        title=" ".join(data.title.split()),
    )
    await record_change(request, memory, data.agent_id)
    return IngestReport.of(data.agent_id, data.conversation_id, result)


@post("/memory/search", status_code=200, responses=ERRORS)
async def memory_search(
    request: Request[Any, Any, Any], data: JSONBody[SearchBody],
    services: NamedDependency[Services],
) -> SearchAnswer:
    """The agent's items best matching the query (hybrid search), best first."""
    authorize(request, data.agent_id)
    memory, _ = services.require_memory()
    results = await memory.search(
        data.agent_id,
        data.query,
        kinds=SCOPES[data.scope] if data.scope else None,
        top_k=data.top_k,
        days=data.days,
    )
    return SearchAnswer(data.agent_id, data.query, [SearchHit.of(r) for r in results])


@post("/memory/preview", status_code=200, responses=ERRORS)
async def preview(
    request: Request[Any, Any, Any], data: JSONBody[PreviewBody],
    services: NamedDependency[Services],
) -> PreviewAnswer:
    """The gate's decision and the block that would be injected, without calling the
    upstream."""
    authorize(request, data.agent_id)
    _, read_path = services.require_memory()
    result = await read_path.prepare(data.agent_id, data.messages)
    return PreviewAnswer.of(data.agent_id, result)


@post("/memory/consolidate", status_code=200, responses=ERRORS)
async def consolidate_now(
    request: Request[Any, Any, Any], services: NamedDependency[Services],
    data: JSONBody[AgentBody | None] = None,
) -> ConsolidationAnswer:
    """Run a consolidation pass now, for one agent (`agent_id`) or all."""
    agent_id = data.agent_id if data else None
    authorize(request, agent_id)
    memory, _ = services.require_memory()
    report = await memory.consolidate(agent_id)
    await record_change(request, memory, agent_id)
    return ConsolidationAnswer.of(report)


@post("/memory/dead-letters/retry", status_code=200, responses=ERRORS)
async def retry_dead_letters(
    request: Request[Any, Any, Any], services: NamedDependency[Services],
    data: JSONBody[AgentBody | None] = None,
) -> Requeued:
    """Distil dead-lettered sessions again (one agent's with `agent_id`, or all), each with
    distill_max_attempts fresh tries, in the background: /health shows their progress."""
    agent_id = data.agent_id if data else None
    authorize(request, agent_id)
    memory, _ = services.require_memory()
    sessions, turns = await memory.retry_dead_letters(agent_id)
    await record_change(request, memory, agent_id)
    return Requeued("ok", sessions, turns)


MEMORY_ROUTES = [ingest, memory_search, preview, consolidate_now, retry_dead_letters]
