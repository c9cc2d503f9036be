"""The inspector's pages that show memory: the agents; an agent in tabs (overview with its
identity, facts, episodes, sessions, documents, procedures, each with its count); a fact
with its history; a session with its conversation and what memory drew from it; a
document with its chunks; search, each result linked to where it came from and explained
in words; the preview of the block a message would get."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, Response, get
from litestar.di import NamedDependency
from litestar.params import QueryParameter
from litestar.response import Redirect

from mnemoproxy.errors import InvalidArgument, NotFound
from mnemoproxy.gate import looks_like_instructions
from mnemoproxy.memory import SCOPES, Memory, SearchResult
from mnemoproxy.proxy.api.agents import AgentId, Cursor, ItemId
from mnemoproxy.proxy.api.models import FactView
from mnemoproxy.proxy.edge.access import caller
from mnemoproxy.proxy.inspector.explain import explain
from mnemoproxy.proxy.inspector.pages import PAGE, agent_memory, agent_url, page, session_title
from mnemoproxy.proxy.services import Services

Query = Annotated[str, QueryParameter(max_length=10_000)]
# An agent's page, one tab at a time: each tab's label and the count shown beside it.
TABS = {"overview": ("Overview", "identity"), "facts": ("Facts", "pinned"),
        "episodes": ("Episodes", "episodes"), "sessions": ("Sessions", "sessions"),
        "documents": ("Documents", "documents"), "procedures": ("Procedures", "procedures")}
SHOWN_MESSAGES = 500  # of a session's conversation on one page
SEARCH_RESULTS = 20


@get("/")
async def agents_page(request: Request[Any, Any, Any], services: NamedDependency[Services]
                      ) -> Response[Any]:
    if "agent" in request.query_params:  # the old single page's ?agent=ID
        return Redirect(agent_url(request.query_params["agent"]), status_code=303)
    memory, _ = services.require_memory()
    who = caller(request)
    agents = [a for a in await memory.agents() if who.may_use(a["id"])]
    return page(request, "agents.html.j2", agents=agents)


@get("/agents/{agent_id:str}")
async def agent_page(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services],
    tab: Query = "overview", status: Query = "current", cursor: Cursor = 0,
) -> Response[str]:
    agent_id, memory = agent_memory(request, agent_id, services)
    if tab not in TABS:
        raise InvalidArgument(f"tab is one of {', '.join(TABS)}", param="tab")
    if status not in ("current", "superseded", "all"):
        raise InvalidArgument("status is current, superseded or all", param="status")
    summary = await memory.agent(agent_id)
    counts = await memory.counts(agent_id)
    shown: list[Any] = []
    if tab == "overview":
        shown = [FactView.of(f, c) for f, c in
                 await memory.facts(agent_id, kind="identity", limit=PAGE, after_id=cursor)]
    elif tab == "facts":
        shown = [FactView.of(f, c) for f, c in await memory.facts(
            agent_id, kind="pinned", status=status, limit=PAGE, after_id=cursor)]
    elif tab == "episodes":
        shown = await memory.episodes(agent_id, limit=PAGE, after_id=cursor)
    elif tab == "sessions":
        shown = await memory.sessions(agent_id, limit=PAGE, after_id=cursor)
    elif tab == "documents":
        shown = await memory.documents(agent_id, limit=PAGE, after_id=cursor)
    else:
        shown = await memory.procedures(agent_id, limit=PAGE, after_id=cursor)
    last = shown[-1] if len(shown) == PAGE else None
    following = None if last is None else last["id"] if isinstance(last, dict) else last.id
    return page(request, "agent.html.j2", agent=summary, counts=counts, tabs=TABS, tab=tab,
                status=status, shown=shown, following=following)


@get("/agents/{agent_id:str}/facts/{fact_id:int}")
async def fact_page(
    request: Request[Any, Any, Any], agent_id: AgentId, fact_id: ItemId,
    services: NamedDependency[Services],
) -> Response[str]:
    agent_id, memory = agent_memory(request, agent_id, services)
    fact = await memory.fact(agent_id, fact_id)
    history = await memory.fact_history(agent_id, fact.id)
    source = await _session_or_none(memory, agent_id, fact.source_session_id)
    return page(request, "fact.html.j2", agent_id=agent_id, fact=FactView.of(fact),
                source=source, history=[FactView.of(h) for h in history])


@get("/agents/{agent_id:str}/sessions/{session_id:int}")
async def session_page(
    request: Request[Any, Any, Any], agent_id: AgentId, session_id: ItemId,
    services: NamedDependency[Services],
) -> Response[str]:
    agent_id, memory = agent_memory(request, agent_id, services)
    session = await memory.session(agent_id, session_id)
    messages = await memory.session_messages(agent_id, session_id)
    episodes, facts = await memory.distilled_from(agent_id, session_id)
    return page(request, "session.html.j2", agent_id=agent_id, session=session,
                messages=messages[:SHOWN_MESSAGES], more=max(0, len(messages) - SHOWN_MESSAGES),
                episodes=episodes, facts=[FactView.of(f) for f in facts])


@get("/agents/{agent_id:str}/documents/{document_id:int}")
async def document_page(
    request: Request[Any, Any, Any], agent_id: AgentId, document_id: ItemId,
    services: NamedDependency[Services],
) -> Response[str]:
    agent_id, memory = agent_memory(request, agent_id, services)
    document, chunks = await memory.document(agent_id, document_id)
    return page(request, "document.html.j2", agent_id=agent_id, document=document,
                chunks=[{"chunk": c, "flagged": looks_like_instructions(c.content)}
                        for c in chunks])


@get("/agents/{agent_id:str}/search")
async def search_page(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services],
    q: Query = "", scope_name: Annotated[str, QueryParameter(name="scope")] = "",
) -> Response[str]:
    # `scope` is Litestar's name for the ASGI scope: the query's scope comes in renamed.
    agent_id, memory = agent_memory(request, agent_id, services)
    scope = scope_name
    if scope and scope not in SCOPES:
        raise InvalidArgument(f"scope is one of {', '.join(SCOPES)}", param="scope")
    results = await memory.search(agent_id, q, kinds=SCOPES[scope] if scope else None,
                                  top_k=SEARCH_RESULTS) if q.strip() else []
    best = max((r.score for r in results), default=0.0)
    sessions: dict[int, dict[str, Any] | None] = {}
    rows = []
    for result in results:
        session_id = result.provenance.get("session_id")
        if isinstance(session_id, int) and session_id not in sessions:
            sessions[session_id] = await _session_or_none(memory, agent_id, session_id)
        rows.append({"result": result, "why": explain(result, q, best),
                     "source": _source(agent_id, result, sessions),
                     "flagged": looks_like_instructions(result.text)})
    return page(request, "search.html.j2", agent_id=agent_id, query=q, scope=scope,
                scopes=[s for s in SCOPES if s != "episode"], results=rows)


@get("/agents/{agent_id:str}/preview")
async def preview_page(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services],
    message: Query = "",
) -> Response[str]:
    agent_id, _ = agent_memory(request, agent_id, services)
    if not message.strip():
        raise InvalidArgument("type a message to preview", param="message")
    _, read_path = services.require_memory()
    result = await read_path.prepare(agent_id, [{"role": "user", "content": message}])
    return page(request, "preview.html.j2", agent_id=agent_id, message=message,
                preview=result.as_dict())


async def _session_or_none(memory: Memory, agent_id: str, session_id: int | None
                           ) -> dict[str, Any] | None:
    """The session an item came from; None when it has none (stated by hand) or it was
    forgotten meanwhile."""
    if session_id is None:
        return None
    try:
        return await memory.session(agent_id, session_id)
    except NotFound:
        return None


def _source(agent_id: str, result: SearchResult,
            sessions: dict[int, dict[str, Any] | None]) -> tuple[str, str] | None:
    """Where a result came from: (link, words), or None when there is nothing to open."""
    seen = result.provenance
    if result.kind in ("identity", "pinned"):
        return agent_url(agent_id, "facts", result.item_id), "the fact"
    if result.kind == "document":
        where = seen.get("heading") or ""
        return (agent_url(agent_id, "documents", seen["document_id"])
                + f"#chunk-{seen['position']}",
                f"“{seen['title']}”" + (f" › {where}" if where else ""))
    session = sessions.get(seen.get("session_id"))  # type: ignore[arg-type]
    if session is None:
        return None
    anchor = (f"#turn-{seen['turn_index']}-{seen['role']}" if result.kind == "transcript"
              else f"#episode-{result.item_id}")
    return (agent_url(agent_id, "sessions", session["id"]) + anchor,
            f"“{session_title(session)}”")


VIEW_ROUTES = [agents_page, agent_page, fact_page, session_page, document_page, search_page,
               preview_page]
