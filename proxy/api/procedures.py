"""An agent's procedures (the how-tos its sessions taught): list, read, add, edit, delete.

Distillation stores them (memory/distill/); a "how do I ..." question one of them answers
gets it in the memory block. Every route is agent-scoped (proxy/edge/access.py decides who may)
and every change lands in the agent's processing log with the key that made it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, route
from litestar.di import NamedDependency
from litestar.params import JSONBody, PathParameter, QueryParameter

from mnemoproxy.errors import InvalidArgument
from mnemoproxy.proxy.api.models import NextCursor, page_cursor
from mnemoproxy.proxy.edge.access import record_change
from mnemoproxy.proxy.edge.errors import error_responses
from mnemoproxy.proxy.edge.ids import MAX_ID_CHARS
from mnemoproxy.proxy.services import Services

PAGE_LIMIT = 500
MAX_ROW_ID = 2**63 - 1
MAX_STEPS = 50
AgentId = Annotated[str, PathParameter(max_length=MAX_ID_CHARS)]
ProcedureId = Annotated[int, PathParameter(ge=1, le=MAX_ROW_ID)]
Limit = Annotated[int, QueryParameter(ge=1, le=PAGE_LIMIT)]
Cursor = Annotated[int, QueryParameter(ge=0, le=MAX_ROW_ID)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"\S")]
When = Annotated[str, msgspec.Meta(max_length=500)]
Step = Annotated[str, msgspec.Meta(min_length=1, max_length=2000, pattern=r"\S")]
Steps = Annotated[list[Step], msgspec.Meta(min_length=1, max_length=MAX_STEPS)]
ERRORS = error_responses(400, 401, 403, 404, 503)
BODY_ERRORS = error_responses(400, 401, 403, 408, 413, 415, 503)


class NewProcedure(msgspec.Struct, forbid_unknown_fields=True):
    """A procedure stated by hand: it replaces the agent's procedure of the same name."""

    name: Name
    steps: Steps
    applies_when: When = ""


class ProcedureEdit(msgspec.Struct, forbid_unknown_fields=True):
    """What to change of a procedure, in place (at least one field)."""

    name: Name | None = None
    steps: Steps | None = None
    applies_when: When | None = None


class ProcedureView(msgspec.Struct):
    """A procedure: what it does (`name`), when it is the way to go, its steps in order,
    the session that taught it (null: added by hand, or that session was forgotten) and
    when it was stored and last changed (unix seconds)."""

    id: int
    name: str
    applies_when: str
    steps: list[str]
    session_id: int | None
    created_at: float
    updated_at: float

    @classmethod
    def of(cls, p: Any) -> ProcedureView:  # memory's StoredProcedure
        return cls(p.id, p.name, p.applies_when, p.steps, p.source_session_id,
                   p.created_at, p.updated_at)


class ProcedurePage(msgspec.Struct):
    """A page of an agent's procedures in the order they were first stored."""

    agent_id: str
    procedures: list[ProcedureView]
    next_cursor: NextCursor


class ProcedureDeleted(msgspec.Struct):
    """The procedure is deleted for good."""

    agent_id: str
    procedure_id: int
    deleted: Literal[True]



@route("/agents/{agent_id:str}/procedures", http_method=["GET", "HEAD"], responses=ERRORS)
async def agent_procedures(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services],
    limit: Limit = 100, cursor: Cursor = 0,
) -> ProcedurePage:
    """The agent's procedures, a page at a time (404 for an agent memory has never seen)."""
    agent_id, memory = services.agent_memory(request, agent_id)
    rows = await memory.procedures(agent_id, limit=limit, after_id=cursor)
    return ProcedurePage(agent_id, [ProcedureView.of(p) for p in rows],
                         page_cursor([p.id for p in rows], limit))


@route("/agents/{agent_id:str}/procedures", http_method=["POST"], status_code=201,
       responses=BODY_ERRORS)
async def add_procedure(
    request: Request[Any, Any, Any], agent_id: AgentId, data: JSONBody[NewProcedure],
    services: NamedDependency[Services],
) -> ProcedureView:
    """A procedure stated by hand (the agent is created if new); one of the same name is
    replaced."""
    agent_id, memory = services.agent_memory(request, agent_id)
    procedure_id = await memory.add_procedure(agent_id, data.name, data.steps,
                                              data.applies_when)
    await record_change(request, memory, agent_id)
    return ProcedureView.of(await memory.procedure(agent_id, procedure_id))


@route("/agents/{agent_id:str}/procedures/{procedure_id:int}", http_method=["GET", "HEAD"],
       responses=ERRORS)
async def get_procedure(
    request: Request[Any, Any, Any], agent_id: AgentId, procedure_id: ProcedureId,
    services: NamedDependency[Services],
) -> ProcedureView:
    """One procedure."""
    agent_id, memory = services.agent_memory(request, agent_id)
    return ProcedureView.of(await memory.procedure(agent_id, procedure_id))


@route("/agents/{agent_id:str}/procedures/{procedure_id:int}", http_method=["PATCH"],
       responses={**BODY_ERRORS, **error_responses(404)})
async def edit_procedure(
    request: Request[Any, Any, Any], agent_id: AgentId, procedure_id: ProcedureId,
    data: JSONBody[ProcedureEdit], services: NamedDependency[Services],
) -> ProcedureView:
    """Change a procedure's name, steps or when it applies, in place (a name another of the
    agent's procedures has is a 400)."""
    agent_id, memory = services.agent_memory(request, agent_id)
    if data.name is None and data.steps is None and data.applies_when is None:
        raise InvalidArgument("send name, steps or applies_when", param="name")
    await memory.edit_procedure(agent_id, procedure_id, name=data.name, steps=data.steps,
                                applies_when=data.applies_when)
    await record_change(request, memory, agent_id)
    return ProcedureView.of(await memory.procedure(agent_id, procedure_id))


@route("/agents/{agent_id:str}/procedures/{procedure_id:int}", http_method=["DELETE"],
       status_code=200, responses=ERRORS)
async def delete_procedure(
    request: Request[Any, Any, Any], agent_id: AgentId, procedure_id: ProcedureId,
    services: NamedDependency[Services],
) -> ProcedureDeleted:
    """Delete a procedure for good."""
    agent_id, memory = services.agent_memory(request, agent_id)
    await memory.delete_procedure(agent_id, procedure_id)
    await record_change(request, memory, agent_id)
    return ProcedureDeleted(agent_id, procedure_id, deleted=True)


PROCEDURE_ROUTES = [agent_procedures, add_procedure, get_procedure, edit_procedure,
                    delete_procedure]
