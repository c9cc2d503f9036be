"""The read path for one chat request: gate -> planner -> injection."""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mnemoproxy.config.settings import Settings
from mnemoproxy.gate.excerpt import terms
from mnemoproxy.gate.inject import inject
from mnemoproxy.gate.messages import (
    continues_after_tools,
    latest_user_index,
    message_text,
    thread_before,
)
from mnemoproxy.gate.planner import MemoryBlock, Planner, Procedure
from mnemoproxy.gate.relevance import (
    REFERENCE_LANGUAGES,
    HeuristicGate,
    make_gate,
    reference_prompts,
)
from mnemoproxy.gate.relevance.asking import only_asks
from mnemoproxy.gate.relevance.languages import content_of
from mnemoproxy.gate.relevance.payload import split_request
from mnemoproxy.gate.relevance.types import Evidence, Gate, GateContext, GateDecision
from mnemoproxy.gate.tokens.counter import count_tokens
from mnemoproxy.memory import (
    CoreModel,
    Fact,
    Kind,
    SearchResult,
    detect_language,
    everyday_zipf,
    latin_language,
    word_languages,
)

# Of the block's budget, how much a decision of each confidence may fill: a weak signal
# gets the best items, not a full block of maybe-related memory. Weak signals are mostly
# requests for suggestions ("any tips for my commute?") whose answer is a preference said
# in passing, rarely the best match, so a weak block still needs room for several items.
BUDGET_SHARE = {"high": 1.0, "medium": 1.0, "low": 0.6}
# How many of the best retrieved items a name's share is counted over.
NAME_SHARE_ITEMS = 20
# Characters per word where a script has no spaces to count words by (a conservative
# count: fewer words, a smaller memory).
WORD_CHARS = 6
# Candidates the planner chooses from: a memory line averages 25-40 tokens, so this is
# comfortably more than fit in the budget.
TOKENS_PER_CANDIDATE = 20
MIN_CANDIDATES, MAX_CANDIDATES = 10, 150
# A question asking how something is done: one of the agent's procedures may answer it.
HOW_TO = re.compile(
    r"\b(?:how (?:do|can|should|would|could|did|does) (?:i|we|you|one)\b|how to\b|"
    r"(?:what|which) (?:are|were) the steps\b|steps (?:to|for)\b|walk me through\b|"
    r"what(?:'s| is) the (?:process|procedure|way) (?:to|for)\b)",
    re.IGNORECASE,
)
# Words of such a question that say nothing of what it asks about.
HOW_TO_FRAME = frozenset(terms(
    "how do does did can could should would one to what which are were is the steps step "
    "walk me through process procedure way again remind tell please"))
# A procedure answers the question when its name, when it applies and its steps hold this
# share of the question's other words, its name at least one of them.
PROCEDURE_SHARE = 0.6
MAX_PROCEDURES = 2
# How much of the conversation before the latest message a follow-up may point back at,
# and memory must not repeat: about the last dozen turns, bounded for the scan.
THREAD_CHARS = 20_000


class MemoryReader(Protocol):
    """What the read path asks of memory (mnemoproxy.memory.Memory is one)."""

    core_model: CoreModel | None

    async def search(
        self, agent_id: str, query: str, *, top_k: int, neighbours: bool = False,
        now: float | None = None,
    ) -> list[SearchResult]: ...

    async def identity_facts(self, agent_id: str) -> list[Fact]: ...

    async def entity_names(self, agent_id: str) -> list[str]: ...

    async def reference_similarities(
        self, agent_id: str, texts: tuple[str, ...]
    ) -> list[float]: ...

    async def common_words(self, agent_id: str) -> frozenset[str]: ...

    async def reference_vectors(self, texts: tuple[str, ...]) -> Any: ...

    async def word_counts(
        self, agent_id: str, text: str
    ) -> tuple[dict[str, int], dict[str, int], int]: ...

    async def has_documents(self, agent_id: str) -> bool: ...

    async def matching_procedures(self, agent_id: str, query: str) -> Sequence[Procedure]: ...


def memory_headers(
    section: str, tokens: int = 0, items: int = 0, confidence: str | None = None
) -> dict[str, str]:
    """The response headers that tell a client what memory did for its request."""
    headers = {
        "X-Memory-Section": section,
        "X-Memory-Tokens": str(tokens),
        "X-Memory-Items": str(items),
    }
    if confidence is not None:
        headers["X-Memory-Confidence"] = confidence
    return headers


@dataclass
class ReadResult:
    decision: GateDecision
    block: MemoryBlock | None = None
    messages: list[dict[str, Any]] | None = None  # the messages to forward, when injected
    only_asks: bool = False  # the message asks and tells nothing of the user's own

    @property
    def restates_memory(self) -> bool:
        """Whether the turn this request makes will only say again what memory holds: it
        asked, and memory was injected to answer it."""
        return self.block is not None and self.only_asks

    @property
    def used(self) -> list[tuple[Kind, int]]:
        """The items the block puts in front of the model (their use counts go up)."""
        return [(item.kind, item.item_id) for item in self.block.items] if self.block else []

    def headers(self) -> dict[str, str]:
        if self.block is None:
            return memory_headers("none")
        return memory_headers(
            self.decision.section,
            self.block.tokens,
            len(self.block.items) + self.block.procedures,
            self.decision.confidence,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "section": self.decision.section,
            "reason": self.decision.reason,
            "confidence": self.decision.confidence if self.decision.inject else None,
            "inject": self.block is not None,
            "block": self.block.text if self.block else None,
            "tokens": self.block.tokens if self.block else 0,
            "items": [
                {"kind": i.kind, "item_id": i.item_id, "text": i.line}
                for i in (self.block.items if self.block else [])
            ],
        }


class ReadPath:
    def __init__(
        self, memory: MemoryReader, gate: Gate, planner: Planner, injection: str
    ) -> None:
        self.memory = memory
        self.gate = gate
        self.planner = planner
        self.injection = injection
        self.candidates = max(
            MIN_CANDIDATES, min(MAX_CANDIDATES, planner.budget // TOKENS_PER_CANDIDATE)
        )

    @classmethod
    async def open(cls, settings: Settings, memory: MemoryReader) -> ReadPath:
        """The read path the settings describe, over `memory`; the tokenizer and the cue
        scanner are loaded now, so the first chat request does not pay for them."""
        gate = make_gate(
            settings.relevance_gate_mode,
            core=memory.core_model,
            read_deadline=settings.memory_read_deadline_seconds,
        )
        await asyncio.to_thread(_warm_up)
        for language in REFERENCE_LANGUAGES:
            await memory.reference_vectors(reference_prompts(language))
        planner = Planner(
            budget_tokens=settings.memory_budget_tokens, suspicious=settings.suspicious_memory
        )
        return cls(memory, gate, planner, settings.injection)

    async def prepare(
        self, agent_id: str, messages: list[dict[str, Any]], now: float | None = None
    ) -> ReadResult:
        position = latest_user_index(messages)
        text = message_text(messages[position].get("content")) if position is not None else ""
        if position is None or not text.strip():
            return ReadResult(GateDecision("none", "no user text to recall for"))
        if continues_after_tools(messages):
            # The model read memory for this question when it chose its tool calls; the
            # results now carry the turn. A block re-read at every tool round would spend
            # the budget again and could change under the model mid-turn.
            return ReadResult(GateDecision("none", "tool results continue a turn already read for"))

        # The conversation so far, as far back as a follow-up points: the request carries
        # it, so memory repeating it is no memory.
        thread = thread_before(messages, position, THREAD_CHARS)
        said = " ".join(thread.split())
        # The message's own words (not the material it hands over), and their language.
        own_words = split_request(text).instruction
        language = detect_language(own_words)
        # One hybrid search serves both the gate's probe and the planner.
        found: list[SearchResult] | None = None

        async def results() -> list[SearchResult]:
            nonlocal found
            if found is None:
                # The messages said around the best matches compete too: an answer
                # often shares no word with the question, the line before it does.
                found = [
                    result for result in await self.memory.search(
                        agent_id, text, top_k=self.candidates, neighbours=True, now=now)
                    # A turn that only asked what memory held says nothing of the user; a
                    # line a deleted or edited fact was drawn from was taken back.
                    if not (result.provenance.get("restates_memory")
                            or result.provenance.get("retracted")
                            or _said_in(result.text, said))
                ]
            return found

        async def probe(names: Sequence[str]) -> Evidence:
            found_items = await results()
            texts = [r.text for r in found_items[:NAME_SHARE_ITEMS]]
            common = await self.memory.common_words(agent_id)
            shares = {
                # A name most of the memory says is as central as a name can be.
                name: 1.0 if name.lower() in common else (
                    sum(name in text for text in texts) / max(1, len(texts))
                )
                for name in names
            }
            wanted = terms(text)
            # Which of the message's own words memory holds, and how rare each is there.
            counts, phrases, items = await self.memory.word_counts(
                agent_id, content_of(own_words, language))
            latin = latin_language(own_words)
            return Evidence(
                words=counts,
                phrases=phrases,
                items=items,
                size=items * mean_words(found_items),
                commonness={word: everyday_zipf(word, word_languages(word, language, latin))
                            for word in counts},
                similarity=nearest_message(found_items),
                # Asked in the message's language: any message is nearer to a memory in
                # its own language than a request in another language is.
                reference=await self.memory.reference_similarities(
                    agent_id, reference_prompts(language)),
                names=[name for name, share in shares.items() if share > 0],
                name_share=max(shares.values(), default=0.0),
                document=document_share(wanted, found_items[:NAME_SHARE_ITEMS]),
                document_words=len(wanted),
            )

        context = GateContext(
            known_entities=await self.memory.entity_names(agent_id), probe=probe,
            documents=await self.memory.has_documents(agent_id),
            language=language,
            thread=thread,
        )
        decision = await self.gate.decide(text, context)
        procedures = await self.procedures_for(agent_id, text)
        if not decision.inject and procedures:
            # A how-to question one of the agent's procedures answers: that procedure,
            # and nothing else of memory the gate did not ask for.
            decision = GateDecision(
                "procedure", f"a procedure answers how to: '{procedures[0].name}'")
            block = self.planner.plan((), (), decision, now, procedures=procedures)
            if block is None:
                return ReadResult(decision)
            return ReadResult(decision, block, inject(messages, block.text, self.injection),
                              only_asks(text))
        if not decision.inject:
            return ReadResult(decision)
        identity = await self.memory.identity_facts(agent_id)
        budget = round(self.planner.budget * BUDGET_SHARE[decision.confidence])
        found = await results()
        # The plan (excerpts, token counts, the render) is the read's
        # largest stretch of pure Python: on a thread the event loop gets the interpreter
        # back within its switch interval and relays other requests meanwhile.
        block = await asyncio.to_thread(functools.partial(
            self.planner.plan, identity, found, decision, now, budget=budget, question=text,
            procedures=procedures,
        ))
        if block is None:
            return ReadResult(decision)
        return ReadResult(decision, block, inject(messages, block.text, self.injection),
                          only_asks(text))


    async def procedures_for(self, agent_id: str, question: str) -> list[Procedure]:
        """The agent's procedures that answer `question`, when it asks how something is done
        (best first); none for any other message."""
        if HOW_TO.search(question) is None:
            return []
        wanted = terms(question) - HOW_TO_FRAME
        if not wanted:
            return []
        found = await self.memory.matching_procedures(agent_id, question)
        return [p for p in found if answers(p, wanted)][:MAX_PROCEDURES]


def answers(procedure: Procedure, wanted: set[str]) -> bool:
    """Whether `procedure` answers a how-to question whose content words are `wanted`."""
    named = terms(f"{procedure.name} {procedure.applies_when}")
    said = named | terms(" ".join(procedure.steps))
    return bool(wanted & named) and len(wanted & said) / len(wanted) >= PROCEDURE_SHARE


def _said_in(item: str, said: str) -> bool:
    """Whether memory's `item` is a message the conversation so far (`said`, its
    whitespace collapsed) already carries."""
    line = " ".join(item.split())
    return bool(line) and line in said


def mean_words(results: Sequence[SearchResult]) -> float:
    """The mean length in words of the items found: with the agent's item count, about how
    many words its memory holds (unspaced scripts count a word per WORD_CHARS characters)."""
    if not results:
        return 0.0
    return sum(max(len(r.text.split()), len(r.text) // WORD_CHARS)
               for r in results) / len(results)


def nearest_message(results: Sequence[SearchResult]) -> float:
    """The message's best vector similarity to a message of memory among the retrieved
    items (to any item where no message was found). The yardstick
    (Memory.reference_similarities) takes the nearest message over all of memory; the
    retrieved items hold it nearly always, and one search serves gate and planner."""
    said = [r for r in results if r.kind == "transcript"] or list(results)
    return max((r.components.get("vector", 0.0) for r in said), default=0.0)


def document_share(wanted: set[str], results: Sequence[SearchResult]) -> float:
    """The largest share of the question's content words (`wanted`) one document chunk
    among `results` holds, in its text, title or heading."""
    if not wanted:
        return 0.0
    best = 0
    for result in results:
        if result.kind == "document":
            where = f"{result.provenance.get('title', '')} {result.provenance.get('heading', '')}"
            best = max(best, len(wanted & terms(f"{where} {result.text}")))
    return best / len(wanted)


def _warm_up() -> None:
    count_tokens("warm up")
    everyday_zipf("warm", (latin_language("warm up"),))  # the language's word lists
    # Whatever the gate mode, the lexical scanner is used (directly or as the fallback).
    HeuristicGate().lexical("warm up", GateContext())
