"""Keeping only what the user said: a check on every fact a core model distils.

Small models copy the examples of their prompt ("User lives in Berlin" for someone who
never said so), take the assistant's suggestions for the user's facts, and fill identity
with guesses. A fact is kept only when the user's own words in the session support it:
every name and number it holds occurs there, and so do most of its other words. An
identity fact needs more: a sentence where the user speaks of themselves ("I", "my") and
says one of its words; a grounded fact without one is kept as an ordinary pinned fact.
A fact must also be a statement about the user, not a fragment. The episode stays (it
sums up both sides), minus entities the session never mentions.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import replace

from mnemoproxy.memory.models import (
    Distillation,
    EpisodeDraft,
    FactDraft,
    ProcedureDraft,
    SessionInput,
)
from mnemoproxy.memory.text.words import WORD, content_words
from mnemoproxy.memory.write.redact import REDACTED

log = logging.getLogger(__name__)

# Most of a fact's plain words must be the user's; its names and numbers all of them.
MIN_SUPPORT = 0.6
# "User" and "user's" are how facts are written, not what they say.
FACT_FRAME = frozenset({"user", "users"})
MIN_STATEMENT_WORDS = 3
_SPECIFIC = re.compile(r"\b(?:[A-Z][\w'’-]*|\d[\w.,:/-]*)")
_FIRST_PERSON = frozenset({"i", "i'm", "im", "my", "me", "mine", "myself", "i've", "i'd"})
_SENTENCE = re.compile(r"[^.!?\n]+")
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
    """`distillation` without the facts the user's words do not support."""
    user_text = "\n".join(turn.user for turn in session.turns)
    user_words = content_words(user_text)
    said_of_self = _first_person_sentences(user_text)
    identity: list[FactDraft] = []
    pinned: list[FactDraft] = []
    for fact in distillation.identity:
        if not (is_statement(fact.content) and supported(fact.content, user_words)):
            continue
        if speaks_of_self(fact.content, said_of_self):
            identity.append(fact)
        else:  # the user's words, but not about themselves: a fact, not their identity
            pinned.append(replace(fact, kind="pinned"))
    pinned += [
        f for f in distillation.pinned
        if is_statement(f.content) and supported(f.content, user_words)
    ]
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
            log.debug("dropped a fact the user's words do not support: %r", fact.content)
    return Distillation(
        episode=episode,
        pinned=pinned,
        identity=identity,
        ungrounded=distillation.ungrounded + proposed - len(identity) - len(pinned),
    )


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


def supported(fact: str, words: set[str]) -> bool:
    specific = {w for s in _SPECIFIC.findall(fact) for w in content_words(s)} - FACT_FRAME
    if not specific <= words:
        return False
    plain = content_words(fact) - FACT_FRAME - specific
    if not plain:
        return bool(specific)
    return len(plain & words) / len(plain) >= MIN_SUPPORT or bool(specific)


def speaks_of_self(fact: str, sentences: list[set[str]]) -> bool:
    wanted = content_words(fact) - FACT_FRAME
    return any(wanted & sentence for sentence in sentences)


def _first_person_sentences(text: str) -> list[set[str]]:
    out = []
    for sentence in _SENTENCE.findall(text):
        words = {w.lower() for w in WORD.findall(sentence.replace("’", "'"))}
        raw = set(sentence.lower().replace("’", "'").split())
        if _FIRST_PERSON & (words | raw):
            out.append(content_words(sentence))
    return out


def _mentioned_entities_only(episode: EpisodeDraft, session: SessionInput) -> EpisodeDraft:
    said = " ".join(f"{turn.user} {turn.assistant}" for turn in session.turns).lower()
    return replace(episode, entities=[e for e in episode.entities if e.lower() in said])
