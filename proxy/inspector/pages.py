"""What every inspector page shares: the templates, the headers that keep a page inert
(no scripts, never framed), the notices a redirect may name, the agent a URL names, and
how a session is named."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from litestar import Request, Response
from litestar.response import Redirect

from mnemoproxy.memory import Memory
from mnemoproxy.proxy.edge.access import caller
from mnemoproxy.proxy.services import Services

PAGE = 100  # facts, episodes, sessions, documents, procedures shown at once on an agent's page
TITLE_CHARS = 90
# No scripts at all; forms post to this origin only; never framed (clickjacking).
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes a form's Origin "null"
    "Cache-Control": "no-store",
}
# What a page says after a change (the redirect names one of these, so nothing a link
# carries is shown as a message).
NOTICES = {
    "fact-added": "Fact added.",
    "fact-saved": "Fact saved.",
    "fact-kept": "Fact kept: consolidation never fades nor evicts it.",
    "fact-not-kept": "Fact no longer kept: consolidation may fade it like any other.",
    "fact-deleted": "Fact deleted: memory no longer uses it.",
    "episode-deleted": "Episode deleted.",
    "document-deleted": "Document deleted, its chunks and their vectors with it.",
    "procedure-deleted": "Procedure deleted.",
    "session-forgotten": "Session forgotten.",
    "consolidated": "Consolidation ran.",
    "agent-forgotten": "Agent forgotten.",
}


def when(moment: float | None) -> str:
    if moment is None:
        return ""
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M")


def agent_url(agent_id: str, *parts: object, **query: object) -> str:
    """/ui/agents/<id>/...[?query], the id as one path segment whatever text it holds:
    escaped twice, because the server decodes the path before routing (`a/b` once escaped
    would route as two segments); `agent_memory` decodes the second time."""
    segment = quote(quote(agent_id, safe=""), safe="")
    path = "/".join(["/ui/agents", segment, *(str(p) for p in parts)])
    shown = {name: value for name, value in query.items() if value is not None}
    return f"{path}?{urlencode(shown)}" if shown else path


def session_title(session: dict[str, Any]) -> str:
    """A session as a person recognises it: its own title (an imported conversation's),
    else the first line of its first user message, else its conversation id."""
    if session.get("title"):
        return str(session["title"])
    first = next((line for line in str(session.get("first_message", "")).splitlines()
                  if line.strip()), "")
    if not first:
        return f"conversation {session['conversation_id']}"
    line = " ".join(first.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    return f"{count / 1024:.1f} KB" if count < 1024**2 else f"{count / 1024**2:.1f} MB"


_templates = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    undefined=StrictUndefined,
)
_templates.filters["when"] = when
_templates.filters["size"] = size
_templates.globals["agent_url"] = agent_url
_templates.globals["session_title"] = session_title


def page(
    request: Request[Any, Any, Any], template: str, status_code: int = 200, **values: Any
) -> Response[str]:
    notice = NOTICES.get(request.query_params.get("done", ""))
    html = _templates.get_template(template).render(
        signed_in=caller(request).key is not None, notice=notice, **values)
    return Response(html, status_code=status_code, media_type="text/html",
                    headers=_HEADERS)


def done(url: str, notice: str) -> Redirect:
    """After a change: back to a page (303, so a reload does not post again)."""
    joint = "&" if "?" in url else "?"
    return Redirect(f"{url}{joint}{urlencode({'done': notice})}", status_code=303)


def agent_memory(request: Request[Any, Any, Any], agent_id: str, services: Services
           ) -> tuple[str, Memory]:
    # The id in an inspector URL is escaped twice (agent_url): the second decoding is ours.
    return services.agent_memory(request, unquote(agent_id))
