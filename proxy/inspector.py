"""The web inspector at /ui."""

from __future__ import annotations

from pathlib import Path

from litestar import Response, route

INSPECTOR = Path(__file__).parent / "static" / "inspector.html"


@route("/ui", http_method=["GET"], include_in_schema=False)
async def inspector() -> Response[bytes]:
    """The web inspector: one page over the routes above (agents, facts, episodes, sessions,
    search; add, delete, forget). It sends the key typed into it, like any client."""
    return Response(INSPECTOR.read_bytes(), media_type="text/html; charset=utf-8",
                    headers={"Content-Security-Policy": "default-src 'self'; "
                             "script-src 'unsafe-inline'; style-src 'unsafe-inline'",
                             "X-Frame-Options": "DENY"})


INSPECTOR_ROUTES = [inspector]
