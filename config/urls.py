"""URLs as the proxy shows them: without the credentials a setting's URL may carry.

`upstream_url = "http://user:password@host/v1"` (a reverse proxy with basic auth),
`core_url`, `embedding_url` and `store_url` (PostgreSQL's password) are the operator's
secrets: an error message, /health, the log and the start-up lines name the server
without them. The user name stays (it tells which account); a password, or userinfo
without one (often a token), shows as ***. `without_credentials` is for a URL the code
holds, `hide_credentials` for text that may quote one (another library's exception, a
formatted log line).
"""

from __future__ import annotations

import re

HIDDEN = "***"
# scheme://userinfo@ : found from its "://" only, the userinfo read without backtracking.
_USERINFO = re.compile(r"(?<=://)([^/?#\s@:]*+)(:?)[^/?#\s@]*+@")


def _hidden(match: re.Match[str]) -> str:
    user, colon = match.group(1), match.group(2)
    return f"{user}:{HIDDEN}@" if colon else f"{HIDDEN}@"


def hide_credentials(text: str) -> str:
    """`text` with the password (or token) of every URL in it shown as ***."""
    return _USERINFO.sub(_hidden, text) if "://" in text else text


def without_credentials(url: str) -> str:
    """`url` with its password (or token) shown as ***."""
    return hide_credentials(url)
