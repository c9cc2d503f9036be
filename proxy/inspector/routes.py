"""The web inspector at /ui: server-rendered pages (Jinja2) over an agent's memory, working
without JavaScript. The pages that show memory are proxy/inspector/views.py's; here are
signing in, the forms to add, edit and keep facts and to consolidate (deleting and
forgetting, each behind a confirmation page, are proxy/inspector/removals.py's), errors as
pages, and the router.

The pages call the same memory front door as the JSON routes, under the same rules: the
guard (proxy/edge/access.py) names the caller, from its key or (browsers) the sign-in cookie;
`authorize` decides per agent; every change lands in the agent's processing log.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from litestar import Request, Response, Router, get, post
from litestar.datastructures import Cookie
from litestar.di import NamedDependency
from litestar.exceptions import HTTPException
from litestar.response import Redirect
from litestar.types import ControllerRouterHandler

from mnemoproxy.errors import InvalidArgument, MnemoError
from mnemoproxy.proxy.api.agents import AgentId, ItemId
from mnemoproxy.proxy.edge.access import UI_COOKIE, caller, is_inspector, record_change
from mnemoproxy.proxy.edge.errors import error_body, from_http_exception, http_status
from mnemoproxy.proxy.edge.sessions import SESSION_SECONDS
from mnemoproxy.proxy.inspector.pages import agent_memory, agent_url, done, page
from mnemoproxy.proxy.inspector.removals import REMOVAL_ROUTES
from mnemoproxy.proxy.inspector.views import VIEW_ROUTES
from mnemoproxy.proxy.services import Services

log = logging.getLogger(__name__)
MAX_CONTENT_CHARS = 10_000

async def _form(request: Request[Any, Any, Any]) -> Mapping[str, str]:
    form = await request.form()
    return {name: value for name, value in form.items() if isinstance(value, str)}


def _content(form: Mapping[str, str]) -> str:
    # A textarea sends its lines with CRLF; memory's text has LF.
    content = form.get("content", "").replace("\r\n", "\n").strip()
    if not content or len(content) > MAX_CONTENT_CHARS:
        raise InvalidArgument(f"a fact needs text, at most {MAX_CONTENT_CHARS} characters",
                              param="content")
    return content


def _salience(form: Mapping[str, str]) -> float | None:
    text = form.get("salience", "").strip()
    if not text:
        return None
    try:
        salience = float(text)
    except ValueError:
        salience = math.nan
    if not 0.0 <= salience <= 1.0:
        raise InvalidArgument("salience is a number between 0 and 1", param="salience")
    return salience


# -- sign in -------------------------------------------------------------------------------


@get("/login")
async def login_form(request: Request[Any, Any, Any]) -> Response[str]:
    return page(request, "login.html.j2", refused="refused" in request.query_params)


@post("/login", status_code=303)
async def login(request: Request[Any, Any, Any], services: NamedDependency[Services]
                ) -> Redirect:
    """A key typed in becomes a session cookie for the inspector's pages (a token for the
    key, not the key: proxy/edge/keys.py); a key that is unknown, revoked or for chat only is
    refused. Without keys there is nothing to sign in to."""
    keys, sessions = services.keys, services.sessions
    if keys is None or sessions is None or not keys.active:
        return Redirect("/ui", status_code=303)
    key = keys.find((await _form(request)).get("key", "").strip())
    if key is None or not key.reaches_memory:
        return Redirect("/ui/login?refused", status_code=303)
    cookie = Cookie(key=UI_COOKIE, value=sessions.issue(key), path="/ui", httponly=True,
                    samesite="strict", max_age=SESSION_SECONDS, secure=_over_tls(request))
    return Redirect("/ui", status_code=303, cookies=[cookie])


def _over_tls(request: Request[Any, Any, Any]) -> bool:
    """Whether the browser reached the inspector over TLS: directly, or through a reverse
    proxy that says so (X-Forwarded-Proto). The cookie is then Secure."""
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return request.url.scheme == "https" or forwarded == "https"


@post("/logout", status_code=303)
async def logout(request: Request[Any, Any, Any], services: NamedDependency[Services]
                 ) -> Redirect:
    """Sign out: the session ends on the server too, whatever copies of its cookie exist."""
    token = request.cookies.get(UI_COOKIE)
    if token and services.sessions is not None:
        services.sessions.sign_out(token)
    return Redirect("/ui/login", status_code=303,
                    cookies=[Cookie(key=UI_COOKIE, value="", path="/ui", max_age=0)])


_SIGN_IN_PATHS = frozenset({"/ui/login", "/ui/logout"})


async def _signed_in(request: Request[Any, Any, Any]) -> Response[Any] | None:
    """Every inspector page but sign-in: a browser without a usable key goes to sign in
    (with `refused` when it brought one the guard did not accept)."""
    if not caller(request).signed_out or request.url.path in _SIGN_IN_PATHS:
        return None
    refused = UI_COOKIE in request.cookies
    redirect = Redirect("/ui/login" + ("?refused" if refused else ""), status_code=303)
    if refused:
        redirect.delete_cookie(UI_COOKIE, path="/ui")
    return redirect


# -- changes -------------------------------------------------------------------------------


@post("/agents/{agent_id:str}/facts", status_code=303)
async def add_fact(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services]
) -> Redirect:
    agent_id, memory = agent_memory(request, agent_id, services)
    form = await _form(request)
    kind = form.get("kind", "pinned")
    if kind not in ("pinned", "identity"):
        raise InvalidArgument("kind is pinned or identity", param="kind")
    salience = _salience(form)
    fact_id = await memory.add_fact(agent_id, _content(form), kind=kind,
                                    salience=0.5 if salience is None else salience)
    if form.get("keep") == "true":
        await memory.edit_fact(agent_id, fact_id, keep=True)
    await record_change(request, memory, agent_id)
    tab = "overview" if kind == "identity" else "facts"
    return done(agent_url(agent_id, tab=tab), "fact-added")


@post("/agents/{agent_id:str}/facts/{fact_id:int}", status_code=303)
async def edit_fact(
    request: Request[Any, Any, Any], agent_id: AgentId, fact_id: ItemId,
    services: NamedDependency[Services],
) -> Redirect:
    """The fact page's form: new text replaces the fact's in place (the old text stays in
    its history); the salience and `keep` are set as sent (an unticked box stops keeping
    it)."""
    agent_id, memory = agent_memory(request, agent_id, services)
    form = await _form(request)
    content: str | None = _content(form)
    if content == (await memory.fact(agent_id, fact_id)).content.strip():
        content = None  # the text is as it was: no new value, its counts kept
    current = await memory.edit_fact(
        agent_id, fact_id, content=content,
        salience=_salience(form), keep=form.get("keep") == "true")
    await record_change(request, memory, agent_id)
    return done(agent_url(agent_id, "facts", current), "fact-saved")


@post("/agents/{agent_id:str}/facts/{fact_id:int}/keep", status_code=303)
async def keep_fact(
    request: Request[Any, Any, Any], agent_id: AgentId, fact_id: ItemId,
    services: NamedDependency[Services],
) -> Redirect:
    """Keep a fact (consolidation never fades nor evicts it), or stop keeping it."""
    agent_id, memory = agent_memory(request, agent_id, services)
    form = await _form(request)
    keep = form.get("keep") == "true"
    kind = (await memory.fact(agent_id, fact_id)).kind
    await memory.edit_fact(agent_id, fact_id, keep=keep)
    await record_change(request, memory, agent_id)
    tab = "overview" if kind == "identity" else "facts"
    return done(agent_url(agent_id, tab=tab), "fact-kept" if keep else "fact-not-kept")


@post("/agents/{agent_id:str}/consolidate", status_code=303)
async def consolidate(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services]
) -> Redirect:
    agent_id, memory = agent_memory(request, agent_id, services)
    await memory.agent(agent_id)  # 404 for an agent memory has never seen
    await memory.consolidate(agent_id)
    await record_change(request, memory, agent_id)
    return done(agent_url(agent_id), "consolidated")


# -- errors as pages -----------------------------------------------------------------------


def _error_page(request: Request[Any, Any, Any], exc: Exception) -> Response[str]:
    if isinstance(exc, HTTPException):
        exc = from_http_exception(request, exc)
    if not isinstance(exc, MnemoError):
        log.exception("unexpected error on %s %s", request.method, request.url.path,
                      exc_info=exc)
        exc = MnemoError("the proxy hit an internal error; it is logged, please report it")
    status, _ = http_status(exc)
    return page(request, "error.html.j2", status_code=status, status=status,
                message=error_body(exc)["error"]["message"])


def answer_inspector_in_html(handlers: Mapping[Any, Any]) -> dict[Any, Any]:
    """The app's exception handlers, answering requests for /ui with an HTML page (a wrong
    path, a refused form) and every other request as before."""

    def html_for_inspector(handler: Any) -> Any:
        def handle(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
            if is_inspector(request.url.path):
                return _error_page(request, exc)
            return handler(request, exc)

        return handle

    return {kind: html_for_inspector(handler) for kind, handler in handlers.items()}


INSPECTOR_ROUTES: list[ControllerRouterHandler] = [
    Router(
        "/ui",
        route_handlers=[
            login_form, login, logout, *VIEW_ROUTES,
            add_fact, edit_fact, keep_fact, consolidate, *REMOVAL_ROUTES,
        ],
        before_request=_signed_in,
        include_in_schema=False,
    ),
]
