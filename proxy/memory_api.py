"""The memory API: /memory/ingest, /memory/search, /memory/preview and /agents.

Bodies are checked field by field so that a bad one gets a 400 naming the field.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from litestar import Request, get, post
from litestar.di import NamedDependency

from mnemoproxy.errors import InvalidRequest, MemoryUnavailable
from mnemoproxy.memory.models import SCOPES, Turn
from mnemoproxy.memory.search import search
from mnemoproxy.proxy.chat import MAX_ID_CHARS
from mnemoproxy.proxy.memory_service import MemoryService
from mnemoproxy.proxy.services import Services

MAX_INGEST_TURNS = 10_000


def _memory(services: Services) -> MemoryService:
    if not isinstance(services.memory, MemoryService):
        raise MemoryUnavailable("memory is disabled on this proxy; start it with enabled = true")
    return services.memory


async def _json_object(request: Request[Any, Any, Any]) -> dict[str, Any]:
    try:
        body = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"the request body is not valid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise InvalidRequest("the request body must be a JSON object")
    return body


def _text(
    body: dict[str, Any], name: str, *, required: bool = True, limit: int = MAX_ID_CHARS
) -> str:
    value = body.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(f"'{name}' is required and must be a non-empty string", param=name)
    if len(value) > limit:
        raise InvalidRequest(f"'{name}' is longer than {limit} characters", param=name)
    return value.strip()


def _date(value: Any, param: str) -> datetime | None:
    """ISO 8601 text (a date or a date-time; naive means UTC) or unix seconds."""
    if value is None:
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(float(value), UTC)
        if isinstance(value, str):
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        pass
    raise InvalidRequest(
        f"'{param}' must be an ISO 8601 date such as 2024-05-08T14:30:00Z, or unix seconds",
        param=param,
    )


def _number(body: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InvalidRequest(f"'{name}' must be a number from {low:g} to {high:g}", param=name)
    return value


def parse_turns(body: dict[str, Any]) -> list[Turn]:
    turns = body.get("turns")
    if not isinstance(turns, list) or not turns:
        raise InvalidRequest("'turns' must be a non-empty list of {user, assistant}", param="turns")
    if len(turns) > MAX_INGEST_TURNS:
        raise InvalidRequest(
            f"'turns' holds {len(turns)} turns; send at most {MAX_INGEST_TURNS} per request",
            param="turns",
        )
    parsed = []
    for i, turn in enumerate(turns):
        where = f"turns[{i}]"
        if not isinstance(turn, dict):
            raise InvalidRequest(f"{where} must be an object {{user, assistant}}", param=where)
        user, assistant = turn.get("user", ""), turn.get("assistant", "")
        if not isinstance(user, str) or not isinstance(assistant, str):
            raise InvalidRequest(f"{where}.user and .assistant must be strings", param=where)
        if not user.strip() and not assistant.strip():
            raise InvalidRequest(f"{where} has neither user nor assistant text", param=where)
        parsed.append(Turn(user, assistant, _date(turn.get("date"), f"{where}.date")))
    return parsed


@post("/memory/ingest", status_code=200)
async def ingest(request: Request[Any, Any, Any], services: NamedDependency[Services]) -> Any:
    memory = _memory(services)
    body = await _json_object(request)
    agent_id = _text(body, "agent_id")
    conversation_id = _text(body, "conversation_id")
    turns = parse_turns(body)
    skip = body.get("skip_extraction", False)
    if not isinstance(skip, bool):
        raise InvalidRequest("'skip_extraction' must be true or false", param="skip_extraction")
    result = await memory.writer.ingest(
        agent_id,
        conversation_id,
        turns,
        session_date=_date(body.get("session_date"), "session_date"),
        skip_extraction=skip,
    )
    return {
        "status": "ok",
        "agent_id": agent_id,
        "conversation_id": conversation_id,
        "turns_ingested": result.turns_ingested,
        "distillation": result.distillation.as_dict(),
    }


@get("/agents")
async def agents(services: NamedDependency[Services]) -> Any:
    return {"agents": await _memory(services).store.agents_summary()}


@post("/memory/search", status_code=200)
async def memory_search(
    request: Request[Any, Any, Any], services: NamedDependency[Services]
) -> Any:
    memory = _memory(services)
    body = await _json_object(request)
    agent_id = _text(body, "agent_id")
    query = body.get("query")
    if not isinstance(query, str):
        raise InvalidRequest("'query' must be a string", param="query")
    scope = body.get("scope")
    if scope is not None and scope not in SCOPES:
        raise InvalidRequest(f"'scope' must be one of {', '.join(SCOPES)}", param="scope")
    top_k = _number(body, "top_k", 1, 200)
    days = _number(body, "days", 0, 36500)
    results = await search(
        memory.store,
        agent_id,
        query,
        scope=scope,
        top_k=int(top_k) if top_k is not None else 10,
        days=days,
    )
    return {"agent_id": agent_id, "query": query, "results": [asdict(r) for r in results]}


@post("/memory/preview", status_code=200)
async def preview(request: Request[Any, Any, Any], services: NamedDependency[Services]) -> Any:
    memory = _memory(services)
    body = await _json_object(request)
    agent_id = _text(body, "agent_id")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("'messages' must be a non-empty list", param="messages")
    if not all(isinstance(m, dict) for m in messages):
        raise InvalidRequest("every item of 'messages' must be an object", param="messages")
    return await memory.preview(agent_id, messages)


@post("/memory/consolidate", status_code=200)
async def consolidate_now(
    request: Request[Any, Any, Any], services: NamedDependency[Services]
) -> Any:
    """Run a consolidation pass now, for one agent (`agent_id`) or all."""
    memory = _memory(services)
    raw = await request.body()
    body = await _json_object(request) if raw.strip() else {}
    agent_id = _text(body, "agent_id", required=False) or None
    report = await memory.consolidate(agent_id)
    return {"status": "ok", **report.as_dict()}


MEMORY_ROUTES = [ingest, agents, memory_search, preview, consolidate_now]
