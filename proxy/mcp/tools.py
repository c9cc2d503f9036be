"""Memory over MCP (the Model Context Protocol): tools an MCP client (an IDE, an agent
framework, a desktop assistant) can call: `search_memory`, `remember`, `forget` and
`list_agents`. Served over streamable HTTP at /mcp by the proxy (behind the same keys: an
admin key when keys exist, since the tools name any agent), or over stdio by
`mnemoproxy mcp` on a data_dir.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

from mnemoproxy.config.settings import Settings
from mnemoproxy.errors import MnemoError, NotFound
from mnemoproxy.memory import SCOPES, Memory
from mnemoproxy.proxy.edge.ids import normalised_id

P = ParamSpec("P")
R = TypeVar("R")


def said(tool: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """A tool whose refusals reach the client in words: the SDK shows a tool's ToolError
    as it is, any other exception as "Error executing tool <name>" alone."""

    @functools.wraps(tool)
    async def answered(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await tool(*args, **kwargs)
        except MnemoError as exc:
            raise ToolError(exc.message) from exc
        except ValueError as exc:
            raise ToolError(str(exc)) from exc

    return answered

INSTRUCTIONS = (
    "Long-term memory of conversations with users, one agent id per user or assistant. "
    "search_memory before answering about the user's past; remember durable facts the user "
    "states; forget a fact the user retracts."
)


def build_mcp(memory: Callable[[], Memory]) -> MCPServer:
    """The MCP server over the memory `memory()` returns (opened by then)."""
    # The SDK configures logging when the process has none yet (logging.basicConfig): at
    # WARNING it stays out of the way of the proxy's own log, which serve sets up first.
    server: MCPServer = MCPServer("mnemoproxy", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool()
    @said
    async def search_memory(
        agent_id: str, query: str, scope: str | None = None, top_k: int = 10
    ) -> list[dict[str, Any]]:
        """Search an agent's memory (facts, episodes, verbatim messages, documents); scope:
        pinned, identity, episodes, transcript or documents. Best matches first, with their
        dates. An agent memory holds nothing of is an error (list_agents names them)."""
        if scope is not None and scope not in SCOPES:
            raise ValueError(f"scope is one of {', '.join(sorted(SCOPES))}")
        agent_id = normalised_id(agent_id)
        if not await memory().has_agent(agent_id):
            raise NotFound(f"no agent {agent_id!r} in memory: list_agents names the agents "
                           "it holds (ids are case-sensitive)")
        results = await memory().search(
            agent_id, query, kinds=SCOPES[scope] if scope else None,
            top_k=max(1, min(top_k, 50)))
        return [{"kind": r.kind, "text": r.text, "score": round(r.score, 4), "at": r.at}
                for r in results]

    @server.tool()
    @said
    async def remember(agent_id: str, fact: str, kind: str = "pinned") -> dict[str, Any]:
        """Store a durable fact about the user (kind: pinned, or identity for who they are)."""
        if kind not in ("pinned", "identity"):
            raise ValueError("kind is pinned or identity")
        if not fact.strip():
            raise ValueError("fact needs text: the fact to remember, in a sentence")
        fact_id = await memory().add_fact(normalised_id(agent_id), fact, kind=kind)
        return {"fact_id": fact_id}

    @server.tool()
    @said
    async def forget(agent_id: str, fact_id: int) -> dict[str, Any]:
        """Delete one fact (reads no longer see it, nor the conversation lines that stated
        it; it stays as history). An unknown fact is an error naming the fact and the
        agent."""
        retracted = await memory().delete_fact(normalised_id(agent_id), fact_id)
        return {"deleted": fact_id, "lines_retracted": retracted}

    @server.tool()
    async def list_agents() -> list[dict[str, Any]]:
        """The agents memory holds, with their counts."""
        return await memory().agents()

    return server


def http_app(server: MCPServer) -> Any:
    """The streamable HTTP transport, stateless and answering in JSON. The proxy's own
    guard has checked Host and Origin (DNS rebinding) and the key before a request gets
    here."""
    return server.streamable_http_app(
        streamable_http_path="/", json_response=True, stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))


async def serve_stdio(settings: Settings) -> None:
    """`mnemoproxy mcp`: the tools over stdio, on the memory under data_dir."""
    memory = await Memory.open(settings)
    try:
        await build_mcp(lambda: memory).run_stdio_async()
    finally:
        await memory.close()
