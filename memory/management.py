"""Memory looked at and fixed by hand: the management API's operations (agents, facts,
sessions, episodes, procedures, documents, export and import, forgetting), as one part of
the `Memory` front door (memory/service.py).

An item that is not there is NotFound, worded the same way everywhere: "agent 'alice'
has no fact 3", with the id's parameter named.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from mnemoproxy.config.settings import Settings
from mnemoproxy.errors import InvalidArgument, NotFound
from mnemoproxy.memory.background.scrub import ScrubSchedule
from mnemoproxy.memory.distill.grounding import states
from mnemoproxy.memory.models import Change, FactDraft, ProcedureDraft
from mnemoproxy.memory.store import Store
from mnemoproxy.memory.store.db import require_agent
from mnemoproxy.memory.store.knowledge.documents import StoredChunk, StoredDocument
from mnemoproxy.memory.store.knowledge.procedures import StoredProcedure
from mnemoproxy.memory.store.records import Episode, Fact
from mnemoproxy.memory.write.documents import media_type_of, parse_document

if TYPE_CHECKING:
    from mnemoproxy.memory.background.embedding_worker import EmbeddingWorker
    from mnemoproxy.memory.search.hybrid import Retriever
    from mnemoproxy.memory.search.vectors import VectorIndexes
    from mnemoproxy.memory.write.pipeline import WritePath

log = logging.getLogger(__name__)

T = TypeVar("T")


def missing(agent_id: str, what: str, item_id: int) -> NotFound:
    """The error for an item the agent does not have; `param` names the id ("fact_id")."""
    param = f"{what.split()[-1]}_id"
    return NotFound(f"agent {agent_id!r} has no {what} {item_id}", param=param)


def must_exist(found: T | Literal[False] | None, agent_id: str, what: str, item_id: int) -> T:
    """`found`, unless the store said there is no such item (None, or False from a delete)."""
    if found is None or found is False:
        raise missing(agent_id, what, item_id)
    return found


class Management:
    """The management operations of `Memory`, over the parts it owns."""

    settings: Settings
    store: Store
    _writer: WritePath
    _worker: EmbeddingWorker
    _vectors: VectorIndexes
    _retriever: Retriever
    _measured: OrderedDict[str, Any]
    _with_documents: dict[str, tuple[bool, float]]
    _scrubs: ScrubSchedule
    _documents: ThreadPoolExecutor  # where documents are read (PARSE_THREADS)

    async def _known(self, agent_id: str) -> None:
        if not await self.has_agent(agent_id):
            raise NotFound(f"no agent {agent_id!r} in memory", param="agent_id")

    async def has_agent(self, agent_id: str) -> bool:
        """Whether memory holds anything of the agent."""
        return await self.store.has_agent(agent_id)

    async def identity_facts(self, agent_id: str) -> list[Fact]:
        """The agent's current identity facts, most salient first (at most
        `identity_max_facts`)."""
        facts = await self.store.current_facts(agent_id, "identity")
        return facts[: self.settings.identity_max_facts]


    async def agents(self) -> list[dict[str, Any]]:
        """Every agent with its counts: current facts, live episodes, turns, last activity."""
        return await self.store.agents_summary()

    async def facts(
        self,
        agent_id: str,
        *,
        kind: str | None = None,
        status: str = "current",
        text: str | None = None,
        limit: int = 100,
        after_id: int = 0,
    ) -> list[tuple[Fact, str | None]]:
        """A page of the agent's facts in stored order, each with its conversation id (see
        Store.list_facts). An agent memory has never seen is NotFound, not an empty page."""
        await self._known(agent_id)
        return await self.store.list_facts(
            agent_id, kind=kind, status=status, text=text, limit=limit, after_id=after_id
        )

    async def agent(self, agent_id: str) -> dict[str, Any]:
        """One agent's counts (as in `agents`) and identity facts."""
        await self._known(agent_id)
        summary = next(a for a in await self.store.agents_summary() if a["id"] == agent_id)
        return {**summary, "identity": [f.content for f in await self.identity_facts(agent_id)]}

    async def sessions(self, agent_id: str, *, limit: int, after_id: int) -> list[dict[str, Any]]:
        await self._known(agent_id)
        return await self.store.sessions_page(agent_id, limit=limit, after_id=after_id)

    async def counts(self, agent_id: str) -> dict[str, int]:
        """How much of each the agent holds (current identity and pinned facts, episodes,
        sessions, messages, documents, procedures)."""
        await self._known(agent_id)
        return await self.store.agent_counts(agent_id)

    async def session(self, agent_id: str, session_id: int) -> dict[str, Any]:
        """One session as `sessions` lists it: key, title, times, messages, first words."""
        await self._known(agent_id)
        found = await self.store.session_summary(agent_id, session_id)
        return must_exist(found, agent_id, "session", session_id)

    async def distilled_from(
        self, agent_id: str, session_id: int
    ) -> tuple[list[Episode], list[Fact]]:
        """What memory drew from one session: its episodes, and the facts it is the
        source of (current and superseded)."""
        await self._known(agent_id)
        return await self.store.distilled_from_session(agent_id, session_id)

    async def session_messages(self, agent_id: str, session_id: int) -> list[dict[str, Any]]:
        await self._known(agent_id)
        messages = await self.store.session_transcript(agent_id, session_id)
        if not messages:
            raise missing(agent_id, "session", session_id)
        return [{"turn_index": m.turn_index, "role": m.role, "content": m.content, "at": m.at,
                 "retracted": m.retracted} for m in messages]

    async def episodes(self, agent_id: str, *, limit: int, after_id: int) -> list[Episode]:
        await self._known(agent_id)
        return await self.store.episodes_page(agent_id, limit=limit, after_id=after_id)

    async def add_fact(
        self, agent_id: str, content: str, *, kind: str = "pinned", salience: float = 0.5
    ) -> int:
        """A fact stated by hand (the agent is created if new); returns its id."""
        await self.store.ensure_agent(agent_id)
        draft = FactDraft(self._writer.scrub(content), kind, salience)  # type: ignore[arg-type]
        return await self.store.insert_fact(agent_id, draft)

    async def edit_fact(
        self, agent_id: str, fact_id: int, *, content: str | None = None,
        salience: float | None = None, keep: bool | None = None,
    ) -> int:
        """Change a current fact in place; its id is returned, the same one. New content
        replaces its text (the old text stays in its history, as a value it superseded);
        a salience or `keep` (consolidation never fades nor evicts a kept fact) is set."""
        current = await self.store.fact(agent_id, fact_id)
        if current is None or current.valid_to is not None:
            raise missing(agent_id, "current fact", fact_id)
        kept = current.pinned_at is not None if keep is None else keep
        if content is not None:
            content = self._writer.scrub(content)
        if content is not None and content != current.content:
            # The old value's own words are not served as current any more.
            await self._retract(agent_id, current)
            rewritten = await self.store.rewrite_fact(
                agent_id, fact_id, content, current.salience if salience is None else salience)
            if not rewritten:
                raise missing(agent_id, "current fact", fact_id)
        elif salience is not None:
            await self.store.set_fact_salience(agent_id, fact_id, salience)
        if kept != (current.pinned_at is not None):
            await self.store.set_fact_pinned(agent_id, fact_id, kept)
        return fact_id

    async def delete_fact(self, agent_id: str, fact_id: int) -> int:
        """Delete a fact by hand: reads no longer see it, nor the transcript lines that
        stated it (they stay in the transcript, marked retracted); the row stays as
        history. Returns how many lines were retracted."""
        fact = must_exist(await self.store.fact(agent_id, fact_id), agent_id, "fact", fact_id)
        must_exist(await self.store.delete_fact(agent_id, fact_id), agent_id, "fact", fact_id)
        return await self._retract(agent_id, fact)

    async def _retract(self, agent_id: str, fact: Fact) -> int:
        """Take the lines that stated `fact` out of what is served: those of the turns it was
        drawn from, or, for a fact that does not know them (stored before facts kept their
        turns), the lines of its session that say it (grounding's test of support)."""
        lines = await self.store.fact_source_lines(agent_id, fact.id)
        if not lines and fact.source_session_id is not None:
            lines = [(i, text) for i, text in
                     await self.store.session_lines(agent_id, fact.source_session_id)
                     if states(fact.content, text)]
        return await self.store.retract_lines(agent_id, [i for i, _ in lines])

    async def forget_session(self, agent_id: str, session_id: int) -> dict[str, int]:
        """Forget one session for good (memory/store/management/forget.py): its messages,
        episodes, the facts only it stated, and the pages that held them."""
        await self._known(agent_id)
        async with self._worker.paused():
            forgotten = await self.store.forget_session(agent_id, session_id)
        if forgotten is not None:
            self._scrubs.after_forget()
        await self._vectors.drop_deleted(agent_id)
        self.store.drop_cached_entities(agent_id)
        return must_exist(forgotten, agent_id, "session", session_id)

    async def delete_episode(self, agent_id: str, episode_id: int) -> None:
        deleted = await self.store.delete_episode(agent_id, episode_id)
        must_exist(deleted, agent_id, "episode", episode_id)

    async def fact_history(self, agent_id: str, fact_id: int) -> list[Fact]:
        """The fact's line of values, oldest first (each superseded by the next)."""
        ids = await self.store.fact_history(agent_id, fact_id)
        facts = [await self.store.fact(agent_id, i) for i in ids]
        return [f for f in facts if f is not None]

    async def fact(self, agent_id: str, fact_id: int) -> Fact:
        return must_exist(await self.store.fact(agent_id, fact_id), agent_id, "fact", fact_id)

    async def forget_agent(self, agent_id: str) -> dict[str, int] | None:
        """Forget the agent completely: every row, full-text entry, vector and index file,
        and the pages that held its text. Returns what was deleted (None: unknown agent)."""
        self._writer.scheduler.forget(agent_id)
        async with self._worker.paused():
            forgotten = await self.store.forget_agent(agent_id)
            await self._vectors.forget(agent_id)
        if forgotten is not None:
            self._scrubs.after_forget()
        self._retriever.common_terms.forget(agent_id)
        self.store.drop_cached_entities(agent_id)
        self._measured.pop(agent_id, None)
        self._with_documents.pop(agent_id, None)
        if forgotten is not None:
            log.info("forgot agent %s: %s", agent_id, forgotten)
        return forgotten

    async def export_agent(self, agent_id: str) -> list[dict[str, Any]] | None:
        """The agent's memory as export records (memory/store/management/portable.py),
        vectors aside; None for an agent memory has never seen."""
        return await self.store.export_agent(agent_id)

    async def import_agent(self, agent_id: str, records: list[dict[str, Any]]) -> dict[str, int]:
        """Merge export records into the agent; what is new is embedded in the background.
        Their texts are scrubbed as every other way in (credentials, personal data)."""
        scrub = self._writer.scrub
        for record in records:
            if not isinstance(record, dict):
                continue
            for field in ("content", "summary"):
                if isinstance(record.get(field), str):
                    record[field] = scrub(record[field])
            messages = record.get("messages")
            # The store's import checks every field; a malformed one must reach it intact.
            for message in messages if isinstance(messages, list) else ():
                if isinstance(message, dict) and isinstance(message.get("content"), str):
                    message["content"] = scrub(message["content"])
        added = await self.store.import_agent(agent_id, records)
        self.store.drop_cached_entities(agent_id)
        return added

    # -- procedures (the how-tos sessions taught) ---------------------------------------

    async def procedures(
        self, agent_id: str, *, limit: int, after_id: int
    ) -> list[StoredProcedure]:
        await self._known(agent_id)
        return await self.store.procedures_page(agent_id, limit=limit, after_id=after_id)

    async def procedure(self, agent_id: str, procedure_id: int) -> StoredProcedure:
        found = await self.store.procedure(agent_id, procedure_id)
        return must_exist(found, agent_id, "procedure", procedure_id)

    def _scrubbed(self, name: str, steps: Sequence[str], applies_when: str) -> ProcedureDraft:
        scrub = self._writer.scrub
        return ProcedureDraft(scrub(name), [scrub(s) for s in steps], scrub(applies_when))

    async def add_procedure(
        self, agent_id: str, name: str, steps: Sequence[str], applies_when: str = ""
    ) -> int:
        """A procedure stated by hand (the agent is created if new), replacing the agent's
        procedure of the same name; returns its id."""
        return await self.store.add_procedure(
            agent_id, self._scrubbed(name, steps, applies_when))

    async def edit_procedure(
        self, agent_id: str, procedure_id: int, *, name: str | None = None,
        steps: Sequence[str] | None = None, applies_when: str | None = None,
    ) -> None:
        """Change a procedure in place; a name another of the agent's has is refused."""
        current = await self.procedure(agent_id, procedure_id)
        draft = self._scrubbed(
            current.name if name is None else name,
            current.steps if steps is None else steps,
            current.applies_when if applies_when is None else applies_when,
        )
        updated = await self.store.update_procedure(agent_id, procedure_id, draft)
        if updated is None:
            raise missing(agent_id, "procedure", procedure_id)
        if not updated:
            raise InvalidArgument(
                f"agent {agent_id!r} already has a procedure named {draft.name!r}; delete "
                "it first or pick another name", param="name")

    async def delete_procedure(self, agent_id: str, procedure_id: int) -> None:
        """Delete a procedure for good."""
        deleted = await self.store.delete_procedure(agent_id, procedure_id)
        must_exist(deleted, agent_id, "procedure", procedure_id)

    # -- documents (a knowledge base per agent) -------------------------------------------

    async def add_document(
        self,
        agent_id: str,
        data: bytes | str,
        *,
        media_type: str | None = None,
        title: str | None = None,
        filename: str | None = None,
    ) -> tuple[StoredDocument, Change]:
        """Parse a document (as `media_type` when it is a supported one, else as its file
        name says), cut it into chunks along its structure and store them as the agent's
        items (the agent is created when new), scrubbed as everything stored is; embedded
        before this returns, as an ingest is. The same bytes sent again are recognised
        ("unchanged": nothing is parsed or stored); a file of the same name with other
        content replaces the older one ("updated"). InvalidArgument for a file that cannot
        be read, TooLarge for one of too many chunks."""
        require_agent(agent_id)
        raw = data.encode("utf-8") if isinstance(data, str) else data
        content_hash = hashlib.sha256(raw).hexdigest()
        known = await self.store.document_with_content(agent_id, content_hash)
        if known is not None:
            return known, "unchanged"
        scrub = self._writer.scrub
        kind = media_type_of(filename, media_type)

        def parse() -> tuple[str, list[tuple[int, str, int | None, str]], str]:
            parsed = parse_document(data, kind, title=title, filename=filename)
            chunks = [(c.position, scrub(c.heading), c.page, scrub(c.text))
                      for c in parsed.chunks]
            return scrub(parsed.title), chunks, parsed.media_type

        kept_title, chunks, kind = await asyncio.get_running_loop().run_in_executor(
            self._documents, parse)
        # A replaced document's chunks go with their vectors: not while they are embedded.
        async with self._worker.paused():
            document_id, change = await self.store.add_document(
                agent_id, title=kept_title, source=scrub(filename or ""), media_type=kind,
                size_bytes=len(raw), chunks=chunks, content_hash=content_hash,
            )
        if change == "updated":
            self._scrubs.after_forget()
            await self._vectors.drop_deleted(agent_id)
        self._with_documents[agent_id] = (True, time.monotonic())
        await self._worker.drain(flush=False)
        found = await self.store.document(agent_id, document_id)
        assert found is not None
        return found[0], change

    async def documents(
        self, agent_id: str, *, limit: int, after_id: int = 0
    ) -> list[StoredDocument]:
        await self._known(agent_id)
        return await self.store.documents_page(agent_id, limit=limit, after_id=after_id)

    async def document(
        self, agent_id: str, document_id: int
    ) -> tuple[StoredDocument, list[StoredChunk]]:
        found = await self.store.document(agent_id, document_id)
        return must_exist(found, agent_id, "document", document_id)

    async def delete_document(self, agent_id: str, document_id: int) -> int:
        """Delete a document for good (its chunks, their search entries and vectors);
        returns how many chunks went."""
        async with self._worker.paused():
            deleted = await self.store.delete_document(agent_id, document_id)
        if deleted is not None:
            self._scrubs.after_forget()
        self._with_documents.pop(agent_id, None)
        await self._vectors.drop_deleted(agent_id)
        return must_exist(deleted, agent_id, "document", document_id)

    async def audit(self, agent_id: str, action: str, by: str) -> None:
        """Note in the agent's processing log who changed its memory through the API."""
        await self.store.log_event(agent_id, "api_change", {"action": action, "by": by})

    async def processing_log(self, agent_id: str, limit: int = 100) -> list[dict[str, Any]]:
        """The agent's latest processing events, newest first."""
        return await self.store.processing_log(agent_id, limit)
