"""The heuristic gate: cues in the message, weighed with what retrieval finds.

In order, the first that speaks decides (after a role-play set-up, and a follow-up that
points back into its own conversation, thread.py: both need no memory):

1. Explicit memory cues (cues.py): "what's my name?", "what did I say", "last week",
   "remind me what we planned", "where did I park again?", "what did you tell me", "my
   favourite". Memory, whole budget. Asked back without a word of anyone ("who was the
   plumber again?") it may be a refresher: the evidence decides.
2. A question about the user's own past ("How many bikes do I own?", "Which show did I
   start first?", "Who gave me the mixer?"): memory, whole budget.
3. A task anyone could ask for ("Write a poem", "Explain ...", "What if ...") that does
   not speak of the user's situation: no memory, whatever retrieval finds.
   With documents (a knowledge base), a question or request most of whose words one
   retrieved chunk holds: memory, whole budget (checked before the task rule: a document
   answers questions anyone could ask).
4. The user's own situation in a question or request ("I'm planning a trip, any
   suggestions?", "a show for me to watch tonight", "my high school reunion"): memory;
   the whole budget when retrieval stands out from the agent's yardstick, a small block
   of the best few items otherwise. A fix for the situation that asks nothing of the
   user's own, chooses nothing for them and plans nothing ahead needs retrieval beating
   nine tenths of the reference prompts. A choice asked for the user ("what office chair
   should I get?", or in a few words with no one named: "What should I read next?"):
   a small block beyond half of them; told with its criteria, or asked in a conversation
   that told the user's case, only standing out.
5. A question (not a mere request) naming what the agent's memory holds. A name its
   memory says throughout (the people a history is about): memory. A known entity, or a
   name most retrieved items mention: memory when retrieval beats half the reference
   prompts. Any other name (a person, a place, a quoted title) found in the retrieved
   items: when it beats nine tenths of them.
6. A question of the user's own (about their life, pointing back at a thing they spoke
   of, or a lookup or a count of what happened that names nothing of the world) whose
   retrieval beats nine tenths of the reference prompts (three quarters for a question
   after what happened, or how long it took, whose rarer words memory holds), or any
   other question that
   beats every one by a margin and does not tell at length what it asks about: a small
   block.

The retrieval evidence (types.Evidence) is the agent's own: the message's nearest item
against how near the reference prompts (reference.py) come to the same memory, so a
generic prompt that shares a common topic stays quiet, and a question about a rare thing
the user once mentioned goes through.

A message in another language with a lexicon (languages.py) is read by its shape instead
(`_decide_by_shape`), against the reference prompts in its own language.
"""

from __future__ import annotations

import asyncio
import logging
import re
from itertools import pairwise

from mnemoproxy.gate.relevance.languages import Shape, asks_at_length, read_shape
from mnemoproxy.gate.relevance.payload import split_request
from mnemoproxy.gate.relevance.personal import FRAGMENT_WORDS
from mnemoproxy.gate.relevance.scan import Cues, shared_scanner
from mnemoproxy.gate.relevance.thread import (
    follows_in_thread,
    points_into_thread,
    unsaid_in_thread,
)
from mnemoproxy.gate.relevance.types import (
    Evidence,
    GateContext,
    GateDecision,
    Probe,
    Section,
)

log = logging.getLogger(__name__)

NO_CUE = GateDecision("none", "no memory cue")

# (cue label, section, reason prefix) in priority order: the first label found wins.
RULES: tuple[tuple[str, Section, str], ...] = (
    ("identity", "identity", "identity question"),
    ("transcript", "transcript", "verbatim recall"),
    ("episode", "episode", "earlier conversation"),
    ("back_then", "episode", "earlier conversation"),
    ("calendar", "episode", "time reference"),
    ("recall", "episode", "recall request"),
    ("preference", "pinned", "preference or decision"),
)
# Shares of the reference prompts a message's best match must beat (see the module doc).
SITUATED_FULL_BLOCK = 0.75
FOR_THE_USER = 0.5
CENTRAL_NAME = 0.5
NAMED = 0.9
OWN_QUESTION = 0.9
UNNAMED = 1.0
# A past asked of a thing whose rarer words memory holds: the words are evidence of their
# own, so retrieval need only beat three quarters.
PAST_HELD = 0.75
UNNAMED_MARGIN = 0.05
# A name in this share of the retrieved items is central to what memory holds on it; a
# name the agent's memory says throughout (memory/search/common_terms.py) counts as 1.0.
CENTRAL_NAME_SHARE = 0.5
THROUGHOUT = 1.0
# A document chunk answers a question when it holds this share of the question's content
# words (of at least DOCUMENT_MIN_WORDS; a one-word question needs all of it), set by
# tests/benchmarks/quality/bench_documents.py against generic prompts asked of the same agent.
DOCUMENT_SHARE = 0.6
DOCUMENT_MIN_WORDS = 2
# A word memory holds in at most this share of the agent's items (or RARE_ITEMS) is rare
# there: something the user named, not a topic the memory is full of.
RARE_SHARE = 0.01
RARE_ITEMS = 8
# How common (Zipf scale) a word held rarely in memory may be in the language and still
# say the question is about memory: in the user's own question, anything but an everyday
# word; in any question, a word few texts use (a name of its own, "kibble").
OWN_WORD_ZIPF = 5.0
NAME_ZIPF = 3.0
# A question this short ("project marigold deadline?") is a lookup of the thing it names.
LOOKUP_WORDS = 5
# A choice asked in so few words ("Recommend a podcast for the commute?") tells nothing of
# what decides it but the asker; one asked for the user in more tells its criteria.
BARE_CHOICE_WORDS = 12
CHOICE_TOLD_WORDS = 16
# Katakana of three characters or more: a loanword, cut into pairs by the search.
KATAKANA_WORD = re.compile("[\u30a1-\u30fa\u30fc]{3,}")
# The user as the one a question is for, or as the owner of what it asks after.
BENEFICIARIES = frozenset({"me", "us"})
POSSESSIVES = frozenset({"my", "our"})


def _speaks_of_memory(cues: Cues, evidence: Evidence, background: bool = False) -> bool:
    """Whether a question speaks of the user or names what memory knows (a person, a
    known entity): a question that does neither is about the world, and a rare word it
    shares with memory ("the most impactful projects of a footballer's charity") is a
    topic both happen to touch. The user's situation told as `background` to a question
    about the world ("My dad's favourite band is Pink Floyd. What year did ...?") does
    not speak of them."""
    return ((cues.first_person and not background) or bool(evidence.names)
            or cues.entity is not None)


def _chosen_for_user(cues: Cues) -> bool:
    """Whether a message asks a choice for the user ("which one for me?", "what should
    I get?") and nothing of their own: no past, no count, no thing of theirs pointed at
    or asked after ("my party"), no name."""
    personal = cues.personal
    chosen = (personal.chooses or personal.for_the_user is not None
              or personal.left_to_taste is not None
              or personal.asks_about_user in BENEFICIARIES)
    return chosen and not (
        personal.own_past or personal.happened or personal.tallied or personal.points_back
        or personal.asks_about_user in POSSESSIVES or cues.names)


def _loanword_pieces(text: str, evidence: Evidence) -> set[str]:
    """The pairs of characters of each katakana word in `text` ("ストレッチ") that memory
    does not hold whole: a loanword is one word, and a pair of it ("ッチ") is a piece of
    many others ("マッチ", "キッチン")."""
    pieces: set[str] = set()
    whole: set[str] = set()
    for run in KATAKANA_WORD.findall(text):
        pairs = [f"{a} {b}" for a, b in pairwise(run)]
        (whole if all(evidence.words.get(pair, 0) > 0 for pair in pairs) else pieces).update(
            pairs)
    return pieces - whole


def _capitalised_in(words: list[str], message: str) -> bool:
    """Whether one of `words` (held by memory, lower-cased) is written as a name."""
    return any(_written_as_name(word, message) for word in words)


def _written_as_name(word: str, message: str, *, opening: bool = True) -> bool:
    """Whether `word` (lower-cased) is written with a capital somewhere in `message`
    ("McGee", "Anthony"); unless `opening`, not where a sentence opens, except as an owner
    ("Juniper's groomer?")."""
    lowered = message.lower()
    start = lowered.find(word)
    while start != -1:
        end = start + len(word)
        whole = ((start == 0 or not lowered[start - 1].isalnum())
                 and (end == len(lowered) or not lowered[end].isalnum()))
        if whole and message[start].isupper():
            before = message[:start].rstrip()
            owner = message[end:end + 2] in ("'s", "\u2019s")
            if opening or owner or (before and before[-1] not in ".!?"):
                return True
        start = lowered.find(word, end)
    return False


def _document_answers(evidence: Evidence) -> bool:
    if evidence.document_words >= DOCUMENT_MIN_WORDS:
        return evidence.document >= DOCUMENT_SHARE
    return evidence.document_words == 1 and evidence.document >= 1.0


def _rule_matches(cues: Cues) -> dict[str, str]:
    """The cue matches that count, after the rules that combine or condition them."""
    matches = dict(cues.matches)
    if "verbatim" in matches and "my_speech" in matches:
        matches.setdefault("transcript", matches["verbatim"])
    # A date or a preference mentioned in passing ("last week I went hiking", "my favourite
    # band is on tonight") tells memory something; only asked about does it need memory.
    asks = cues.is_question or cues.is_request
    # So does one that sets a how-to its time ("What should I pack for hiking in
    # September?"): the date is the plan's, as anyone's would be.
    if not (asks and (cues.first_person or cues.second_person)) or cues.personal.advice:
        matches.pop("calendar", None)
    if not asks:
        matches.pop("preference", None)
    # Why things are as they are ("why do I always feel sleepy?", "why is my bill higher
    # than last year?") asks an explanation, whatever habit or date it names.
    if cues.personal.explains:
        matches.pop("calendar", None)
        matches.pop("preference", None)
    # "Which was invented earlier, the fax or the telephone?": the order asked of the
    # things set against each other, not a time pointed back at.
    pointed = matches.get("back_then", "").lower()
    if (cues.personal.alternatives and cues.personal.in_time
            and pointed.startswith(("earlier", "previously"))):
        matches.pop("back_then")
    return matches


def lexical_decision(cues: Cues) -> GateDecision | None:
    """The decision the explicit cues make, or None when silent."""
    matches = _rule_matches(cues)
    for label, section, prefix in RULES:
        found = matches.get(label)
        if found is None:
            continue
        if label == "recall" and "preference_word" in matches:
            return GateDecision("pinned", f"recall request about preferences: '{found}'")
        return GateDecision(section, f"{prefix}: '{found}'")
    return None


class HeuristicGate:
    """probe_timeout: seconds the retrieval probe may take before the gate gives up and
    injects nothing, so that a slow store never holds up a chat."""

    def __init__(self, probe_timeout: float = 0.5):
        self.probe_timeout = probe_timeout

    def lexical(self, message: str, context: GateContext) -> GateDecision | None:
        return lexical_decision(shared_scanner().scan(message, context.known_entities))

    async def decide(self, message: str, context: GateContext) -> GateDecision:
        cues = shared_scanner().scan(message, context.known_entities)
        if context.language != "en":
            own_words = split_request(message).instruction
            shape = read_shape(own_words, context.language)
            if shape is not None:
                if context.thread and follows_in_thread(shape, own_words, context.thread,
                                                        context.language):
                    return GateDecision(
                        "none", f"points back into this conversation ({context.language})")
                return await self._decide_by_shape(shape, cues, context, own_words)
        personal = cues.personal
        # A scene or a persona set up: what it says of "me", of "last night" or of "what
        # you remember" belongs to the scene.
        if personal.role_play:
            return GateDecision("none", "a role-play or persona set-up")
        if context.thread:
            pointed = points_into_thread(cues, split_request(message).instruction,
                                         context.thread)
            if pointed is not None:
                return GateDecision("none", f"points back into this conversation: '{pointed}'")
        decision = lexical_decision(cues)
        if decision is not None:
            return decision
        if personal.own_past is not None:
            return GateDecision("episode", f"the user's own past: '{personal.own_past}'")
        if cues.has_payload:
            return GateDecision("none", "a task on the material it hands over")
        # A fragment pointing at a thing the user spoke of ("that app I use for budget")
        # asks for it as much as a question does; so does asking for ideas or
        # suggestions, wherever in the message ("Need ideas for a rainy afternoon with my
        # daughter.").
        asks = (cues.is_question or cues.is_request or personal.points_back is not None
                or personal.chooses)
        if not asks or context.probe is None:
            return NO_CUE
        evidence: Evidence | None = None
        if context.documents:
            # A knowledge base answers questions anyone could ask ("what is our refund
            # policy?"): a chunk holding most of the question's words is worth the block.
            evidence = await self._probe(context.probe, cues.names)
            if evidence is not None and _document_answers(evidence):
                return GateDecision(
                    "document", f"a document holds {evidence.document:.0%} of its words")
        background = (personal.world_question and not personal.user_question
                      and personal.situated is not None)
        if background:
            # What the user tells of themselves beside a question anyone could ask (about
            # the world, or advice as anyone in their place would want: "we did this in
            # class last week: what is the derivative of ...?", "I'm nervous about
            # speaking. How can I prepare?") is background to it.
            personal.situated = None
        if personal.task and personal.situated is None:
            return GateDecision("none", "a task anyone could ask for")
        own = personal.asks_about_user or personal.points_back
        # A choice asked for the user that tells its criteria ("which Spotify alternative
        # should I go with if I care most about ...") asks nothing of their life: what it
        # says of them is its premise.
        told_choice = personal.for_the_user is not None and (
            cues.at_length or cues.words > CHOICE_TOLD_WORDS)
        # So does one asked in a conversation ("so which format for me then?"): what the
        # user told of themselves there decides it; a thing of theirs it asks after ("what
        # level is my party at now?") is still their own.
        chosen_in_thread = bool(context.thread.strip()) and _chosen_for_user(cues)
        if personal.task or personal.advice or personal.explains or told_choice:
            own = None
        if own is not None:
            # A question of the user's own whose words memory holds, beyond everyday ones:
            # a thing, a place, a phrase they once used, however the question is worded.
            evidence = evidence or await self._probe(context.probe, cues.names)
            held = [] if evidence is None else [
                *evidence.words_held(OWN_WORD_ZIPF, RARE_SHARE, RARE_ITEMS),
                *evidence.phrases_held(RARE_SHARE, RARE_ITEMS)]
            # Words the conversation so far says ("using the room size I gave, how much
            # paint do I need?") are its topic: memory holding them tells nothing more
            # (so below for rare words and phrases).
            held = unsaid_in_thread(held, context.thread)
            if held:
                return GateDecision(
                    "episode", f"the user's own words memory holds: {', '.join(held[:4])}",
                    "medium")
        if personal.alternatives and not (personal.task or personal.advice):
            # Things set against each other ("which came first, the standing desk or the
            # dishwasher leak?") that memory holds each of: a question about its events,
            # or about its people's choices; not a comparison anyone could ask for.
            evidence = evidence or await self._probe(context.probe, cues.names)
            held = [] if evidence is None else evidence.held_in_each(
                personal.alternatives, OWN_WORD_ZIPF, RARE_SHARE, RARE_ITEMS)
            if evidence is not None and held and (
                    personal.in_time or _speaks_of_memory(cues, evidence, background)):
                return GateDecision(
                    "episode", f"compares what memory holds: {' / '.join(held)}", "medium")
        if cues.is_question and not (personal.task or personal.advice):
            # A question naming what only this memory knows ("Bruno's kibble brand?",
            # "project marigold deadline?"): a word rare in the language that memory holds
            # in a few places. In a message that tells at length ("... the lower leaves
            # are yellowing. What's going on?") such a word is a topic both touch.
            evidence = evidence or await self._probe(context.probe, cues.names)
            held = [] if evidence is None else unsaid_in_thread(evidence.rare_words_held(
                RARE_SHARE, RARE_ITEMS, NAME_ZIPF, unknown=False), context.thread)
            if evidence is not None and held and (
                    (_speaks_of_memory(cues, evidence, background) and not cues.at_length)
                    or cues.words <= LOOKUP_WORDS or _capitalised_in(held, message)):
                return GateDecision(
                    "episode", f"names what only memory knows: {', '.join(held[:4])}",
                    "medium")
            # A phrase memory holds side by side in a few items, in a short lookup or a
            # question that speaks of the user ("moms building gate code", "did the sleep
            # study results come back before my trip?").
            phrases = [] if evidence is None else unsaid_in_thread(
                evidence.phrases_held(RARE_SHARE, RARE_ITEMS), context.thread)
            if evidence is not None and phrases and (
                    _speaks_of_memory(cues, evidence, background) or cues.words <= LOOKUP_WORDS):
                return GateDecision(
                    "episode", f"names a phrase memory holds: {', '.join(phrases[:2])}",
                    "medium")
            # A lookup of a name memory holds in a few items ("Who is Anthony?",
            # "Juniper's groomer?"), however common the word is elsewhere; or of what
            # such a name owns, however written ("what time is theo's swimming").
            named = [] if evidence is None else [
                word for word in evidence.words_held(OWN_WORD_ZIPF, RARE_SHARE, RARE_ITEMS)
                if word in evidence.rare_words_held(RARE_SHARE, RARE_ITEMS, OWN_WORD_ZIPF)
                and ((word in cues.owners and cues.words <= FRAGMENT_WORDS)
                     or (cues.words <= LOOKUP_WORDS
                         and _written_as_name(word, message, opening=False)))]
            if named:
                return GateDecision(
                    "episode", f"looks up a name memory holds: {named[0]}", "medium")
        # A fragment pointing back at what the user spoke of is asked as a question is.
        asked = cues.is_question or personal.points_back is not None
        # A choice left to the user's tastes, asked as a question in a few words that tell
        # nothing else ("What should I read next?"), is asked for them as "recommend me"
        # is; bidden ("Suggest some healthy breakfast foods."), it is a task set, and
        # asked in the past ("what was the book club pick?"), a thing that happened.
        bare_choice = (personal.left_to_taste is not None and cues.is_question
                       and personal.happened is None and personal.tallied is None
                       and cues.words <= BARE_CHOICE_WORDS
                       and not cues.particulars and not cues.names)
        if personal.for_the_user is None and bare_choice:
            personal.for_the_user = personal.left_to_taste
        if not asked and personal.situated is None and personal.for_the_user is None:
            return GateDecision("none", "a request that names nothing of the user's own")
        if evidence is None:
            evidence = await self._probe(context.probe, cues.names)
        if evidence is None:
            return GateDecision("none", "probe failed")
        seen = f"nearest {evidence.similarity:.2f}, above {evidence.standing:.0%} of requests"
        if personal.situated is not None:
            why = f"the user's own situation: '{personal.situated}', {seen}"
            if personal.task:  # "write a letter to my employer": only on clear evidence
                # A task that brings what it needs to know ("Write a toast for my
                # brother's wedding. His name is Marco, ..."): only where memory stands
                # out beyond anything anyone asks.
                clear = (evidence.beats(UNNAMED, UNNAMED_MARGIN) if cues.particulars
                         else evidence.beats(NAMED))
                if clear:
                    return GateDecision("episode", why, "medium")
                told = "told in full" if cues.particulars else "nothing stands out"
                return GateDecision("none", f"a task, {told}: {seen}")
            fix = own is None and not (personal.chooses or personal.planned)
            if fix and not evidence.beats(OWN_QUESTION):
                # A fix or a how-to for it ("my phone battery drains fast, tips?") is the
                # same for anyone, unless memory stands near the situation as it does
                # near a question of the user's own.
                return GateDecision("none", f"the user's situation, a fix anyone gets: {seen}")
            # A request that brings the user's particulars (counts, dates, several
            # sentences of them) already says what it needs, as a task that tells it
            # does: memory only where it stands out beyond anything anyone asks. A date in
            # a question of someone else's ("what did Joanna recommend on May 2?") is no
            # telling: nine in ten.
            if (cues.particulars and cues.first_person) or chosen_in_thread:
                clear = evidence.beats(UNNAMED, UNNAMED_MARGIN)
            else:
                clear = evidence.beats(NAMED if cues.particulars else SITUATED_FULL_BLOCK)
            if clear:
                return GateDecision("episode", why)
            if cues.particulars:
                return GateDecision("none", f"the user's situation, told in full: {seen}")
            if chosen_in_thread:
                return GateDecision(
                    "none", f"a choice the conversation has told the user's case for: {seen}")
            return GateDecision("episode", why, "low")
        if personal.task:
            return GateDecision("none", "a task anyone could ask for")
        # Asked for the user with their background told at length ("I have competencies
        # in ..., what jobs could I do?"): it says what it needs, as a situation told does.
        # So is a choice whose criteria it tells ("which houseplant for a north-facing
        # bathroom, low maintenance, safe for cats?").
        for_the_user = (evidence.beats(UNNAMED, UNNAMED_MARGIN)
                        if told_choice or chosen_in_thread else evidence.beats(FOR_THE_USER))
        if personal.for_the_user is not None and for_the_user:
            why = f"asked for the user: '{personal.for_the_user}', {seen}"
            return GateDecision("episode", why, "low")
        if not asked:  # asked for the user, but nothing stands out
            return GateDecision("none", f"a request, nothing stands out: {seen}")
        if cues.entity is not None and evidence.beats(CENTRAL_NAME):
            why = f"a name memory knows: '{cues.entity}', {seen}"
            return GateDecision("episode", why, "medium")
        names = ", ".join(evidence.names)
        if evidence.name_share >= THROUGHOUT:
            # A name the agent's memory says throughout: the question is about its people.
            return GateDecision("episode", f"names what memory is about: {names}", "medium")
        central = evidence.name_share >= CENTRAL_NAME_SHARE
        # A how-to names the thing it is about ("the easiest way to learn Python"): a name
        # memory also holds, but does not speak of throughout, is no question about it.
        if (evidence.names and not personal.advice
                and evidence.beats(CENTRAL_NAME if central else NAMED)):
            return GateDecision("episode", f"names memory holds: {names}, {seen}", "medium")
        if cues.asked_back is not None and evidence.beats(OWN_QUESTION):
            # A thing asked back presumes it was told: memory near it is where.
            return GateDecision(
                "episode", f"asked back: '{cues.asked_back}', {seen}", "low")
        if own is not None and evidence.beats(OWN_QUESTION):
            # Only this user's memory answers a question about their own life ("what's
            # the name of my best friend from college?"): it needs less to stand out.
            return GateDecision("episode", f"a question of the user's own: '{own}', {seen}",
                                "low")
        if cues.lookup and not personal.advice and evidence.beats(OWN_QUESTION):
            # A lookup that names nothing of the world ("passport expiry pls", "bus number
            # to work?") asks after a thing of the asker's own, as "my" would.
            return GateDecision("episode", f"a lookup of the user's own: {seen}", "low")
        if (personal.tallied is not None and not cues.names and not personal.advice
                and not cues.at_length and evidence.beats(OWN_QUESTION)):
            # So does a count or a length of what happened that names nothing of the world
            # ("how many times has the basement flooded this year?"); one after a telling
            # at length counts what it told.
            why = f"a count of the user's own: '{personal.tallied}', {seen}"
            return GateDecision("episode", why, "low")
        past = personal.happened or personal.tallied
        if (past is not None and not cues.names and not personal.advice
                and not cues.particulars and evidence.beats(PAST_HELD)):
            # A question after what happened to a thing, what it was or how long it took,
            # that names nothing of the world ("what was the book club pick for
            # November?") asks a past of someone's: the user's, where memory holds its
            # rarer words.
            held = [*evidence.words_held(OWN_WORD_ZIPF, RARE_SHARE, RARE_ITEMS),
                    *evidence.phrases_held(RARE_SHARE, RARE_ITEMS)]
            if held:
                why = (f"a past memory holds: '{past}', "
                       f"{', '.join(held[:3])}, {seen}")
                return GateDecision("episode", why, "low")
        if cues.at_length:
            # A question that tells at length what it asks about ("Benjamin bought 5
            # copies of ... What was the total cost?") and speaks of nothing memory holds
            # is answered by what it tells.
            return GateDecision("none", f"told in full: {seen}")
        if evidence.beats(UNNAMED, UNNAMED_MARGIN):
            return GateDecision("episode", f"stands out in memory: {seen}", "low")
        return GateDecision("none", f"nothing stands out in memory: {seen}")

    async def _decide_by_shape(
        self, shape: Shape, cues: Cues, context: GateContext, own_words: str
    ) -> GateDecision:
        """A message in a language other than English, read by its lexicon: a task or
        material handed over needs no memory; pointing back at what was said does; so
        does a question that asks what memory holds (`_memory_asked`), unless it asks for
        advice or an explanation anyone in the user's place would want or tells its
        situation at length; and any question
        that stands out in memory against requests in its own language."""
        language = context.language
        # Pointing back at what was said needs memory, whatever task it comes with.
        if shape.recall and (shape.first_person or shape.question):
            return GateDecision("episode", f"points back at what was said ({language})")
        if shape.task or cues.has_payload:
            return GateDecision("none", f"a task anyone could ask for ({language})")
        if not shape.question or context.probe is None:
            return GateDecision("none", f"no question to recall for ({language})")
        evidence = await self._probe(context.probe, cues.names)
        if evidence is None:
            return GateDecision("none", "probe failed")
        seen = f"nearest {evidence.similarity:.2f}, above {evidence.standing:.0%} of requests"
        # In a conversation, short sentences before the question answer the last reply
        # ("Gut, dann rufe ich morgen an."): they tell no situation.
        at_length = cues.at_length and (not context.thread or asks_at_length(own_words))
        # Advice or an explanation anyone could want, and a situation told at length (it
        # says what it needs, as in English): only standing out.
        if not (shape.general or at_length):
            decision = self._memory_asked(shape, evidence, language, seen, own_words)
            if decision is not None:
                return decision
        if evidence.beats(UNNAMED, UNNAMED_MARGIN):
            return GateDecision("episode", f"stands out in memory: {seen}", "low")
        if at_length:
            return GateDecision("none", f"told in full ({language}): {seen}")
        return GateDecision("none", f"nothing stands out in memory ({language}): {seen}")

    @staticmethod
    def _memory_asked(
        shape: Shape, evidence: Evidence, language: str, seen: str, own_words: str
    ) -> GateDecision | None:
        """A question read by a lexicon that asks for what memory holds: the user's own
        words, a particular of something it holds, a name it holds, or any question of
        the user's own."""
        pieces = _loanword_pieces(own_words, evidence)
        if shape.first_person:
            held = [word for word in evidence.words_held(OWN_WORD_ZIPF, RARE_SHARE, RARE_ITEMS)
                    if word not in pieces]
            if held:
                return GateDecision("episode", f"the user's own words memory holds "
                                    f"({language}): {', '.join(held[:4])}", "medium")
        # A word rarer than everyday ones that memory holds in a few items: asked for as a
        # particular (when, where, who, what it is called) or written as a name, it is
        # memory's; in a longer question about the world ("Woher kommen Käsespätzle?") it
        # is a topic both touch. A pair of characters whose commonness cannot be told
        # (unspaced scripts) counts only in the user's own question: elsewhere pairs cut
        # across words ("里的").
        # A piece of a quoted title ("博士" of 『博士の愛した数式』) names nothing of its own.
        held = [word for word in evidence.rare_words_held(
            RARE_SHARE, RARE_ITEMS, OWN_WORD_ZIPF, unknown=False)
            if not shape.in_title(word) and word not in pieces]
        named = [word for word in held if word in shape.names]
        if named:
            return GateDecision("episode", f"names someone memory holds ({language}): "
                                f"{', '.join(named[:4])}, {seen}", "medium")
        if shape.particular and held:
            return GateDecision("episode", f"asks a particular memory holds ({language}): "
                                f"{', '.join(held[:4])}, {seen}", "medium")
        if shape.first_person:
            # A question of the user's own is about their life however it is worded; the
            # block stays small.
            return GateDecision("episode", f"a question of the user's own ({language}): "
                                f"{seen}", "low")
        return None

    async def _probe(self, probe: Probe, names: list[str]) -> Evidence | None:
        try:
            async with asyncio.timeout(self.probe_timeout):
                evidence = await probe(names)
        except Exception as exc:  # a failing probe must not fail the chat
            log.warning("relevance probe failed, injecting nothing: %r", exc)
            return None
        if log.isEnabledFor(logging.DEBUG):  # why a decision went as it did
            log.debug("gate evidence: nearest %.2f above %.0f%% of requests; names %s; "
                      "words held (items, Zipf) %s, phrases %s of %d items, about %d words",
                      evidence.similarity, 100 * evidence.standing, list(evidence.names),
                      {w: (c, evidence.commonness.get(w)) for w, c in evidence.words.items()},
                      dict(evidence.phrases), evidence.items, evidence.size)
        return evidence


class AlwaysGate:
    """Mode "off": every request gets memory; the lexical rules still choose which part,
    episodes when they are silent."""

    def __init__(self, heuristic: HeuristicGate | None = None):
        self._heuristic = heuristic or HeuristicGate()

    async def decide(self, message: str, context: GateContext) -> GateDecision:
        decision = self._heuristic.lexical(message, context)
        if decision is None:
            return GateDecision("episode", "gate off: always inject")
        return GateDecision(decision.section, f"gate off: {decision.reason}")
