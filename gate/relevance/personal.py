"""Does a message speak of the user's own life, or ask for a task anyone could ask for?

Three signals, read from one sentence's tokens (spaCy's blank English tokenizer: "I'm" is
"i" + "'m", "Caroline's" is "caroline" + "'s"):

- own past: a question about what the user did, has or does ("How many bikes do I own?",
  "Which show did I start first?", "Who gave me the mixer?", "... the museums I visited").
  How-to and advice frames ("How do I center a div?", "What should I pack?") are not.
- situated: the user speaks from their own situation ("I'm planning a trip", "I've been
  feeling", "my sister", "for me to watch tonight"): a request that may need what memory
  knows of them.
- task: the shape of a request about the text at hand or the world at large ("Write a
  poem", "Explain ...", "What if ...", "Imagine you are ...", "... explain your answer").

They are cues, not verdicts: the gate weighs them with the retrieval evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mnemoproxy.gate.relevance.cues import TASK_OBJECTS, word_set

WH_WORDS = word_set("what which where when who whom whose how why")
# "How many pages have I read" asks about the user; "how do I" starts a how-to.
HOWTO_AUX = word_set("do can should could would might may")
PERSONAL_AUX = word_set("did do does have had has was were am")
SUBJECTS = word_set("i we")
GIVING = word_set("gave sent told bought recommended lent showed taught gifted made got")
OBJECTS = word_set("me us")
# Past tense forms ending in -ed that are not about the user's past ("I need ...").
NOT_PAST = word_set("need feed seed shed bleed breed speed proceed succeed exceed")
SITUATED_AFTER_I = word_set("'m am 've was 'll will 'd had")
SITUATED_AFTER_WE = word_set("'re are 've were 'll")
TIME_ANCHORS = word_set(
    """tonight today tomorrow lately recently nowadays currently again soon anymore still
    yesterday"""
)
ANCHOR_PAIRS = frozenset(
    [("this", w) for w in word_set(
        "weekend week evening morning afternoon month year summer winter spring fall autumn"
    )]
    + [("next", w) for w in word_set("week weekend month year summer winter spring fall")]
    + [("these", "days"), ("around", "me"), ("near", "me"), ("for", "me"), ("the", "evening")]
)
# "How can I improve my time management skills?" is self-help anyone could ask.
IMPROVING = word_set(
    """improve increase develop boost enhance reduce become build manage overcome deal stay
    learn get make handle"""
)
ABSTRACT_OWN = word_set(
    """skills skill productivity time focus motivation posture mindset confidence habits
    thinking own best first"""
)
TASK_OPENERS = word_set(
    """write implement develop explain describe compose draft solve translate summarise
    summarize list create design generate calculate convert rewrite proofread outline
    structure use imagine pretend suppose assume given compare discuss analyze analyse
    evaluate debug refactor define"""
)
TASK_PAIRS = frozenset(
    [("what", "if"), ("as", "a"), ("as", "an"), ("if", "you"), ("in", "a"), ("why", "might"),
     ("how", "might")]
)
TASK_PHRASES = (("explain", "your", "answer"), ("try", "to", "explain"), ("step", "-", "by"),
                ("step", "by", "step"))
HELP_TASKS = word_set("write draft create compose prepare plan")
_TASK_PHRASE_STARTS: dict[str, list[tuple[str, ...]]] = {}
for _phrase in TASK_PHRASES:
    _TASK_PHRASE_STARTS.setdefault(_phrase[0], []).append(_phrase)


ASKING_FOR = word_set(
    "recommend recommendations suggest suggestions tips ideas advice recommendation suggestion"
)
# "What's a good way to ...", "What is the best way to ...": advice anyone could ask.
ADVICE_WAYS = (("good", "way"), ("best", "way"), ("how", "to"))


@dataclass
class Personal:
    own_past: str | None = None  # the words that showed it
    situated: str | None = None
    # A recommendation asked for the user ("resources where I can learn ..."): their
    # preferences may matter, though the request names nothing of their life.
    for_the_user: str | None = None
    task: bool = False


def read_sentence(words: Sequence[str], signals: Personal, first_sentence: bool) -> None:
    """Update `signals` from one sentence's lower-cased tokens."""
    if not words:
        return
    opening = [w for w in words if w.isalpha()][:3]
    if _is_task(words, opening if first_sentence else ()):
        signals.task = True
    if signals.own_past is None:
        signals.own_past = _own_past(words, opening)
    if signals.situated is None:
        signals.situated = _situated(words, opening)
    if signals.for_the_user is None and not ASKING_FOR.isdisjoint(words):
        # The user as the one it is for ("where I can learn", "for my garden", "for me"),
        # not merely as the one given it ("give me ten ideas").
        beneficiary = next(
            (w for i, w in enumerate(words)
             if w in ("i", "my") or (w == "me" and i > 0 and words[i - 1] == "for")),
            None,
        )
        if beneficiary is not None:
            signals.for_the_user = f"{next(w for w in words if w in ASKING_FOR)} ... {beneficiary}"


def _is_task(words: Sequence[str], opening: Sequence[str]) -> bool:
    if opening and opening[0] in TASK_OPENERS:
        return True
    if len(opening) >= 2 and (opening[0], opening[1]) in TASK_PAIRS:
        return True
    # One pass over the words: this runs for every sentence of a long message.
    for i, word in enumerate(words):
        if word in _TASK_PHRASE_STARTS:
            for phrase in _TASK_PHRASE_STARTS[word]:
                if tuple(words[i : i + len(phrase)]) == phrase:
                    return True
        # "Can you help me write a resignation letter" asks for a piece of writing.
        elif (word == "help" and i + 2 < len(words) and words[i + 1] == "me"
              and words[i + 2] in HELP_TASKS):
            return True
    return False


def _howto(opening: Sequence[str]) -> bool:
    """'How do I ...', 'How can we ...', 'What should I ...': advice anyone could ask."""
    if len(opening) < 3 or opening[2] not in SUBJECTS:
        return False
    return (opening[0] == "how" and opening[1] in HOWTO_AUX) or (
        opening[0] == "what" and opening[1] in ("should", "can", "could")
    )


def _own_past(words: Sequence[str], opening: Sequence[str]) -> str | None:
    if not opening or _howto(opening):
        return None
    wh = opening[0] in WH_WORDS
    for i in range(len(words) - 1):
        pair = (words[i], words[i + 1])
        if wh and pair[0] in PERSONAL_AUX and pair[1] in SUBJECTS:
            return " ".join(pair)
        if pair[0] in GIVING and pair[1] in OBJECTS and wh:
            return " ".join(pair)
        if wh and pair[0] in SUBJECTS and pair[1].endswith("ed") and pair[1] not in NOT_PAST:
            return " ".join(pair)
    if opening[0] in ("did", "have", "had", "was", "were") and len(opening) > 1 and (
        opening[1] in SUBJECTS
    ):
        return " ".join(opening[:2])
    return None


def _advice(words: Sequence[str], opening: Sequence[str]) -> bool:
    """How-to and best-way frames: what the user says of themselves there ("if I've never
    run before") shapes the advice, it does not point at memory."""
    if _howto(opening):
        return True
    return any((words[i], words[i + 1]) in ADVICE_WAYS for i in range(len(words) - 1))


def _situated(words: Sequence[str], opening: Sequence[str]) -> str | None:
    advice = bool(opening) and _advice(words, opening)
    improving = advice and any(w in IMPROVING for w in words)
    first_person = False
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        if word == "i" and following in SITUATED_AFTER_I and not advice:
            return f"{word} {following}"
        if word == "we" and following in SITUATED_AFTER_WE and not advice:
            return f"{word} {following}"
        own = following.isalpha() and following not in ABSTRACT_OWN | TASK_OBJECTS
        if word in ("my", "our") and own and not improving:
            return f"{word} {following}"
        first_person = first_person or word in ("i", "me", "my", "we", "our", "us")
    if first_person:
        for i, word in enumerate(words):
            if word in TIME_ANCHORS:
                return word
            if i + 1 < len(words) and (word, words[i + 1]) in ANCHOR_PAIRS:
                return f"{word} {words[i + 1]}"
    return None
