"""Deleting and forgetting from the inspector: each kind of item has a confirmation page
(GET .../delete or .../forget: what goes, what stays, a button) and the form it posts to
(POST, the same path), built from one description per kind."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.response import Redirect
from litestar.types import ControllerRouterHandler

from mnemoproxy.memory import Memory
from mnemoproxy.proxy.api.agents import AgentId, ItemId
from mnemoproxy.proxy.edge.access import record_change
from mnemoproxy.proxy.inspector.pages import agent_memory, agent_url, done, page
from mnemoproxy.proxy.services import Services


@dataclass(frozen=True)
class Removal:
    """One kind of item the inspector removes."""

    name: str  # "episode": the page's words and the handlers' names
    collection: str  # "episodes": the URL's segment
    verb: str  # "delete" or "forget": the URL's last segment and the button's word
    consequence: str
    notice: str  # the notice the agent's page shows afterwards (pages.NOTICES)
    remove: Callable[[Memory, str, int], Awaitable[Any]]
    back: Callable[[str, int], str]
    # The text shown in the confirmation (a fact's words); awaited before the page, so an
    # unknown item is a 404 there rather than on the button.
    quote: Callable[[Memory, str, int], Awaitable[str]] | None = None


async def _fact_text(memory: Memory, agent_id: str, fact_id: int) -> str:
    return (await memory.fact(agent_id, fact_id)).content


REMOVALS = (
    Removal(
        "fact", "facts", "delete", "Memory stops using it and it is no longer listed.",
        "fact-deleted", lambda m, a, i: m.delete_fact(a, i),
        lambda a, i: agent_url(a, "facts", i), quote=_fact_text,
    ),
    Removal(
        "episode", "episodes", "delete",
        "Memory stops using this summary of a session; the session's transcript stays.",
        "episode-deleted", lambda m, a, i: m.delete_episode(a, i),
        lambda a, i: agent_url(a),
    ),
    Removal(
        "document", "documents", "delete",
        "Its chunks and their vectors are deleted for good; memory stops quoting it. This "
        "cannot be undone.",
        "document-deleted", lambda m, a, i: m.delete_document(a, i),
        lambda a, i: agent_url(a) + "#documents",
    ),
    Removal(
        "procedure", "procedures", "delete",
        "Memory stops offering these steps for how-to questions. This cannot be undone.",
        "procedure-deleted", lambda m, a, i: m.delete_procedure(a, i),
        lambda a, i: agent_url(a) + "#procedures",
    ),
    Removal(
        "session", "sessions", "forget",
        "Its messages, episodes and the facts only it stated are deleted for good. This "
        "cannot be undone.",
        "session-forgotten", lambda m, a, i: m.forget_session(a, i),
        lambda a, i: agent_url(a, "sessions", i),
    ),
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
        quote = "" if removal.quote is None else await removal.quote(memory, agent_id, item_id)
        # A quoted item is named by its text; the others by their number.
        named = f"this {removal.name}" if quote else f"{removal.name} {item_id}"
        question = f"{removal.verb.capitalize()} {named}?"
        return page(request, "confirm.html.j2", question=question,
                    consequence=removal.consequence, button=title,
                    back=removal.back(agent_id, item_id), quote=quote,
                    action=agent_url(agent_id, removal.collection, item_id, removal.verb))

    @post(path, status_code=303, name=f"{removal.verb}-{removal.name}")
    async def act(
        request: Request[Any, Any, Any], agent_id: AgentId, item_id: ItemId,
        services: NamedDependency[Services],
    ) -> Redirect:
        agent_id, memory = agent_memory(request, agent_id, services)
        await removal.remove(memory, agent_id, item_id)
        await record_change(request, memory, agent_id)
        return done(agent_url(agent_id), removal.notice)

    return [confirm, act]


@get("/agents/{agent_id:str}/forget", name="confirm-forget-agent")
async def confirm_forget_agent(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services]
) -> Response[str]:
    agent_id, memory = agent_memory(request, agent_id, services)
    await memory.agent(agent_id)  # 404 for an agent memory has never seen
    return page(request, "confirm.html.j2", question=f"Forget agent {agent_id}?",
                consequence="Every fact, episode, session and message of this agent is "
                "deleted for good, with its search entries and vectors. This cannot be "
                "undone.", button="Forget agent", back=agent_url(agent_id), quote="",
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
