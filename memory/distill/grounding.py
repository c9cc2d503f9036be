"""Keeping only what was said: a check on every fact a core model distils.

Small models copy the examples of their prompt ("User lives in Berlin" for someone who
never said so), take the assistant's suggestions for the user's facts, and fill identity
with guesses; capable ones paraphrase ("User is researching adoption agencies" for "I'm
looking into adoption agencies"). A fact is kept when the session supports it (`Support`):
every name and number it holds was said there (a name by either side: the user's people
are often named by the other), and enough of its other words, compared by their roots
(counts as digits, reporting verbs aside), were said by the user anywhere in the session,
or meet in one turn: the turns the distiller named, else the turn that holds most of them.
In that turn the other side's statements count too (in an imported conversation between
two people, the one memory serves is not always on the user's side), never its advice or
questions ("you should ...", "Try ...?"). A kept fact keeps those turns as its source.
An identity fact needs more: a sentence where its speaker speaks of themselves ("I",
"my") and says one of its words; a grounded fact without one is kept as an ordinary
pinned fact. A fact must also be a statement about the user, not a fragment. The episode
stays (it sums up both sides), minus entities the session never mentions.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Set
from dataclasses import replace

from mnemoproxy.memory.models import (
    Distillation,
    EpisodeDraft,
    FactDraft,
    ProcedureDraft,
    SessionInput,
)
from mnemoproxy.memory.text.language import detect_language
from mnemoproxy.memory.text.parsing import MONTHS, WEEKDAYS
from mnemoproxy.memory.text.words import WORD, content_words, root_words
from mnemoproxy.memory.write.redact import REDACTED

log = logging.getLogger(__name__)

# Most of a fact's plain words must be the user's; its names and numbers all of them.
MIN_SUPPORT = 0.6
# "User" and "user's" are how facts are written, not what they say; nor are the verbs a
# capable model reports a statement with ("User mentioned that ...", "User believes ...").
FACT_FRAME = frozenset({"user", "users"})
REPORTING = frozenset(root_words(
    "mention mentions mentioned say says said tell tells told note notes noted explain "
    "explains explained describe describes described express expresses expressed share "
    "shares shared emphasize emphasizes emphasized stress stresses stressed acknowledge "
    "acknowledges acknowledged recognize recognizes recognized believe believes believed "
    "think thinks thought feel feels felt find finds found consider considers considered "
    "view views viewed"))
MIN_STATEMENT_WORDS = 3
_SPECIFIC = re.compile(r"\b(?:[A-Z][\w'’-]*|\d[\w.,:/-]*)")
_FIRST_PERSON = frozenset({"i", "i'm", "im", "my", "me", "mine", "myself", "i've", "i'd"})
# A speaker speaking of themselves, or of a "we" they belong to.
_SELF = _FIRST_PERSON | {"we", "we're", "we've", "we'd", "our", "ours", "us", "ourselves"}
# Who a sentence speaks to: a reply that does is advice or an offer, not a self-statement.
_SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "you're", "you've", "you'll",
                            "you'd"})
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
# In one turn, fewer of a fact's words need be found than in the whole session: there they
# must meet (docs/results/tuning.md).
MIN_NAMED_SUPPORT = 0.4
_CALENDAR = frozenset(root_words(" ".join((*WEEKDAYS, *MONTHS))))
# What advice to the user is phrased with: such a fact rests on the user's words only, never
# on the other side's ("Try the bacalhau" is not "User should try the bacalhau").
_ADVICE = frozenset({"should", "could", "might", "ought", "must", "shall"})
# A fact is about "User"; the words of a conversation's speakers mark a copied line.
_SPEECH = frozenset({
    "i", "i'm", "im", "i'll", "i've", "i'd", "me", "my", "mine", "myself",
    "you", "you're", "you'll", "you've", "your", "yours", "we", "we're", "let's",
})
_TOKEN = re.compile(r"[\w']+")
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”')
_SPEAKER_LABEL = re.compile(r"\A\s*+(?:the\s++)?user\s*+:", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\[[\w\s-]*\]|<[\w\s-]*>|\{[\w\s-]*\}")
REPEAT_RUN = 4  # the same four words twice in one fact: a loop, not a statement
SUMMARY_LOOP = 3  # a summary may say a phrase twice; three times is a loop
MIN_SUMMARY_SUPPORT = 0.5
# Words a summary is told in rather than what it tells (stems, as content_words gives).
SUMMARY_FRAME = frozenset(content_words(
    "assistant asked discussed talked conversation session mentioned shared said told "
    "explained suggested described wanted expressed spoke chatted"
))


def ground(distillation: Distillation, session: SessionInput) -> Distillation:
    """`distillation` without the facts the session does not support; each kept fact with
    its source turns (those the distiller named, or the one that supports it best)."""
    support = Support(session)
    identity: list[FactDraft] = []
    pinned: list[FactDraft] = []
    for fact in distillation.identity:
        sources = support.sources(fact) if is_statement(fact.content) else None
        if sources is None:
            continue
        fact = replace(fact, source_turns=sources)
        if speaks_of_self(fact.content, support.said_of_self(fact), support.language):
            identity.append(fact)
        else:  # the user's words, but not about themselves: a fact, not their identity
            pinned.append(replace(fact, kind="pinned"))
    for fact in distillation.pinned:
        sources = support.sources(fact) if is_statement(fact.content) else None
        if sources is not None:
            pinned.append(replace(fact, source_turns=sources))
    procedures = grounded_procedures(distillation.procedures, session)
    episode = distillation.episode
    if episode is not None:
        if is_credible_summary(episode.summary, session):
            episode = _mentioned_entities_only(episode, session)
        else:
            log.debug("dropped a summary the session does not support: %r", episode.summary)
            episode = None
    if episode is not None or procedures:
        # The procedures ride on the episode (an empty summary carries them alone).
        episode = replace(episode or EpisodeDraft(""), procedures=procedures)
    proposed = len(distillation.identity) + len(distillation.pinned)
    kept = {f.content for f in (*identity, *pinned)}
    for fact in (*distillation.identity, *distillation.pinned):
        if fact.content not in kept:
            log.debug("dropped a fact the session does not support: %r", fact.content)
    return Distillation(
        episode=episode,
        pinned=pinned,
        identity=identity,
        ungrounded=distillation.ungrounded + proposed - len(identity) - len(pinned),
    )


class Support:
    """What one session lets a fact rest on.

    The user's words anywhere in the session, as always; or the words of one turn, the
    user's and what the other side stated there without speaking to the listener (no
    "you", no question), fewer of the fact's words being needed (MIN_NAMED_SUPPORT) since
    they must meet in that turn. The turns the distiller named are judged so; a fact
    without them is judged by the turn that supports it best, where the other side's
    statements count only when its speaker speaks of themselves ("I", "we"). Names may come
    from either side anywhere in the session."""

    def __init__(self, session: SessionInput) -> None:
        user_text = "\n".join(turn.user for turn in session.turns)
        self.language = language = detect_language(user_text)
        self.user_words = root_words(user_text, language)
        self.names = root_words(" ".join(
            name for turn in session.turns for text in (turn.user, turn.assistant)
            for name in _SPECIFIC.findall(text) if not name[:1].isdigit()), language)
        self._user_self = _first_person_sentences(user_text, language)
        self._user_turns = [root_words(turn.user, language) for turn in session.turns]
        self._statements = [_statements(turn.assistant, language) for turn in session.turns]

    def sources(self, fact: FactDraft) -> tuple[int, ...] | None:
        """The turns `fact` rests on (empty: the session as a whole), None when nothing in
        the session supports it."""
        named = tuple(i for i in fact.source_turns if 0 <= i < len(self._user_turns))
        if named and self._turn_supports(fact, named, self_only=False):
            return named
        best = self._best_turn(fact)
        if supported(fact.content, self.user_words, self.names, language=self.language):
            return named or best
        if best and self._turn_supports(fact, best, self_only=True):
            return best
        return None

    def said_of_self(self, fact: FactDraft) -> list[set[str]]:
        return [*self._user_self, *(words for i in fact.source_turns
                                    if 0 <= i < len(self._statements)
                                    for words, of_self in self._statements[i] if of_self)]

    def _turn_words(self, turns: tuple[int, ...], fact: str, *, self_only: bool) -> set[str]:
        words = set().union(*(self._user_turns[i] for i in turns))
        if _ADVICE & _speech_words(fact):  # advice to the user rests on the user's words
            return words
        return words.union(*(said for i in turns for said, of_self in self._statements[i]
                             if of_self or not self_only))

    def _turn_supports(self, fact: FactDraft, turns: tuple[int, ...], *,
                       self_only: bool) -> bool:
        words = self._turn_words(turns, fact.content, self_only=self_only)
        return supported(fact.content, words, self.names, share=MIN_NAMED_SUPPORT,
                         vouching=False, language=self.language)

    def _best_turn(self, fact: FactDraft) -> tuple[int, ...]:
        """The turn holding most of the fact's words (the first of equals); none when no
        turn holds any."""
        wanted = root_words(fact.content, self.language) - FACT_FRAME - REPORTING
        best: tuple[int, ...] = ()
        best_count = 0
        for i in range(len(self._user_turns)):
            count = len(wanted & self._turn_words((i,), fact.content, self_only=True))
            if count > best_count:
                best, best_count = (i,), count
        return best


def grounded_procedures(
    procedures: list[ProcedureDraft], session: SessionInput
) -> list[ProcedureDraft]:
    """The procedures the session's words support (the user's or the assistant's: either
    may have carried it out): a name said there, and of the steps those said there, when
    two or more remain. A step the session never said is dropped."""
    words = content_words(" ".join(f"{t.user} {t.assistant}" for t in session.turns))
    kept = []
    for procedure in procedures:
        steps = [step for step in procedure.steps if _said(step, words)]
        if len(steps) >= 2 and _said(procedure.name, words):
            kept.append(replace(procedure, steps=steps))
        else:
            log.debug("dropped a procedure the session does not support: %r", procedure.name)
    return kept


def _said(text: str, words: set[str]) -> bool:
    """Every name and number of `text` (its first word's capital aside) and most of its
    other words occur in `words`."""
    body = text[:1].lower() + text[1:]
    specific = {w for s in _SPECIFIC.findall(body) for w in content_words(s)}
    if not specific <= words:
        return False
    plain = content_words(body) - specific
    if not plain:
        return bool(specific)
    return len(plain & words) / len(plain) >= MIN_SUPPORT


def is_statement(fact: str) -> bool:
    """A fact says something about the user in the third person ("User lives in Porto"),
    not a bare fragment ("Porto, Portugal", "Mia", "Location: Tokyo") that memory cannot
    tell the meaning of, and not what a small model writes instead of a fact: a line of
    the transcript copied whole ("User: Hey Gina, you're doing great!", "I'm sure I'll
    make it"), a template's placeholder ("User will [action_item1]"), a phrase repeated
    in a loop, or an unfinished sentence ("User: I'm...")."""
    words = [w.lower() for w in WORD.findall(fact)]
    if len(words) < MIN_STATEMENT_WORDS or FACT_FRAME.isdisjoint(words):
        return False
    unquoted = _QUOTED.sub(" ", fact).replace("’", "'")
    if _SPEAKER_LABEL.match(fact) or _PLACEHOLDER.search(fact):
        return False
    if _SPEECH.intersection(w.lower() for w in _TOKEN.findall(unquoted)):
        return False
    if fact.rstrip().endswith(("...", "…")):
        return False
    return max(_run_counts(words).values(), default=0) < 2


def is_credible_summary(summary: str, session: SessionInput) -> bool:
    """A summary tells what the session held: most of its words come from the session
    (either side; words that frame a summary aside), and it holds no template placeholder
    and no loop. A small model's summary of something else is worse than none: it would
    be recalled as what was said."""
    words = [w.lower() for w in WORD.findall(summary)]
    if not words or _PLACEHOLDER.search(summary.replace(REDACTED, "")):
        return False
    if max(_run_counts(words).values(), default=0) >= SUMMARY_LOOP:
        return False
    said = content_words(" ".join(f"{turn.user} {turn.assistant}" for turn in session.turns))
    # Numbers aside: the model is asked to turn "yesterday" into a date.
    told = {w for w in content_words(summary) - FACT_FRAME - SUMMARY_FRAME if not w.isdigit()}
    return not told or len(told & said) / len(told) >= MIN_SUMMARY_SUPPORT


def _run_counts(words: list[str]) -> Counter[tuple[str, ...]]:
    """How often each run of REPEAT_RUN consecutive words occurs."""
    return Counter(tuple(words[i : i + REPEAT_RUN]) for i in range(len(words) - REPEAT_RUN + 1))


def supported(fact: str, words: set[str], names: Set[str] = frozenset(), *,
              share: float = MIN_SUPPORT, vouching: bool = True, language: str = "en") -> bool:
    """Every name and number of `fact` is in `words` (a name may also be in `names`), and
    at least `share` of its other words are in `words`; with `vouching`, a name or number
    it shares with `words` vouches for the rest."""
    # The first word's capital marks the sentence; a weekday or month is the model's own
    # reading of "yesterday" or "last week", as it is asked to write dates.
    body = fact[:1].lower() + fact[1:]
    specific = ({w for s in _SPECIFIC.findall(body) for w in root_words(s, language)}
                - FACT_FRAME - _CALENDAR)
    shared = specific & words
    if not specific - shared <= {n for n in names if not n.isdigit()}:
        return False
    plain = root_words(fact, language) - FACT_FRAME - REPORTING - specific
    if not plain:  # a fact of names alone rests on the words themselves
        return bool(shared)
    return len(plain & words) / len(plain) >= share or (vouching and bool(shared))


def states(fact: str, text: str) -> bool:
    """Whether one message says `fact`, by the test a fact meets against the user's words
    (a fact deleted by hand takes back the lines that say it)."""
    language = detect_language(text)
    return is_statement(fact) and supported(fact, root_words(text, language), language=language)


def speaks_of_self(fact: str, sentences: list[set[str]], language: str = "en") -> bool:
    wanted = root_words(fact, language) - FACT_FRAME
    return any(wanted & sentence for sentence in sentences)


def _first_person_sentences(text: str, language: str) -> list[set[str]]:
    """The words of each sentence of `text` in which its speaker speaks of themselves."""
    return [root_words(sentence, language) for sentence in _SENTENCE.findall(text)
            if _FIRST_PERSON & _speech_words(sentence)]


def _statements(text: str, language: str) -> list[tuple[set[str], bool]]:
    """The words of each sentence of `text` that states something rather than speaks to
    the listener (no "you", not a question), and whether its speaker speaks of themselves."""
    out = []
    for sentence in _SENTENCE.findall(text):
        said = _speech_words(sentence)
        if not sentence.rstrip().endswith("?") and not _SECOND_PERSON & said:
            out.append((root_words(sentence, language), bool(_SELF & said)))
    return out


def _speech_words(sentence: str) -> set[str]:
    plain = sentence.lower().replace("’", "'")
    return set(WORD.findall(plain)) | set(plain.split())


def _mentioned_entities_only(episode: EpisodeDraft, session: SessionInput) -> EpisodeDraft:
    said = " ".join(f"{turn.user} {turn.assistant}" for turn in session.turns).lower()
    return replace(episode, entities=[e for e in episode.entities if e.lower() in said])
