"""A capable core model, played from LoCoMo's annotations: asked to distil a session, it
answers with that session's own summary as the episode and the first speaker's annotated
observations as facts about the user (the speaker's name written "User"), each naming the
turns it was drawn from, as the distillation prompt numbers them. These are true,
well-formed facts of the kind a capable model writes."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from tests.support.data.locomo import LocomoSample, LocomoSession
from tests.support.servers.fake_upstream import ChatCall

# "[Turn 3 · ...]\nUser: <text>" as the distillation prompt writes each turn.
_TURN = re.compile(r"^\[Turn (\d+)[^\]]*\]\nUser: (.*)$", re.MULTILINE)
KEY_CHARS = 80


def _key(text: str) -> str:
    return " ".join(text.split())[:KEY_CHARS]


class AnnotatedCoreModel:
    """Behaviour for the fake upstream (FakeUpstream.answer_model)."""

    def __init__(self, samples: Sequence[LocomoSample],
                 pairs: dict[tuple[str, int], list[tuple[str, str]]]) -> None:
        """`pairs`: each (sample id, session number)'s turns as ingested (user, assistant)."""
        self.sessions: dict[str, tuple[LocomoSample, LocomoSession, list[tuple[str, str]]]] = {}
        for sample in samples:
            for session in sample.sessions:
                ingested = pairs.get((sample.sample_id, session.number), [])
                for user, _ in ingested:
                    self.sessions.setdefault(_key(user), (sample, session, ingested))
        self.proposed = 0  # facts answered, over all calls

    def answer(self, prompt: str) -> dict[str, Any]:
        numbered = {_key(text): int(number) for number, text in _TURN.findall(prompt)}
        found = next((self.sessions[k] for k in numbered if k in self.sessions), None)
        empty: dict[str, Any] = {
            "episode": {"summary": "", "topics": [], "entities": [], "decisions": [],
                        "action_items": [], "salience": 0.1},
            "pinned_candidates": [], "identity_facts": [], "procedures": []}
        if found is None:
            return empty
        sample, session, ingested = found
        # A dia_id's turn: the ingested pair holding that utterance, as the prompt numbers it.
        position = {turn.dia_id: turn.index // 2 for turn in session.turns}
        name = sample.speaker_a
        facts = []
        for text, dia_ids in session.sourced.get(name, []):
            turns = sorted({numbered[k] for d in dia_ids if d in position
                            and (k := _key(ingested[position[d]][0])) in numbered})
            if dia_ids and not turns:
                continue  # drawn from turns of another part of the session
            facts.append({"content": re.sub(rf"\b{re.escape(name)}\b", "User", text),
                          "salience": 0.6, "tags": [], "turns": turns})
        self.proposed += len(facts)
        return {**empty, "episode": {**empty["episode"], "summary": session.summary,
                                     "salience": 0.5},
                "pinned_candidates": facts}

    async def respond(self, call: ChatCall) -> web.StreamResponse:
        messages = call.payload.get("messages", [])
        prompt = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        content = json.dumps(self.answer(prompt))
        return web.json_response(call.completion(
            {"role": "assistant", "content": content}, "stop", len(content) // 4))
