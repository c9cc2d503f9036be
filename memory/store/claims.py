"""Store SQL for distillation claims: which process distils a session now.

Replicas on one PostgreSQL database all distil (memory/write/pipeline.py): each arms its own
debounce timers, and the first whose timer fires claims the session, a lease that runs
until `until` and that its holder renews while it works. Another process meets the claim,
and looks again once the lease would have run out: a holder that died (kill -9, a machine
gone) simply stops renewing. A claim is taken under the store's write lock, one writer
across every replica, so no two processes ever hold one session; and a distillation is
written only while its turns are all still pending (distillations.py), so even a lease
that ran out under a slow holder never writes a session twice.
"""

from __future__ import annotations

import sqlite3

from mnemoproxy.memory.store.db import Database, require_agent


class ClaimQueries(Database):
    async def claim_distillation(
        self, agent_id: str, session_id: int, holder: str, *, until: float, now: float
    ) -> float | None:
        """Claim (or, as its holder, renew) the session's distillation until `until`. None
        when `holder` holds it now; else the time the other holder's lease runs out."""
        require_agent(agent_id)

        def claim(db: sqlite3.Connection) -> float | None:
            taken = db.execute(
                "INSERT INTO distillation_claims (session_id, agent_id, holder, until) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
                "holder = excluded.holder, until = excluded.until "
                "WHERE distillation_claims.until < ? "
                "OR distillation_claims.holder = excluded.holder RETURNING holder",
                (session_id, agent_id, holder, until, now),
            ).fetchone()
            if taken is not None:
                return None
            held = db.execute("SELECT until FROM distillation_claims WHERE session_id = ?",
                              (session_id,)).fetchone()
            return float(held[0]) if held is not None else None

        return await self._write_in_one_hop(claim)

    async def release_distillation(self, session_id: int, holder: str) -> None:
        await self._write_in_one_hop(lambda db: db.execute(
            "DELETE FROM distillation_claims WHERE session_id = ? AND holder = ?",
            (session_id, holder)))
