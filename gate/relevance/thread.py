"""A follow-up that points back into its own conversation needs no memory.

"What was that chapel you mentioned?", "like I said, I only have 20 minutes", "earlier you
said butter, now oil: which is it?": the request carries the conversation so far, and
what the message points at is in it. Memory would repeat the thread (its turns are
recorded as they happen) or, before they are, bring something else that shares a word.

The message points back into the thread when it points back at what was said (a recall
cue, the user's own words asked back, a thing asked again) without a date beyond the
conversation ("last month", "in March"), and the thread says most of the words it names.
A question about the user's own life ("which of these did I already visit?") is no
pointing back at words: the thread does not hold the user's past, however much of the
topic it shares.
"""

from __future__ import annotations

from mnemoproxy.gate.excerpt import terms
from mnemoproxy.gate.relevance.scan import Cues

# Cue labels (cues.py) that point back at what was said; "calendar" names a time, which
# puts the thing before the conversation.
POINTING = ("recall", "transcript", "my_speech", "episode", "back_then")
# The share of the words a follow-up names that the thread must say: one may be new ("you
# said 90 minutes: is that without traffic?"); a question most of whose words the thread
# never says asks of something else.
THREAD_SHARE = 0.5
# Words that point rather than name: saying and recalling ("you mentioned", "remind me",
# "tell me more"), and picking a piece of a reply ("the second option", "that last bit"),
# which the thread says in its own way ("2.", a heading).
POINTING_WORDS = terms(
    "say said says tell told telling mention mentioned recommend recommended suggest "
    "suggested explain explained describe described remind remember recall discuss "
    "discussed talk talked give gave show showed share shared mean meant ask asked write "
    "wrote call called more again back above before earlier "
    "one first second third fourth fifth last next previous other option point tip step "
    "item part bit thing idea suggestion version paragraph line sentence section list "
    "answer example bullet"
)


def points_into_thread(cues: Cues, own_words: str, thread: str) -> str | None:
    """The cue by which the message (its `own_words`, as scanned into `cues`) points back
    at what the conversation before it (`thread`) says, or None."""
    if not thread.strip() or "calendar" in cues.matches:
        return None
    if cues.personal.own_past is not None and not (
            "transcript" in cues.matches or "my_speech" in cues.matches):
        return None  # what the user did, not what they said
    pointing = [cues.matches[label] for label in POINTING if label in cues.matches]
    if cues.asked_back is not None:
        pointing.append(cues.asked_back)
    if not pointing:
        return None
    named = terms(own_words) - POINTING_WORDS
    if len(named & terms(thread)) < THREAD_SHARE * len(named):
        return None
    return pointing[0]
