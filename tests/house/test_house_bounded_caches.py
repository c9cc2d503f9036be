"""Nothing memory keeps per agent grows with the ids clients make up: a key that may chat
can send any X-Agent-Id, and every read of a new id used to leave an entry behind (a
loaded vector index, an entity list, row counts, the agent's active session) that nothing
ever removed. Thousands of minted ids later, each of those holds its bound."""

from __future__ import annotations

import asyncio

from mnemoproxy.bounded import LruDict
from mnemoproxy.memory import Memory, Turn
from mnemoproxy.memory.search import vectors
from mnemoproxy.memory.store import db
from mnemoproxy.memory.store.knowledge import items
from mnemoproxy.memory.write.debounce import ACTIVE_SESSIONS_KEPT, DebounceScheduler

MINTED = 3000


def test_an_lru_dict_forgets_the_least_recently_used():
    kept: LruDict[str, int] = LruDict(2)
    kept["a"], kept["b"] = 1, 2
    assert kept.get("a") == 1  # read: now the most recent
    kept["c"] = 3
    assert list(kept) == ["a", "c"]


async def test_reads_for_thousands_of_minted_agent_ids_keep_every_cache_bounded(
    memory: Memory, monkeypatch
):
    monkeypatch.setattr(vectors, "LOADED_INDEXES", 64)
    # A real agent, whose index holds vectors, stays usable throughout.
    await memory.ingest("real", "c", [Turn("My locker code is 4417.", "Noted.")],
                        skip_extraction=True)
    await memory.drain()
    for number in range(MINTED):
        agent = f"minted-{number}"
        await memory.search(agent, "what is my locker code?")
        await memory.store.entity_names(agent)
    loaded = memory._vectors._loaded  # type: ignore[attr-defined]
    assert len(loaded) <= 64 + 1
    assert len(memory.store._entity_cache) <= items.ENTITY_CACHE_AGENTS  # type: ignore[attr-defined]
    assert len(memory.store._agent_rows_counted) <= db.ROWS_COUNTED_KEPT  # type: ignore[attr-defined]
    found = await memory.search("real", "locker code")
    assert any("4417" in r.text for r in found)


async def test_the_debouncer_keeps_a_bounded_record_of_active_sessions():
    async def distil(agent_id: str, session_id: int) -> None:
        return None

    scheduler = DebounceScheduler(3600, distil)
    for number in range(ACTIVE_SESSIONS_KEPT + 500):
        scheduler.touch(f"minted-{number}", 1)
    assert len(scheduler._active_session) == ACTIVE_SESSIONS_KEPT  # type: ignore[attr-defined]
    await scheduler.close(timeout=1)
    await asyncio.sleep(0)
