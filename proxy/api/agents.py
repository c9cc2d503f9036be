"""An agent's memory, looked at and fixed by hand: the agents, one agent's facts, sessions
and episodes a page at a time, facts added, edited and deleted, the agent exported,
imported and forgotten. Every route is agent-scoped (proxy/edge/access.py decides who may) and
every change lands in the agent's processing log with the key that made it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, Response, route
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Operation, RequestBody, Schema
from litestar.params import JSONBody, PathParameter, QueryParameter

from mnemoproxy.errors import InvalidArgument, NotFound
from mnemoproxy.proxy.api.models import (
    AgentDeletions,
    AgentDetail,
    AgentForgotten,
    AgentList,
    AgentSummary,
    Deletions,
    EpisodeDeleted,
    EpisodePage,
    EpisodeView,
    FactDeleted,
    FactDetail,
    FactKind,
    FactPage,
    FactView,
    Imported,
    ImportReport,
    SessionForgotten,
    SessionPage,
    SessionSummary,
    SessionTranscript,
    TranscriptLine,
    page_cursor,
)
from mnemoproxy.proxy.edge.access import caller, record_change
from mnemoproxy.proxy.edge.errors import error_responses
from mnemoproxy.proxy.edge.ids import MAX_ID_CHARS
from mnemoproxy.proxy.edge.json_body import require_shallow
from mnemoproxy.proxy.services import Services

PAGE_LIMIT = 500
JSON_LINES = "application/x-ndjson"
AgentId = Annotated[str, PathParameter(max_length=MAX_ID_CHARS)]
Limit = Annotated[int, QueryParameter(ge=1, le=PAGE_LIMIT)]
# SQLite integers are 64-bit: a larger id or cursor is a 400, not an overflow.
MAX_ROW_ID = 2**63 - 1
Cursor = Annotated[int, QueryParameter(ge=0, le=MAX_ROW_ID)]
ItemId = Annotated[int, PathParameter(ge=1, le=MAX_ROW_ID)]
Salience = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
Content = Annotated[str, msgspec.Meta(min_length=1, max_length=10_000, pattern=r"\S")]
# The errors the schema documents: a route may name an agent the key may not use, or one
# memory has never seen.
ERRORS = error_responses(400, 401, 403, 404, 503)
# A body may also come late, too large, or not as JSON; the routes taking one create the
# agent when new, but for PATCH, which needs the fact.
BODY_ERRORS = error_responses(400, 401, 403, 408, 413, 415, 503)


class NewFact(msgspec.Struct, forbid_unknown_fields=True):
    """A fact stated by hand."""

    content: Content
    kind: FactKind = "pinned"
    salience: Salience = 0.5
    # Kept by consolidation however old or faint (the inspector calls it "keep").
    pinned: bool = False


class FactEdit(msgspec.Struct, forbid_unknown_fields=True):
    """New content supersedes the fact; a salience or `pinned` alone is set in place."""

    content: Content | None = None
    salience: Salience | None = None
    pinned: bool | None = None



@dataclass
class JsonLinesBody(Operation):
    """The import route as the schema shows it: its body is JSON Lines, read raw by the
    handler (a typed body would be parsed as one JSON value), so it is described here."""

    def __post_init__(self) -> None:
        self.request_body = RequestBody(
            required=True,
            description="the records of an export (GET /agents/{agent_id}/export), one JSON "
                        "object per line",
            content={JSON_LINES: OpenAPIMediaType(schema=Schema(type=OpenAPIType.STRING))},
        )


@route("/agents", http_method=["GET", "HEAD"], responses=error_responses(401, 503))
async def agents(
    request: Request[Any, Any, Any], services: NamedDependency[Services]
) -> AgentList:
    """Every agent the caller may use, with its counts."""
    memory, _ = services.require_memory()
    who = caller(request)
    return AgentList([AgentSummary(**a) for a in await memory.agents() if who.may_use(a["id"])])


@route("/agents/{agent_id:str}/facts", http_method=["GET", "HEAD"], responses=ERRORS)
async def agent_facts(
    request: Request[Any, Any, Any],
    agent_id: Annotated[str, PathParameter(max_length=MAX_ID_CHARS)],
    services: NamedDependency[Services],
    kind: Annotated[Literal["identity", "pinned"] | None, QueryParameter()] = None,
    status: Annotated[Literal["current", "superseded", "all"], QueryParameter()] = "current",
    q: Annotated[str | None, QueryParameter(max_length=1000)] = None,
    limit: Annotated[int, QueryParameter(ge=1, le=PAGE_LIMIT)] = 100,
    cursor: Cursor = 0,
) -> FactPage:
    """The agent's facts in the order they were stored, a page at a time: pass the answer's
    `next_cursor` as `cursor` for the next page (null: no more)."""
    agent_id, memory = services.agent_memory(request, agent_id)
    rows = await memory.facts(
        agent_id, kind=kind, status=status, text=q, limit=limit, after_id=cursor
    )
    return FactPage(
        agent_id,
        [FactView.of(fact, conversation_id) for fact, conversation_id in rows],
        next_cursor=page_cursor([fact.id for fact, _ in rows], limit),
    )


@route("/agents/{agent_id:str}", http_method=["DELETE"], status_code=200, responses=ERRORS)
async def forget_agent(
    request: Request[Any, Any, Any],
    agent_id: Annotated[str, PathParameter(max_length=MAX_ID_CHARS)],
    services: NamedDependency[Services],
) -> AgentForgotten:
    """Forget the agent completely (rows, search entries, vectors, index files); there is
    no undo. What was deleted is answered; the server's audit log keeps who asked."""
    agent_id, memory = services.agent_memory(request, agent_id)
    forgotten = await memory.forget_agent(agent_id)
    if forgotten is None:
        raise NotFound(f"memory holds no agent {agent_id!r}", param="agent_id")
    await record_change(request, memory, None, forgotten=agent_id)
    return AgentForgotten(agent_id, AgentDeletions(**forgotten))


@route("/agents/{agent_id:str}/export", http_method=["GET"], media_type=JSON_LINES,
       response_description="one export record (JSON) per line, each with its `type`",
       responses=ERRORS)
async def export_agent(
    request: Request[Any, Any, Any],
    agent_id: Annotated[str, PathParameter(max_length=MAX_ID_CHARS)],
    services: NamedDependency[Services],
) -> Response[bytes]:
    """Everything of the agent but vectors, as JSON Lines (memory/store/management/portable.py)."""
    agent_id, memory = services.agent_memory(request, agent_id)
    records = await memory.export_agent(agent_id)
    if records is None:
        raise NotFound(f"memory holds no agent {agent_id!r}", param="agent_id")
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return Response(body.encode(), media_type=JSON_LINES)


@route("/agents/{agent_id:str}/import", http_method=["POST"], status_code=200,
       operation_class=JsonLinesBody, responses=BODY_ERRORS)
async def import_agent(
    request: Request[Any, Any, Any],
    agent_id: Annotated[str, PathParameter(max_length=MAX_ID_CHARS)],
    services: NamedDependency[Services],
) -> ImportReport:
    """Merge an export (JSON Lines) into the agent, which is created when new."""
    agent_id, memory = services.agent_memory(request, agent_id)
    records = []
    body = await request.body()
    require_shallow(body)
    for number, line in enumerate(body.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise InvalidArgument(f"line {number} is not JSON", param="body") from None
        if not isinstance(record, dict):
            raise InvalidArgument(f"line {number} is not a JSON object", param="body")
        records.append(record)
    added = await memory.import_agent(agent_id, records)
    await record_change(request, memory, agent_id)
    return ImportReport(agent_id, Imported(**added))


@route("/agents/{agent_id:str}", http_method=["GET", "HEAD"], responses=ERRORS)
async def agent(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services]
) -> AgentDetail:
    """The agent's counts and identity facts."""
    agent_id, memory = services.agent_memory(request, agent_id)
    return AgentDetail(**await memory.agent(agent_id))


@route("/agents/{agent_id:str}/sessions", http_method=["GET", "HEAD"], responses=ERRORS)
async def agent_sessions(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services],
    limit: Limit = 100, cursor: Cursor = 0,
) -> SessionPage:
    """The agent's sessions in the order they began, a page at a time."""
    agent_id, memory = services.agent_memory(request, agent_id)
    rows = await memory.sessions(agent_id, limit=limit, after_id=cursor)
    return SessionPage(agent_id, [SessionSummary(**r) for r in rows],
                       next_cursor=page_cursor([r["id"] for r in rows], limit))


@route("/agents/{agent_id:str}/sessions/{session_id:int}", http_method=["GET", "HEAD"],
       responses=ERRORS)
async def agent_session(
    request: Request[Any, Any, Any], agent_id: AgentId, session_id: ItemId,
    services: NamedDependency[Services],
) -> SessionTranscript:
    """One session's verbatim transcript."""
    agent_id, memory = services.agent_memory(request, agent_id)
    messages = await memory.session_messages(agent_id, session_id)
    return SessionTranscript(agent_id, session_id, [TranscriptLine(**m) for m in messages])


@route("/agents/{agent_id:str}/episodes", http_method=["GET", "HEAD"], responses=ERRORS)
async def agent_episodes(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services],
    limit: Limit = 100, cursor: Cursor = 0,
) -> EpisodePage:
    """The agent's live episodes in the order they were stored, a page at a time."""
    agent_id, memory = services.agent_memory(request, agent_id)
    rows = await memory.episodes(agent_id, limit=limit, after_id=cursor)
    return EpisodePage(
        agent_id,
        [EpisodeView(id=e.id, session_id=e.session_id, summary=e.summary, topics=e.topics,
                     entities=e.entities, decisions=e.decisions, action_items=e.action_items,
                     salience=e.salience, started_at=e.started_at, ended_at=e.ended_at,
                     created_at=e.created_at) for e in rows],
        next_cursor=page_cursor([e.id for e in rows], limit),
    )


@route("/agents/{agent_id:str}/facts", http_method=["POST"], status_code=201,
       responses=BODY_ERRORS)
async def add_fact(
    request: Request[Any, Any, Any], agent_id: AgentId, data: JSONBody[NewFact],
    services: NamedDependency[Services],
) -> FactView:
    """A fact stated by hand; the agent is created if new."""
    agent_id, memory = services.agent_memory(request, agent_id)
    fact_id = await memory.add_fact(agent_id, data.content, kind=data.kind,
                                    salience=data.salience)
    if data.pinned:
        await memory.edit_fact(agent_id, fact_id, keep=True)
    await record_change(request, memory, agent_id)
    return FactView.of(await memory.fact(agent_id, fact_id))


@route("/agents/{agent_id:str}/facts/{fact_id:int}", http_method=["GET", "HEAD"],
       responses=ERRORS)
async def get_fact(
    request: Request[Any, Any, Any], agent_id: AgentId, fact_id: ItemId,
    services: NamedDependency[Services],
) -> FactDetail:
    """One fact with its history: the values it replaced and those that replaced it."""
    agent_id, memory = services.agent_memory(request, agent_id)
    fact = await memory.fact(agent_id, fact_id)
    history = await memory.fact_history(agent_id, fact_id)
    return FactDetail.of_history(fact, history)


@route("/agents/{agent_id:str}/sessions/{session_id:int}", http_method=["DELETE"],
       status_code=200, responses=ERRORS)
async def forget_session(
    request: Request[Any, Any, Any], agent_id: AgentId, session_id: ItemId,
    services: NamedDependency[Services],
) -> SessionForgotten:
    """Forget one session for good: its messages, its episodes, the facts only it stated."""
    agent_id, memory = services.agent_memory(request, agent_id)
    forgotten = await memory.forget_session(agent_id, session_id)
    await record_change(request, memory, agent_id)
    return SessionForgotten(agent_id, session_id, Deletions(**forgotten))


@route("/agents/{agent_id:str}/episodes/{episode_id:int}", http_method=["DELETE"],
       status_code=200, responses=ERRORS)
async def delete_episode(
    request: Request[Any, Any, Any], agent_id: AgentId, episode_id: ItemId,
    services: NamedDependency[Services],
) -> EpisodeDeleted:
    """Reads no longer see the episode; its row stays as history."""
    agent_id, memory = services.agent_memory(request, agent_id)
    await memory.delete_episode(agent_id, episode_id)
    await record_change(request, memory, agent_id)
    return EpisodeDeleted(agent_id, episode_id, deleted=True)


@route("/agents/{agent_id:str}/facts/{fact_id:int}", http_method=["PATCH"],
       responses={**BODY_ERRORS, **error_responses(404)})
async def edit_fact(
    request: Request[Any, Any, Any], agent_id: AgentId, fact_id: ItemId,
    data: JSONBody[FactEdit], services: NamedDependency[Services],
) -> FactView:
    """Edit the fact in place: it keeps its id. New content replaces its text (the old value
    stays in its `history`, and the transcript lines that stated it are no longer served);
    a salience or `pinned` (consolidation never fades nor evicts a pinned fact) is set as
    sent."""
    agent_id, memory = services.agent_memory(request, agent_id)
    if data.content is None and data.salience is None and data.pinned is None:
        raise InvalidArgument("send content, salience or pinned", param="content")
    current = await memory.edit_fact(agent_id, fact_id, content=data.content,
                                     salience=data.salience, keep=data.pinned)
    await record_change(request, memory, agent_id)
    return FactView.of(await memory.fact(agent_id, current))


@route("/agents/{agent_id:str}/facts/{fact_id:int}", http_method=["DELETE"], status_code=200,
       responses=ERRORS)
async def delete_fact(
    request: Request[Any, Any, Any], agent_id: AgentId, fact_id: ItemId,
    services: NamedDependency[Services],
) -> FactDeleted:
    """Reads no longer see the fact, nor the transcript lines it was drawn from (they stay
    in the transcript, marked retracted: forget the session to remove them); its row stays
    as history."""
    agent_id, memory = services.agent_memory(request, agent_id)
    retracted = await memory.delete_fact(agent_id, fact_id)
    await record_change(request, memory, agent_id)
    return FactDeleted(agent_id, fact_id, deleted=True, lines_retracted=retracted)


AGENT_ROUTES = [
    agents, agent, agent_facts, agent_sessions, agent_session, agent_episodes, add_fact,
    get_fact, edit_fact, delete_fact, forget_session, delete_episode, forget_agent,
    export_agent, import_agent,
]
