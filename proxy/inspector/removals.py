"""Deleting and forgetting from the inspector: each kind of item has a confirmation page
(GET .../delete or .../forget) saying exactly what goes and what stays, with a button, and
the form it posts to (POST, the same path), built from one description per kind."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.response import Redirect
from litestar.types import ControllerRouterHandler

from mnemoproxy.errors import NotFound
from mnemoproxy.memory import Memory
from mnemoproxy.proxy.api.agents import AgentId, ItemId
from mnemoproxy.proxy.edge.access import record_change
from mnemoproxy.proxy.inspector.pages import agent_memory, agent_url, done, page, session_title
from mnemoproxy.proxy.services import Services

MAX_PROCEDURES = 1000  # looked through for those a forgotten session taught


@dataclass
class Consequences:
    """What a removal does, as its confirmation page says it: the item in its own words,
    what goes and what stays (each a sentence), and what the page shows of it."""

    quote: str
    goes: list[str]
    stays: list[str]
    links: list[tuple[str, str]] = field(default_factory=list)  # (url, words) to look first
    facts_going: list[tuple[str, str]] = field(default_factory=list)  # (url, the fact)
    facts_staying: list[tuple[str, str]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Removal:
    """One kind of item the inspector removes."""

    name: str  # "episode": the page's words and the handlers' names
    collection: str  # "episodes": the URL's segment
    verb: str  # "delete" or "forget": the URL's last segment and the button's word
    notice: str  # the notice the agent's page shows afterwards (pages.NOTICES)
    remove: Callable[[Memory, str, int], Awaitable[Any]]
    # Awaited before the page, so an unknown item is a 404 there rather than on the button.
    describe: Callable[[Memory, str, int], Awaitable[Consequences]]
    back: Callable[[str, int], str]
    tab: str  # the agent's tab shown afterwards


async def _fact(memory: Memory, agent_id: str, fact_id: int) -> Consequences:
    fact = await memory.fact(agent_id, fact_id)
    said = [
        "The fact itself: memory stops putting it in front of the model, search no longer "
        "finds it and it is no longer listed (it stays in this fact's history).",
        "The conversation lines it was drawn from stop being served to the model as current "
        "memory.",
    ]
    if fact.source_session_id is None:
        return Consequences(fact.content, said, ["Nothing else: it was stated by hand."])
    try:
        session = await memory.session(agent_id, fact.source_session_id)
    except NotFound:
        return Consequences(fact.content, said, ["Nothing else: its session was forgotten."])
    title = session_title(session)
    return Consequences(
        fact.content, said,
        [f"The transcript of the session it came from, “{title}”, those lines included: "
         "forget that session to remove them too."],
        links=[(agent_url(agent_id, "sessions", session["id"]), f"the session “{title}”")])


async def _episode(memory: Memory, agent_id: str, episode_id: int) -> Consequences:
    found = await memory.episodes(agent_id, limit=1, after_id=episode_id - 1)
    if not found or found[0].id != episode_id:
        raise NotFound(f"agent {agent_id!r} has no episode {episode_id}", param="episode_id")
    episode = found[0]
    links = [] if episode.session_id is None else [
        (agent_url(agent_id, "sessions", episode.session_id), "its session")]
    return Consequences(episode.summary, ["This summary of a session: memory stops using it."],
                        ["The session's transcript, and the facts drawn from it."], links=links)


async def _document(memory: Memory, agent_id: str, document_id: int) -> Consequences:
    document, _ = await memory.document(agent_id, document_id)
    return Consequences(
        document.title,
        [f"The document and its {_count(document.chunks, 'chunk')}, with their search entries "
         "and vectors, for good: memory stops quoting it. This cannot be undone."],
        ["What conversations said about it."],
        links=[(agent_url(agent_id, "documents", document_id), "the document")])


async def _procedure(memory: Memory, agent_id: str, procedure_id: int) -> Consequences:
    procedure = await memory.procedure(agent_id, procedure_id)
    return Consequences(
        procedure.name,
        ["These steps, for good: memory stops offering them for how-to questions. This "
         "cannot be undone."],
        ["The conversation that taught them."])


async def _session(memory: Memory, agent_id: str, session_id: int) -> Consequences:
    session = await memory.session(agent_id, session_id)
    messages = await memory.session_messages(agent_id, session_id)
    episodes, facts = await memory.distilled_from(agent_id, session_id)
    listed = [(f.source_count <= 1, agent_url(agent_id, "facts", f.id),
               f.content + ("" if f.valid_to is None else " (superseded)")) for f in facts]
    going = [(url, text) for only_here, url, text in listed if only_here]
    staying = [(url, text) for only_here, url, text in listed if not only_here]
    goes = [f"Its {_count(len(messages), 'message')}, shown below, and its turns waiting to "
            "be distilled."]
    if episodes:
        goes.append(f"Its {'episode' if len(episodes) == 1 else _count(len(episodes), 'episode')}"
                    " (the summary of it memory uses).")
    if going:
        goes.append("The facts only it stated, listed below, with their history.")
    taught = [p.name for p in await memory.procedures(agent_id, limit=MAX_PROCEDURES, after_id=0)
              if p.source_session_id == session_id]
    if taught:
        goes.append("The procedures it taught: " + ", ".join(f"“{n}”" for n in taught) + ".")
    goes.append("All of this for good: it cannot be undone.")
    stays = ["Facts other sessions stated too, listed below: they stay, no longer tied to "
             "this session." if staying else "Every other session, and the documents."]
    return Consequences(session_title(session), goes, stays, facts_going=going,
                        facts_staying=staying, messages=messages)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"


REMOVALS = (
    Removal("fact", "facts", "delete", "fact-deleted", lambda m, a, i: m.delete_fact(a, i),
            _fact, lambda a, i: agent_url(a, "facts", i), "facts"),
    Removal("episode", "episodes", "delete", "episode-deleted",
            lambda m, a, i: m.delete_episode(a, i), _episode,
            lambda a, i: agent_url(a, tab="episodes"), "episodes"),
    Removal("document", "documents", "delete", "document-deleted",
            lambda m, a, i: m.delete_document(a, i), _document,
            lambda a, i: agent_url(a, "documents", i), "documents"),
    Removal("procedure", "procedures", "delete", "procedure-deleted",
            lambda m, a, i: m.delete_procedure(a, i), _procedure,
            lambda a, i: agent_url(a, tab="procedures"), "procedures"),
    Removal("session", "sessions", "forget", "session-forgotten",
            lambda m, a, i: m.forget_session(a, i), _session,
            lambda a, i: agent_url(a, "sessions", i), "sessions"),
)


def _routes(removal: Removal) -> list[ControllerRouterHandler]:
    path = f"/agents/{{agent_id:str}}/{removal.collection}/{{item_id:int}}/{removal.verb}"
    title = f"{removal.verb.capitalize()} {removal.name}"

    @get(path, name=f"confirm-{removal.verb}-{removal.name}")
    async def confirm(
        request: Request[Any, Any, Any], agent_id: AgentId, item_id: ItemId,
        services: NamedDependency[Services],
    ) -> Response[str]:
        agent_id, memory = agent_memory(request, agent_id, services)
        said = await removal.describe(memory, agent_id, item_id)
        question = f"{removal.verb.capitalize()} this {removal.name}?"
        return page(request, "confirm.html.j2", question=question, said=said,
                    button=title, back=removal.back(agent_id, item_id),
                    action=agent_url(agent_id, removal.collection, item_id, removal.verb))

    @post(path, status_code=303, name=f"{removal.verb}-{removal.name}")
    async def act(
        request: Request[Any, Any, Any], agent_id: AgentId, item_id: ItemId,
        services: NamedDependency[Services],
    ) -> Redirect:
        agent_id, memory = agent_memory(request, agent_id, services)
        await removal.remove(memory, agent_id, item_id)
        await record_change(request, memory, agent_id)
        return done(agent_url(agent_id, tab=removal.tab), removal.notice)

    return [confirm, act]


@get("/agents/{agent_id:str}/forget", name="confirm-forget-agent")
async def confirm_forget_agent(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services]
) -> Response[str]:
    agent_id, memory = agent_memory(request, agent_id, services)
    counts = await memory.counts(agent_id)  # 404 for an agent memory has never seen
    said = Consequences(
        agent_id,
        [f"Everything memory holds of {agent_id}: {_count(counts['sessions'], 'session')} and "
         f"their {_count(counts['messages'], 'message')}, every fact, episode, document and "
         "procedure, with their search entries, vectors and index files, for good. This "
         "cannot be undone."],
        ["Other agents' memory."])
    return page(request, "confirm.html.j2", question=f"Forget agent {agent_id}?", said=said,
                button="Forget agent", back=agent_url(agent_id),
                action=agent_url(agent_id, "forget"))


@post("/agents/{agent_id:str}/forget", status_code=303, name="forget-agent")
async def forget_agent(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services]
) -> Redirect:
    agent_id, memory = agent_memory(request, agent_id, services)
    await memory.agent(agent_id)
    await memory.forget_agent(agent_id)
    await record_change(request, memory, None, forgotten=agent_id)
    return done("/ui", "agent-forgotten")


REMOVAL_ROUTES: list[ControllerRouterHandler] = [
    *(handler for removal in REMOVALS for handler in _routes(removal)),
    confirm_forget_agent, forget_agent,
]
