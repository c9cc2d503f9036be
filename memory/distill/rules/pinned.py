"""Rules for what the user wants kept in view: tastes, health constraints, commitments and
decisions. Commitments and decisions carry their dates made absolute."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemoproxy.memory.distill.rules import lexicon as lex
from mnemoproxy.memory.distill.rules.grammar import (
    ADV,
    BE,
    I_OR_WE,
    MY,
    I,
    Rule,
    Trigger,
    clean_value,
    context_bound,
    pinned,
    still,
    third_person,
    word,
)
from mnemoproxy.memory.distill.rules.lexicon import PRONOUNS
from mnemoproxy.memory.distill.rules.spans import phrase_after, slot_key
from mnemoproxy.memory.models import FactDraft
from mnemoproxy.memory.text.dates import rewrite_with_dates, without_dates

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span

_SENTIMENT = {
    "like": "likes", "love": "loves", "enjoy": "enjoys", "adore": "adores", "hate": "hates",
    "dislike": "dislikes", "detest": "hates", "loathe": "hates", "prefer": "prefers",
}
_FONDNESS = {"like", "love", "enjoy", "adore"}
_REJECTED_OPENERS = (PRONOUNS - {"my", "our"}) | {"how", "so", "too", "very", "to"}
_ALTERNATIVE_MARKERS = {"over", "than", "instead", "rather", "to"}
# A commitment or a decision runs to the end of its clause, "and" included.
_ACTION_BREAKS = frozenset({"because", "cause", "since", "so", "but", "though", "although"})
_SMALL_TALK_ACTIONS = {"talk", "see", "chat", "catch", "speak", "text", "ttyl"}
_COMMITMENT = ("commitment",)
_FAVOURITE_VERBS = {"is", "are", "'s", "was", "include", "includes"}


def _taste_object(span: Span | None) -> str | None:
    """A liked or disliked thing, or None when the words name no stable taste."""
    if span is None:
        return None
    first_content = next((t for t in span if t.lower_ not in {"a", "an", "the"}), None)
    if first_content is None or span[0].lower_ in _REJECTED_OPENERS:
        return None
    if first_content.lower_ in lex.VAGUE_OBJECTS:
        return None
    if span[0].lower_ == "the" and span[-1].lower_ in lex.PRESENTED:  # "the third option"
        return None
    value = clean_value(span)
    if not value or context_bound(value):  # "seeing them eat fruit"
        return None
    return third_person(value)


def _preference_slot(value: str) -> str:
    return "preference:" + slot_key(value.removeprefix("to "))


def _taste(trigger: Trigger) -> list[FactDraft]:
    verb = trigger.span[-1].lower_
    if verb == "stand":  # "I can't stand X"
        sentiment = "hates" if trigger.negated else None
    elif trigger.negated:
        sentiment = "dislikes" if verb in _FONDNESS else None
    else:
        sentiment = _SENTIMENT[verb]
    if sentiment is None:
        return []
    doc = trigger.span.doc
    if verb == "prefer":
        return _preference_between(doc, trigger.end)
    value = _taste_object(phrase_after(doc, trigger.end, max_tokens=6))
    if value is None:
        return []
    return [pinned(f"User {sentiment} {value}", _preference_slot(value), 0.6)]


def _preference_between(doc: Doc, start: int) -> list[FactDraft]:
    """"I prefer tea over coffee": both sides share a slot, so the reverse supersedes it."""
    phrase = phrase_after(doc, start, max_tokens=9)
    if phrase is None:
        return []
    split = next((t.i for t in phrase[1:] if t.lower_ in _ALTERNATIVE_MARKERS), phrase.end)
    chosen = _taste_object(doc[phrase.start:split])
    if chosen is None:
        return []
    rest = doc[split:phrase.end]
    skip = next((i for i, t in enumerate(rest) if t.lower_ not in _ALTERNATIVE_MARKERS | {"of"}),
                len(rest))
    other = _taste_object(rest[skip:]) if len(rest) > skip else None
    keys = sorted(slot_key(v) for v in (chosen, other) if v)
    if all(k in lex.DRINKS for k in keys):
        slot = "preference:drink"
    else:
        slot = "preference:" + " vs ".join(keys)
    content = f"User prefers {chosen} over {other}" if other else f"User prefers {chosen}"
    return [pinned(content, slot, 0.6)]


def _favourite(trigger: Trigger) -> list[FactDraft]:
    """"my favourite colour is blue" -> preference:colour. One of several ("one of my
    favourite dishes is lasagna", "my favourite foods include sushi") takes no slot of
    the topic's: another favourite of it does not replace this one."""
    doc, topic_end = trigger.span.doc, trigger.end
    while (
        topic_end < min(trigger.end + 3, trigger.span.sent.end)
        and doc[topic_end].is_alpha
        and doc[topic_end].lower_ not in _FAVOURITE_VERBS
        and doc[topic_end].lower_ not in lex.CLAUSE_BREAKS | PRONOUNS  # "studio and it is"
    ):
        topic_end += 1
    if topic_end == trigger.end or topic_end >= trigger.span.sent.end:
        return []
    if doc[topic_end].lower_ not in _FAVOURITE_VERBS:
        return []
    topic = " ".join(lex.SPELLING.get(t.lower_, t.lower_) for t in doc[trigger.end:topic_end])
    value = _taste_object(phrase_after(doc, topic_end + 1, max_tokens=6))
    if value is None:
        return []
    start = trigger.span.start
    one_of = start >= 2 and [t.lower_ for t in doc[start - 2:start]] == ["one", "of"]
    if one_of or doc[topic_end].lower_.startswith("include"):
        return [pinned(f"User's favourite {topic} include {value}",
                       f"preference:{slot_key(topic)}:{slot_key(value)}", 0.6)]
    verb = doc[topic_end].lower_ if doc[topic_end].lower_ != "'s" else "is"
    return [pinned(f"User's favourite {topic} {verb} {value}", f"preference:{slot_key(topic)}",
                   0.6)]


def allergy_facts(items: list[str]) -> list[FactDraft]:
    return [
        pinned(f"User is allergic to {item}", f"health:allergy:{slot_key(item)}", 0.9)
        for item in items
        if item and item.split()[0].lower() not in PRONOUNS
    ]


def list_items(doc: Doc, start: int) -> list[str]:
    """"peanuts, shellfish and dust" -> its three items."""
    phrase = phrase_after(doc, start, max_tokens=8, breaks=_ACTION_BREAKS)
    if phrase is None:
        return []
    items: list[str] = []
    current: list[str] = []
    for token in phrase:
        if token.lower_ in {"and", "or", ","}:
            items.append(" ".join(current))
            current = []
        else:
            current.append(token.text)
    return [*items, " ".join(current)]


def _am_reader(trigger: Trigger) -> list[FactDraft] | None:
    """What follows "I'm" about tastes and health; None when nothing here applies."""
    nxt = trigger.at(0)
    if nxt is None:
        return None
    doc = trigger.span.doc
    if trigger.followed_by("allergic", "to"):
        return [] if trigger.negated else allergy_facts(list_items(doc, trigger.end + 2))
    article = 1 if nxt.lower_ in {"a", "an"} else 0
    # "I'm a (big|huge) fan of X", read within three words of the article.
    for i in range(trigger.end + article, min(trigger.end + 4, trigger.span.sent.end - 1)):
        if article and doc[i].lower_ == "fan" and doc[i + 1].lower_ == "of":
            value = _taste_object(phrase_after(doc, i + 2))
            if value is None:
                return []
            verb = "is not" if trigger.negated else "is"
            return [pinned(f"User {verb} a fan of {value}", _preference_slot(value), 0.6)]
    return _health(trigger, article)


def _health(trigger: Trigger, article: int) -> list[FactDraft] | None:
    if trigger.negated and not trigger.no_longer:
        return None
    status = trigger.at(article)
    if status is None:
        return None
    said, slot = status.lower_, ""
    if said in lex.DIETS:
        slot = "health:diet"
    elif said in lex.CONDITIONS:
        slot = f"health:condition:{said}"
    elif trigger.followed_by(*(["a"] * article), said, "-", "free"):
        said, slot = f"{said}-free", f"health:intolerance:{said}"
    elif trigger.followed_by(said, "intolerant"):
        said, slot = f"{said} intolerant", f"health:intolerance:{said}"
    if not slot:
        return None
    return [pinned(f"User {still(trigger, 'is')} {said}", slot, 0.9)]


def _abstains(trigger: Trigger) -> list[FactDraft]:
    """"I don't eat meat", "I don't drink alcohol": only the negated form is a constraint."""
    if not trigger.negated:
        return []
    value = _taste_object(phrase_after(trigger.span.doc, trigger.end, max_tokens=4))
    if value is None:
        return []
    verb = trigger.span[-1].lower_
    return [pinned(f"User doesn't {verb} {value}", f"health:diet:{slot_key(value)}", 0.85)]


def _action(
    trigger: Trigger, *, need_date: bool, prefix: str = ""
) -> tuple[str, str] | None:
    """The action after a trigger with its dates made absolute, and the commitment slot
    named by the action without its dates, so a moved deadline supersedes the old one."""
    phrase = phrase_after(trigger.span.doc, trigger.end, max_tokens=16, breaks=_ACTION_BREAKS)
    if phrase is None:
        return None
    # Judged without its dates: "this weekend" is a date, "this" alone is not. Where only
    # what follows an "and" is bound to the conversation ("host a BBQ on Saturday and need
    # help preparing for it"), the action is what comes before.
    while context_bound(without_dates(phrase), addressed=True):
        joins = [t.i for t in phrase if t.lower_ == "and"]
        if not joins:
            return None  # "I'll try it out this weekend"
        phrase = phrase.doc[phrase.start:joins[-1]]
    text, has_date = rewrite_with_dates(phrase, trigger.when)
    if need_date and not has_date:
        return None
    undated = third_person(prefix + without_dates(phrase))
    return third_person(prefix + text), "commitment:" + slot_key(undated)


def _remind(trigger: Trigger) -> list[FactDraft]:
    # A request to be reminded, not "these moments remind me to be grateful".
    start = trigger.span.start
    before = trigger.span.doc[start - 1] if start > trigger.span.sent.start else None
    if trigger.span[0].lower_ == "remind" and before is not None and not (
        before.is_punct or before.lower_ in {"please", "pls", "you", "and"}
        or (before.lower_ == "to" and before.i > 0 and before.nbor(-1).lower_ == "you")
    ):
        return []  # "a painting in my room to remind me to stay true" asks for nothing
    action = _action(trigger, need_date=False)
    if action is None:
        return []
    about = trigger.span[-1].lower_
    content = f"User wants to be reminded {about} {action[0]}"
    return [pinned(content, action[1], 0.7, _COMMITMENT)]


def _need(trigger: Trigger) -> list[FactDraft]:
    action = _action(trigger, need_date=True)
    if action is None:
        return []
    return [pinned(f"User needs to {action[0]}", action[1], 0.7, _COMMITMENT)]


def _will(trigger: Trigger) -> list[FactDraft]:
    first = trigger.at(0)
    if first is None:
        return []
    # "I'll talk to you tomorrow", "I'll see you Friday": a goodbye, not a commitment.
    nearby = {t.lower_ for t in (trigger.at(1), trigger.at(2)) if t is not None}
    if first.lower_ in _SMALL_TALK_ACTIONS and "you" in nearby:
        return []
    going_somewhere = trigger.span[-1].lower_ == "to" and (
        first.lower_ in {"the", "a", "an", "my", "our", "this", "that"} or first.is_title
    )
    action = _action(trigger, need_date=True, prefix="go to " if going_somewhere else "")
    if action is None:
        return []
    return [pinned(f"User will {action[0]}", action[1], 0.7, _COMMITMENT)]


def _decide(trigger: Trigger) -> list[FactDraft]:
    action = _action(trigger, need_date=False)
    if action is None:
        return []
    last = trigger.span[-1].lower_
    if last == "with" and _names_a_listed_choice(trigger):
        return []  # "I'll go with Option 2": which option is in the list, not in memory
    verb = {"to": "decided to", "on": "decided on", "with": "decided to go with"}[last]
    return [pinned(f"User {verb} {action[0]}", None, 0.7, ("decision",))]


def _names_a_listed_choice(trigger: Trigger) -> bool:
    """"Option 2", "number 3", "the second one", "the first option"."""
    first, second = trigger.at(0), trigger.at(1)
    if first is None:
        return False
    if first.lower_ in {"option", "choice", "number", "#"}:
        return second is not None and (second.is_digit or len(second) == 1)
    return first.lower_ == "the" and second is not None and second.lower_ in lex.ORDINALS


RULES: dict[str, Rule] = {
    "taste": Rule(
        [[I, ADV, word(*_SENTIMENT)], [I, word("ca", "can"), {"NORM": "not"}, word("stand")]],
        _taste,
        reads_negation=True,
    ),
    "favourite": Rule([[MY, word("favorite", "favourite", "fave", "fav")]], _favourite),
    "abstain": Rule([[I, ADV, word("eat", "drink")]], _abstains, reads_negation=True),
    "remind": Rule(
        [[word("remind"), word("me"), word("to", "about")],
         [I, ADV, word("want", "need"), word("to"), word("be"), word("reminded"),
          word("to", "about")],
         [word("do"), {"NORM": "not"}, word("let"), word("me"), word("forget"),
          word("to", "about")]],
        _remind,
        allows_questions=True,
        reads_negation=True,
    ),
    "need": Rule(
        [[I, ADV, word("need", "have", "got"), word("to")], [I, ADV, word("must", "gotta")]],
        _need,
    ),
    "will": Rule(
        [[I, ADV, {"NORM": "will"}],
         [I, BE, ADV, word("going", "planning"), word("to")],
         [I, ADV, word("plan", "promise", "intend"), word("to")]],
        _will,
    ),
    "decide": Rule(
        [[I_OR_WE, ADV, word("decided", "agreed", "chose"), word("to", "on")],
         [word("let"), word("'s", "us"), word("go"), word("with")],
         [I_OR_WE, ADV, {"NORM": "will", "OP": "?"}, word("go", "going"), word("with")]],
        _decide,
    ),
}
AM_READER = _am_reader
