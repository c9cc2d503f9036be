"""Whether the upstream can be reached: a connection opened to its host and port (and
closed: no request is sent, so the model server logs nothing and no key is needed), with a
short timeout, at start-up and then at most every PROBE_SECONDS, in the background.
/health shows the last answer without waiting for a new one. URLs are shown without their
credentials (config/urls.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from mnemoproxy.proxy.relay.upstream import Upstream

log = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 2.0
PROBE_SECONDS = 30.0  # how long an answer is shown before it is asked again


@dataclass(frozen=True)
class Reachability:
    """The last look at the upstream: `reachable` None before the first; `error` why it
    could not be reached."""

    reachable: bool | None
    checked_at: float | None = None
    error: str | None = None


class UpstreamProbe:
    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.url = upstream.shown_url
        self.last = Reachability(None)
        self._looking: asyncio.Task[Reachability] | None = None

    async def check(self) -> Reachability:
        """Look now (at most PROBE_TIMEOUT_SECONDS)."""
        parts = urlsplit(self.upstream.base_url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_SECONDS):
                _, writer = await asyncio.open_connection(host, port)
            writer.close()
            found = Reachability(True, time.time())
        except TimeoutError:
            found = Reachability(False, time.time(), error=(
                f"{host}:{port} did not accept a connection within "
                f"{PROBE_TIMEOUT_SECONDS:g} s"))
        except Exception as exc:  # refused, no such host, no route: not reachable
            found = Reachability(False, time.time(), error=f"{host}:{port}: "
                                 f"{getattr(exc, 'strerror', None) or exc}")
        self.last = found
        return found

    def latest(self) -> Reachability:
        """The last answer, at once; an old one is asked again in the background."""
        stale = self.last.checked_at is None or time.time() - self.last.checked_at > PROBE_SECONDS
        if stale and (self._looking is None or self._looking.done()):
            self._looking = asyncio.get_running_loop().create_task(self.check())
        return self.last

    async def aclose(self) -> None:
        if self._looking is not None and not self._looking.done():
            self._looking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._looking
