"""Who may reach the proxy, and what each caller may touch.

Every HTTP request passes `guard` first:
- Host: a name other than loopback's, an IP address, `host` or `allowed_hosts` is refused,
  so a web page cannot rebind its own domain to 127.0.0.1 and read memory.
- Origin: a browser request from an origin not in `allowed_origins` (and not the proxy's
  own) is refused, so no page the user visits can write memory or spend tokens.
- Content-Type: a body sent to a JSON route must say it is JSON (a cross-site form or
  `text/plain` POST, which browsers send without asking, is refused); the document upload
  route alone also takes multipart/form-data, not from a page of another site.
- Keys (once any exist): `Authorization: Bearer <key>`, the OpenAI SDK's `api_key`, is
  checked and then removed, so a client key never reaches the upstream. /health answers
  anyone, with details for admin keys only.

Handlers then ask `authorize(request, agent_id)` for each agent they act on: a key bound
to agents may use those only ('*': every one); the admin routes (everything outside /v1
but /health) need an admin key or an agent-bound one; a key without an agent list relays
chats without memory (the chat route reads and records nothing for it). Without keys the
proxy serves loopback only and the single local user may do everything; once keys have
existed it stays closed without an active one (proxy/edge/keys.py), unless
`reopen_without_keys`. With keys, every use of an admin route is logged
(`mnemoproxy.audit`) with the key's id, and changes go to the agent's processing log.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from litestar import Request
from litestar.types import ASGIApp, Receive, Scope, Send

from mnemoproxy.config.settings import Settings
from mnemoproxy.errors import InvalidArgument, SettingError
from mnemoproxy.memory import Memory
from mnemoproxy.proxy.edge.errors import Forbidden, NotAuthenticated, UnsupportedMediaType
from mnemoproxy.proxy.edge.keys import Key, KeyFile
from mnemoproxy.proxy.edge.sessions import InspectorSessions

audit = logging.getLogger("mnemoproxy.audit")

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
# Answered without a key: liveness (the inspector's pages are too, but show a sign-in form).
_OPEN_PATHS = frozenset({"/health"})
# The inspector's pages (/ui, /ui/...): a browser signs in with this cookie (a session token
# for a key, proxy/edge/sessions.py, set by the sign-in form; SameSite=Strict, and the
# Origin check below refuses other sites' forms), and posts HTML forms.
UI_COOKIE = "mnemoproxy_key"
_FORM_TYPES = frozenset({"application/x-www-form-urlencoded"})
# The caller of an open path or an inspector page without a valid key: no agent, no admin.
ANONYMOUS = Key("anonymous", "", agents=())
# Routes that span every agent, whatever they are asked: admin keys only.
_ADMIN_ONLY = ("/mcp", "/metrics")
# JSON, and JSON Lines (imports): none of them can be sent cross-site without a preflight.
_JSON_TYPES = frozenset({"application/json", "application/x-ndjson", "application/jsonl"})
# A file upload, which a browser form can send cross-site without asking: taken on the one
# route that stores documents (POST /agents/{id}/documents), and only from a request that
# a browser did not mark as coming from another site (Sec-Fetch-Site; the Origin check
# above has already refused any other site's origin).
_UPLOAD_TYPE = "multipart/form-data"
_SAME_SITE = frozenset({"same-origin", "none"})


def _takes_uploads(scope: Scope, path: str, headers: dict[str, str]) -> bool:
    fetched_from = headers.get("sec-fetch-site")
    return (
        scope.get("method") == "POST"
        and path.startswith("/agents/")
        and path.endswith("/documents")
        and path.count("/") >= 3
        and (fetched_from is None or fetched_from in _SAME_SITE)
    )


@dataclass(frozen=True)
class Caller:
    """Who sent a request: a key, or (no keys configured) the local user."""

    key: Key | None

    @property
    def admin(self) -> bool:
        return self.key is None or self.key.admin

    @property
    def signed_out(self) -> bool:
        """Keys exist and this request brought none that may use memory routes."""
        return self.key is ANONYMOUS

    @property
    def relays_only(self) -> bool:
        """A key without an agent list: its chats are relayed, no memory read or written."""
        return self.key is not None and not self.key.reaches_memory

    @property
    def name(self) -> str:
        return "local" if self.key is None else self.key.id

    def may_use(self, agent_id: str) -> bool:
        return self.key is None or self.key.admin or self.key.may_use(agent_id)


# What a request without a usable key is told: how the SDK and the command line send one.
KEY_REQUIRED = (
    "a valid API key is required: send it as the OpenAI SDK's api_key (Authorization: "
    "Bearer mp-...), or give the mnemoproxy command line --api-key or MNEMO_API_KEY; an "
    "admin creates one with `mnemoproxy keys add`")


def closed_message(settings: Settings, keys: KeyFile) -> str:
    """Why a proxy without an active key refuses every request."""
    if not is_loopback(settings.host):
        return (f"this proxy listens on {settings.host} and has no active key: an admin adds "
                "one with `mnemoproxy keys add --admin`")
    return (f"this proxy has had keys and none is active now (all revoked, or {keys.path} "
            "gone), so it stays closed: an admin adds one with `mnemoproxy keys add --admin`, "
            "or serves loopback clients without keys again with `mnemoproxy keys reset`")


def is_closed(settings: Settings, keys: KeyFile) -> bool:
    """No active key, and none may be missed: reachable from other machines, or keys have
    existed (and reopen_without_keys is off)."""
    return not keys.active and (not is_loopback(settings.host) or (
        keys.once_had_keys and not settings.reopen_without_keys))


def key_notes(settings: Settings, keys: KeyFile) -> list[str]:
    """What the start-up report warns of about the keys (proxy/startup.py): a closed proxy,
    keys that only relay, and keys without an upstream_api_key (the clients' own upstream
    key no longer goes)."""
    notes = []
    active = keys.active
    if is_closed(settings, keys):
        notes.append(f"closed: {closed_message(settings, keys)} (every request but /health "
                     "gets 401)")
    relaying = [k.id for k in active if not k.reaches_memory]
    if relaying:
        notes.append(
            f"keys without an agent list relay chats without memory (no memory is read or "
            f"written for them; their replies say so in X-Memory-Hint): {', '.join(relaying)}; "
            "to reach memory, revoke them and add keys with --agents A,B (or '*')")
    if active and not settings.upstream_api_key:
        notes.append(
            "keys are on and upstream_api_key is empty: a client's Authorization header is its "
            "proxy key and is not forwarded, so the upstream gets no key (a hosted one answers "
            "401); set upstream_api_key unless the model server needs none")
    return notes

    def visible(self, agent_ids: list[str]) -> list[str]:
        return [a for a in agent_ids if self.may_use(a)]


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def require_keys_off_loopback(settings: Settings, keys: KeyFile) -> None:
    """Start-up check: a proxy reachable from other machines must have keys."""
    if not is_loopback(settings.host) and not keys.active:
        raise SettingError(
            f"host {settings.host} is reachable from other machines and no keys are "
            f"configured in {keys.path}: add one with `mnemoproxy keys add --admin` (clients "
            "send it as their api_key), or serve on 127.0.0.1",
            param="host",
        )


def caller(request: Request[Any, Any, Any]) -> Caller:
    found = request.scope.get("state", {}).get("caller")
    return found if isinstance(found, Caller) else Caller(None)


def authorize(request: Request[Any, Any, Any], agent_id: str | None) -> Caller:
    """The caller, if it may act on `agent_id` (None: every agent, admin keys only)."""
    who = caller(request)
    if agent_id is None:
        if not who.admin:
            raise Forbidden(
                "this key is bound to agents: name one with agent_id", param="agent_id",
                code="agent_not_allowed",
            )
    elif not who.may_use(agent_id):
        raise Forbidden(
            f"this key may not use agent {agent_id!r}", param="agent_id",
            code="agent_not_allowed",
        )
    return who


async def record_change(
    request: Request[Any, Any, Any], memory: Memory, agent_id: str | None,
    *, forgotten: str | None = None,
) -> None:
    """A memory route that changes something, in the agent's processing log with the key
    that asked (every agent's, or one forgotten, which keeps no log: the server log)."""
    who = caller(request)
    action = f"{request.method} {request.url.path}"
    if agent_id is not None:
        await memory.audit(agent_id, action, who.name)
    elif forgotten is not None:
        audit.info("%s by %s: agent forgotten", action, who.name)
    else:
        audit.info("%s by %s for every agent", action, who.name)


def routed_path(scope: Scope) -> str:
    """The path as it is routed, whatever its spelling: percent-decoded, repeated slashes
    collapsed, no trailing slash (a mounted app, /mcp, sees its own path in scope["path"];
    the request's is raw_path). Dot segments are refused: `/v1/../agents` must not pass as
    a /v1 route, nor reach the upstream outside its base path."""
    raw = scope.get("raw_path")
    path = unquote(raw.decode("latin-1")) if isinstance(raw, bytes) and raw else scope["path"]
    if any(segment in (".", "..") for segment in path.split("/")):
        raise InvalidArgument("a path may not hold '.' or '..' segments", param="path")
    return re.sub("/{2,}", "/", path).rstrip("/") or "/"


def _split(names: str) -> frozenset[str]:
    return frozenset(n.strip().lower().rstrip("/") for n in names.split(",") if n.strip())


def _host_of(value: str) -> str:
    """The host of a Host header or an origin's authority, without its port."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def is_inspector(path: str) -> bool:
    return path == "/ui" or path.startswith("/ui/")


def _cookie_key(cookie_header: str, keys: KeyFile, sessions: InspectorSessions) -> Key | None:
    for pair in cookie_header.split(";"):
        name, _, value = pair.strip().partition("=")
        if name == UI_COOKIE and value:
            return sessions.find(value, keys)
    return None


class Guard:
    """The checks above, for one request's ASGI scope: `admit` names its caller or raises
    the refusal; `middleware` applies it to every HTTP request Litestar serves (the fast
    relay, proxy/relay/passthrough.py, calls `admit` itself)."""

    def __init__(self, settings: Settings, keys: KeyFile, sessions: InspectorSessions) -> None:
        self.settings = settings
        self.keys = keys
        self.sessions = sessions
        self.hosts = LOOPBACK_NAMES | _split(settings.allowed_hosts) | {settings.host.lower()}
        self.loopback = is_loopback(settings.host)
        self.origins = _split(settings.allowed_origins)

    def host_allowed(self, host: str) -> bool:
        if host in self.hosts:
            return True
        try:
            ipaddress.ip_address(host)  # an address cannot be rebound to another machine
            return True
        except ValueError:
            return False

    def admit(self, scope: Scope, path: str) -> Caller:
        """The caller of a request to `path` (its routed_path), or the error refusing it.
        The client's Authorization header is removed from the scope once judged."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope["headers"]}
        host = _host_of(headers.get("host", ""))
        if host and not self.host_allowed(host):
            raise Forbidden(
                f"this proxy does not answer to the host name {host!r}; add it to "
                "allowed_hosts", code="host_not_allowed",
            )
        origin = headers.get("origin")
        if origin is not None:
            own = origin.lower().rstrip("/").split("://", 1)[-1] == headers.get(
                "host", "").lower()
            if not own and origin.lower().rstrip("/") not in self.origins:
                raise Forbidden(
                    f"requests from the web origin {origin!r} are not allowed; add it "
                    "to allowed_origins to let that site call the proxy",
                    code="origin_not_allowed",
                )
        ui = is_inspector(path)
        json_route = not path.startswith("/v1/") or path == "/v1/chat/completions"
        has_body = headers.get("content-length", "0") != "0" or (
            "transfer-encoding" in headers)
        if json_route and scope.get("method") in _BODY_METHODS and has_body:
            media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            form = ui and media in _FORM_TYPES
            upload = media == _UPLOAD_TYPE and _takes_uploads(scope, path, headers)
            if media not in _JSON_TYPES and not media.endswith("+json") and not (
                form or upload
            ):
                raise UnsupportedMediaType(
                    f"send the body as JSON with Content-Type: application/json (got "
                    f"{media or 'none'!r})", param="Content-Type",
                )
        keys = self.keys
        open_path = path in _OPEN_PATHS or ui
        closed = is_closed(self.settings, keys)
        if not keys.active and not closed:
            return Caller(None)
        authorization = headers.get("authorization", "")
        scheme, _, secret = authorization.partition(" ")
        key = keys.find(secret.strip()) if scheme.lower() == "bearer" else None
        if ui:
            key = key or _cookie_key(headers.get("cookie", ""), keys, self.sessions)
            if key is not None and not key.reaches_memory:
                key = None  # a key that only relays chats cannot sign in to the inspector
        if key is None and not open_path:
            raise NotAuthenticated(
                closed_message(self.settings, keys) if closed else KEY_REQUIRED)
        who = Caller(key)
        if key is not None and not path.startswith("/v1/"):
            audit.info("%s %s by %s", scope.get("method"), path, key.id)
        if key is None:  # /health: liveness only; the inspector: its sign-in form
            who = Caller(ANONYMOUS)
        elif not path.startswith("/v1/") and path not in _OPEN_PATHS and not (
            key.reaches_memory
        ):
            raise Forbidden(
                "this key relays chats only (it has no agent list); the memory and agent "
                "routes need an admin key or one with agents (`mnemoproxy keys add --agents "
                "A,B`, or '*' for every agent)", code="admin_required",
            )
        elif path.startswith(_ADMIN_ONLY) and not key.admin:
            raise Forbidden(f"{path} is for admin keys: it spans every agent",
                            code="admin_required")
        # The client's key stops here: the upstream gets the proxy's own, if any.
        scope["headers"] = [(k, v) for k, v in scope["headers"]
                            if k.lower() != b"authorization"]
        return who

    def middleware(self, app: ASGIApp) -> ASGIApp:
        """Litestar middleware: every HTTP request admitted, its caller in the scope."""

        async def checked(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                who = self.admit(scope, routed_path(scope))
                scope.setdefault("state", {})["caller"] = who
            await app(scope, receive, send)

        return checked
