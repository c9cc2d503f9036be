"""The LLM distiller: one core-model call turns a session into an episode and facts.

One call per session, and a second, shorter one only when the first ran out of tokens and
could not be read. What comes back is checked: secrets dropped, facts kept only where the
user's own words support them (grounding.py). Failures surface as `UpstreamError` /
`UpstreamTimeout` (the model server) or `DistillError` (its output); retries, backoff, the
circuit breaker and dead-lettering belong to the caller, which sees every session's
outcome.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from mnemoproxy.errors import DistillError, UpstreamTimeout
from mnemoproxy.memory.core_model.client import Completion, CoreModel
from mnemoproxy.memory.distill.grounding import ground
from mnemoproxy.memory.distill.parse import (
    DISTILLATION_SCHEMA,
    distillation_schema,
    parse_distillation,
)
from mnemoproxy.memory.models import Distillation, EpisodeDraft, FactDraft, SessionInput, Turn
from mnemoproxy.memory.write.redact import looks_like_secret, redact_secrets
from mnemoproxy.text_templates import text_templates

log = logging.getLogger(__name__)

DEFAULT_TEMPLATES_DIR = Path(__file__).parent / "prompts"
SYSTEM_TEMPLATE = "distill_system.j2"
USER_TEMPLATE = "distill_user.j2"
# The core client enforces `timeout` itself; this margin lets its own, more precise error
# win, while still bounding a client that ignores the timeout it was given.
TIMEOUT_GRACE_SECONDS = 1.0
TRUNCATION_MARK = " … [truncated]"
# The second request after an answer that ran out of tokens: fewer facts, fewer words.
SHORT_SCHEMA = distillation_schema(max_facts=3)
# The core model's tokenizer is unknown here: a prompt is sized by characters, at fewer
# characters per token than English averages (about 4), so that it fits with a margin.
CHARS_PER_TOKEN = 3
TURN_FRAME_CHARS = 40  # "[Turn 12 · 2024-05-08 14:30]", "User: ", "Assistant: "
MIN_PART_CHARS = 2000  # however small the context: parts of at least this much
SHORTER_PLEASE = (
    "\n\nYour previous answer was too long and was cut off. Answer again, briefly: a "
    "one-sentence summary and at most three facts."
)


class LLMDistiller:
    """Distils sessions with the core model; implements `Distiller`.

    `max_turn_chars` caps a user message in the prompt and `max_reply_chars` an assistant
    reply, because a pasted log or a long generated answer would otherwise crowd out the
    rest of the session. `context_tokens` is the context one call may fill, prompt and
    answer (`max_tokens`); a session whose prompt would not fit is distilled in parts.
    """

    def __init__(
        self,
        core: CoreModel,
        *,
        timeout: float = 60.0,
        templates_dir: Path = DEFAULT_TEMPLATES_DIR,
        max_tokens: int = 1024,
        max_turn_chars: int = 4000,
        max_reply_chars: int = 400,
        context_tokens: int = 4096,
        concurrency: int = 1,
    ):
        self._core = core
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.max_turn_chars = max_turn_chars
        self.max_reply_chars = max_reply_chars
        self.context_tokens = context_tokens
        # Distillations queue here, not at the model server: with one server slot, a chat
        # sent meanwhile would otherwise wait behind a whole distillation.
        self._slots = asyncio.Semaphore(concurrency)
        environment = text_templates(templates_dir)
        # Loaded now so that a missing or broken template stops start-up, not the first session.
        self._system_template = environment.get_template(SYSTEM_TEMPLATE)
        self._user_template = environment.get_template(USER_TEMPLATE)

    def render_messages(self, session: SessionInput) -> list[dict[str, Any]]:
        """The chat messages sent to the core model for this session. The system message does
        not depend on the session, so a server with prefix caching can reuse it."""
        session_date = session.session_date or _first_timestamp(session.turns)
        user_prompt = self._user_template.render(
            session_date=_format_day(session_date) if session_date else "unknown",
            session_date_known=session_date is not None,
            known_identity=session.known_identity,
            recent_episodes=session.recent_episodes,
            turns=[self._prompt_turn(turn) for turn in session.turns],
        )
        return [
            {"role": "system", "content": self._system_template.render().strip()},
            {"role": "user", "content": user_prompt.strip()},
        ]

    async def distill(self, session: SessionInput) -> Distillation:
        """One session's distillation, grounded in what the user said. A session longer
        than the core model's context is distilled in parts, one call each. An answer cut
        off by `max_tokens` keeps what it finished; one that cannot be read that way is
        asked for once more, shorter, and then given up on with the reason."""
        if not any(turn.user.strip() or turn.assistant.strip() for turn in session.turns):
            return Distillation()
        parts = self.parts(session)
        if len(parts) > 1:
            log.info(
                "session %s is longer than core_context_tokens (%d): distilling it in %d parts",
                session.session_id, self.context_tokens, len(parts),
            )
        distilled = []
        offset = 0
        async with self._slots:
            for turns in parts:
                part = dataclasses.replace(session, turns=turns)
                # Checked against the turns the model saw, before the parts are joined.
                answer = await self._distil_part(part)
                grounded = ground(_without_secrets(answer, session.session_id), part)
                distilled.append(_shifted(grounded, offset))
                offset += len(turns)
        return _joined(distilled)

    def parts(self, session: SessionInput) -> list[list[Turn]]:
        """The session's turns in consecutive runs whose prompts fit the core model's context
        with room for its answer (one run when the whole session fits)."""
        frame = self._prompt_chars(dataclasses.replace(session, turns=[]))
        budget = max(
            MIN_PART_CHARS,
            (self.context_tokens - self.max_tokens) * CHARS_PER_TOKEN - frame,
        )
        parts: list[list[Turn]] = [[]]
        used = 0
        for turn in session.turns:
            size = TURN_FRAME_CHARS + sum(len(v) for v in self._prompt_turn(turn).values())
            if parts[-1] and used + size > budget:
                parts.append([])
                used = 0
            parts[-1].append(turn)
            used += size
        return parts

    def _prompt_chars(self, session: SessionInput) -> int:
        return sum(len(m["content"]) for m in self.render_messages(session))

    async def _distil_part(self, session: SessionInput) -> Distillation:
        messages = self.render_messages(session)
        answer = await self._ask(messages, DISTILLATION_SCHEMA, session.session_id)
        try:
            distillation = parse_distillation(answer.text, truncated=answer.truncated)
            if answer.truncated and distillation.empty:
                raise DistillError("the answer ran out before it finished anything")
            return distillation
        except DistillError:
            if not answer.truncated:
                raise
        log.info(
            "the core model ran out of tokens (core_max_tokens=%d) distilling session "
            "%s; asking once more for a shorter answer", self.max_tokens, session.session_id,
        )
        shorter = {**messages[-1], "content": messages[-1]["content"] + SHORTER_PLEASE}
        answer = await self._ask([*messages[:-1], shorter], SHORT_SCHEMA, session.session_id)
        try:
            distillation = parse_distillation(answer.text, truncated=answer.truncated)
            if answer.truncated and distillation.empty:
                raise DistillError("the answer ran out before it finished anything")
        except DistillError as exc:
            raise DistillError(
                f"the answer ran past core_max_tokens ({self.max_tokens}) twice and "
                f"could not be read ({exc.reason}); raise core_max_tokens or use a "
                "model that follows the JSON schema"
            ) from exc
        return distillation

    async def _ask(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], session_id: str
    ) -> Completion:
        try:
            async with asyncio.timeout(self.timeout + TIMEOUT_GRACE_SECONDS):
                return await self._core.complete(
                    messages,
                    json_schema=schema,
                    timeout=self.timeout,
                    max_tokens=self.max_tokens,
                )
        except TimeoutError as exc:
            raise UpstreamTimeout(
                f"The core model did not answer within {self.timeout:g} s while distilling "
                f"session {session_id!r}; check the core model server or raise "
                "core_timeout_seconds."
            ) from exc

    def _prompt_turn(self, turn: Turn) -> dict[str, str]:
        return {
            "user": _truncate(turn.user.strip(), self.max_turn_chars),
            # Facts come from the user's words; a reply is there for what they answer.
            "assistant": _truncate(turn.assistant.strip(), self.max_reply_chars),
            "at": _format_moment(turn.at) if turn.at else "",
        }


def _shifted(distillation: Distillation, offset: int) -> Distillation:
    """A part's facts with their source turns counted from the session's first turn."""
    if not offset:
        return distillation

    def shift(facts: list[FactDraft]) -> list[FactDraft]:
        return [dataclasses.replace(f, source_turns=tuple(t + offset for t in f.source_turns))
                for f in facts]

    return dataclasses.replace(distillation, pinned=shift(distillation.pinned),
                               identity=shift(distillation.identity))


def _without_secrets(distillation: Distillation, session_id: str) -> Distillation:
    """Drop facts and list items that carry a credential; redact them from the summary, which
    is kept because the rest of it is still worth remembering."""
    pinned = _keep_clean_facts(distillation.pinned)
    identity = _keep_clean_facts(distillation.identity)
    episode = _clean_episode(distillation.episode) if distillation.episode else None
    dropped = (len(distillation.pinned) - len(pinned)) + (
        len(distillation.identity) - len(identity)
    )
    if dropped:
        # Never log the content: it is the secret.
        log.warning(
            "dropped %d fact(s) that looked like secrets from session %s", dropped, session_id
        )
    return Distillation(episode=episode, pinned=pinned, identity=identity)


def _keep_clean_facts(facts: list[FactDraft]) -> list[FactDraft]:
    return [
        fact
        for fact in facts
        if not looks_like_secret(fact.content) and not any(map(looks_like_secret, fact.tags))
    ]


def _clean_episode(episode: EpisodeDraft) -> EpisodeDraft:
    def clean(items: list[str]) -> list[str]:
        return [item for item in items if not looks_like_secret(item)]

    return dataclasses.replace(
        episode,
        summary=redact_secrets(episode.summary),
        topics=clean(episode.topics),
        entities=clean(episode.entities),
        decisions=clean(episode.decisions),
        action_items=clean(episode.action_items),
        procedures=[p for p in episode.procedures
                    if not any(map(looks_like_secret, (p.name, p.applies_when, *p.steps)))],
    )


def _joined(parts: list[Distillation]) -> Distillation:
    """The distillations of a session's parts as one: facts of every part (the fact planner
    merges repeats), one episode whose summary runs through the parts."""
    if len(parts) == 1:
        return parts[0]
    episodes = [d.episode for d in parts if d.episode is not None]
    episode = None
    if episodes:

        def union(items: list[list[str]]) -> list[str]:
            return list(dict.fromkeys(x for group in items for x in group))

        episode = EpisodeDraft(
            summary=" ".join(e.summary for e in episodes if e.summary),
            topics=union([e.topics for e in episodes]),
            entities=union([e.entities for e in episodes]),
            decisions=union([e.decisions for e in episodes]),
            action_items=union([e.action_items for e in episodes]),
            salience=max(e.salience for e in episodes),
            procedures=[p for e in episodes for p in e.procedures],
        )
    return Distillation(
        episode=episode,
        pinned=[f for d in parts for f in d.pinned],
        identity=[f for d in parts for f in d.identity],
        ungrounded=sum(d.ungrounded for d in parts),
    )


def _first_timestamp(turns: list[Turn]) -> datetime | None:
    return next((turn.at for turn in turns if turn.at is not None), None)


def _format_day(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d} ({moment:%A})"


def _format_moment(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} ({moment:%A})"


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + TRUNCATION_MARK
