"""Rules for who the user is: name, places, work, age, family and pets."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mnemoproxy.memory.distill.rules import lexicon as lex
from mnemoproxy.memory.distill.rules.grammar import (
    ADV,
    BE,
    I_OR_WE,
    MY,
    Handler,
    I,
    Rule,
    Trigger,
    identity,
    still,
    word,
)
from mnemoproxy.memory.distill.rules.pinned import allergy_facts, list_items
from mnemoproxy.memory.distill.rules.spans import (
    is_clause_break,
    is_name_like,
    mostly_title_case,
    phrase_after,
    proper_span,
    singular,
    slot_key,
)
from mnemoproxy.memory.models import FactDraft

if TYPE_CHECKING:
    from spacy.tokens import Doc, Span, Token

_PLACE_BREAKS = frozenset({"with", "for", "since", "now", "right", "but", "and", "because"})
_ORG_BREAKS = frozenset({"as", "in", "with", "since", "for", "and", "but", "because", "now"})
_JOB_BREAKS = frozenset({"at", "for", "in", "with", "from", "who", "that", "and", "but", "since"})
_LIST_JOINS = frozenset({"and", "or", "&"})


def _with_kind(doc: Doc, named: Span) -> Span:
    """A proper name and the lower-case word saying what kind of place it is, when one
    follows: "St James hospital", "Camden town"."""
    end = named.end
    while end < named.sent.end and end - named.end < 2 and doc[end].lower_ in lex.PLACE_KINDS:
        end += 1
    return doc[named.start:end]


def _named_or_phrase(
    doc: Doc, start: int, *, breaks: frozenset[str], accept: Callable[[Span], bool]
) -> Span | None:
    """A proper name after `start` ("Berlin", "the US", "Bank of America"), else a short
    lower-case phrase opened by an article that `accept` approves ("a small town")."""
    if start >= doc[start - 1].sent.end:
        return None
    if doc[start].lower_ == "the" and (named := proper_span(doc, start + 1)) is not None:
        return doc[start:_with_kind(doc, named).end]
    if (named := proper_span(doc, start)) is not None:
        return _with_kind(doc, named)
    phrase = phrase_after(doc, start, max_tokens=6, breaks=breaks)
    if phrase is None or phrase[0].lower_ not in {"a", "an", "the"}:
        return None
    return phrase if accept(phrase) else None


def _place(doc: Doc, start: int) -> Span | None:
    return _named_or_phrase(
        doc, start, breaks=_PLACE_BREAKS,
        # "a small town" says something; "a region" (with hot summers) or "an area" alone
        # does not.
        accept=lambda phrase: len(phrase) > 2 and any(t.lower_ in lex.SETTLEMENTS
                                                      for t in phrase),
    )


def _organisation(doc: Doc, start: int) -> Span | None:
    return _named_or_phrase(
        doc, start, breaks=_ORG_BREAKS, accept=lambda phrase: phrase[0].lower_ != "the"
    )


def _job(doc: Doc, start: int, *, stated_as_work: bool) -> Span | None:
    """"a data engineer" after "I'm"; any noun phrase after "I work as"."""
    if start >= len(doc) or doc[start].lower_ not in {"a", "an"}:
        return None
    phrase = phrase_after(doc, start, max_tokens=5, breaks=_JOB_BREAKS)
    if phrase is None or len(phrase) < 2 or phrase[-1].lower_ in lex.NOT_ROLES:
        return None
    if stated_as_work:
        return phrase
    head = phrase[-1].lower_
    if any(t.lower_ in lex.NOT_JOB_MODIFIERS for t in phrase[1:]) or head in lex.NOT_JOBS:
        return None
    return phrase if head in lex.JOBS or head.endswith(lex.JOB_SUFFIXES) else None


def _occupation_facts(trigger: Trigger, start: int, *, stated_as_work: bool) -> list[FactDraft]:
    doc = trigger.span.doc
    job = _job(doc, start, stated_as_work=stated_as_work)
    if job is None:
        return []
    verb = "is" if _job(doc, start, stated_as_work=False) else "works as"
    facts = [identity(f"User {still(trigger, verb)} {job.text}", "identity:occupation", 0.85)]
    if job.end < job.sent.end and doc[job.end].lower_ in {"at", "for"} and not trigger.no_longer:
        facts += _employer_facts(trigger, job.end + 1)
    return facts


def _employer_facts(trigger: Trigger, start: int) -> list[FactDraft]:
    doc = trigger.span.doc
    org = _organisation(doc, start)
    if org is None:
        return []
    content = f"User {still(trigger, 'works at')} {org.text}"
    facts = [identity(content, "identity:employer", 0.85)]
    if org.end < org.sent.end and doc[org.end].lower_ == "as" and not trigger.no_longer:
        facts += _occupation_facts(trigger, org.end + 1, stated_as_work=True)
    return facts


def _place_reader(slot: str, verb: str, salience: float, *, proper_only: bool = False) -> Handler:
    def read(trigger: Trigger) -> list[FactDraft]:
        doc = trigger.span.doc
        if proper_only:
            place = proper_span(doc, trigger.end)
            place = place and _with_kind(doc, place)
        else:
            place = _place(doc, trigger.end)
        if place is None:
            return []
        return [identity(f"User {still(trigger, verb)} {place.text}", slot, salience)]

    return read


_read_location = _place_reader("identity:location", "lives in", 0.85)
_read_hometown = _place_reader("identity:hometown", "is from", 0.8)


def _name_after(trigger: Trigger, offset: int = 0, *, ends_clause: bool = True) -> str | None:
    """One to three capitalised words at `offset`: a name. After "I'm" the name must end
    the clause ("I'm Alice." but not "I'm Excited to go")."""
    first = trigger.at(offset)
    if first is None or not is_name_like(first) or first.lower_ in lex.NOT_NAMES:
        return None
    if first.lower_.endswith(lex.NOT_NAME_SUFFIXES):
        return None
    doc, end = first.doc, first.i + 1
    while end < first.sent.end and end - first.i < 3 and is_name_like(doc[end]):
        end += 1
    if mostly_title_case(first.sent, doc[first.i:end]):
        return None
    if ends_clause and end < first.sent.end and not is_clause_break(doc[end]) and (
        doc[end].lower_ != "'s"
    ):
        return None
    return doc[first.i:end].text


def _my_name_is(trigger: Trigger) -> list[FactDraft]:
    name = _name_after(trigger)
    lone = trigger.at(0)
    if name is None and lone is not None and lone.is_alpha and not lone.is_stop:
        following = trigger.at(1)
        if following is None or is_clause_break(following):
            name = lone.text.capitalize()
    return [identity(f"User's name is {name}", "identity:name", 0.9)] if name else []


def _nickname(trigger: Trigger) -> list[FactDraft]:
    name = _name_after(trigger)
    return [identity(f"User goes by {name}", "identity:nickname", 0.85)] if name else []


def _age_at(trigger: Trigger, *, after_turned: bool) -> list[FactDraft] | None:
    number = trigger.at(0)
    if number is None or not number.is_digit or not 1 <= int(number.text) <= 120:
        return None
    following = trigger.at(1)
    allowed = {"years", "year", "yrs", "yo", "y", "and"}
    if after_turned:
        allowed |= {"this", "last", "today", "yesterday", "on", "in", "recently"}
    if following is not None and following.text == "%":  # "I'm 100% sure"
        return None
    if following is not None and not is_clause_break(following) and following.lower_ not in allowed:
        return None
    return [identity(f"User is {number.text} years old", "identity:age", 0.8)]


def _turned(trigger: Trigger) -> list[FactDraft]:
    return _age_at(trigger, after_turned=True) or []


def _relation_named(noun: str, name: str) -> FactDraft:
    if (one := singular(noun)) != noun and (one in lex.PETS or one in lex.RELATIONS_MANY):
        noun = one  # "two cats named Tom and Jerry": each is a cat
    if noun in lex.PETS:
        return identity(f"User has a {noun} named {name}", f"identity:pet:{name.lower()}", 0.8)
    if noun in lex.RELATIONS_SINGLE:
        return identity(f"User's {noun} is named {name}", f"identity:family:{noun}", 0.8)
    slot = f"identity:family:{lex.RELATIONS_MANY[noun]}:{name.lower()}"
    return identity(f"User has a {noun} named {name}", slot, 0.8)


# How a name is given to what was just named: "a border collie called Biscuit", "my
# neighbour, whose name is Ada", "my boss's name is Tom". Each form is a tuple of
# positions, each position the words it may be.
_CALLED_FORMS: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("named", "called"),),
    (("whose",), ("name",), ("is", "'s")),
    (("who", "that", "which"), ("is", "'s"), ("named", "called")),
    (("is",), ("named", "called")),
    (("'s",), ("name",), ("is",)),
)
# A kind word the favourite rule reads ("my favourite song is called ..."), not a thing
# of the user's with a name.
_NOT_KINDS = frozenset({"favourite", "favorite", "fave", "fav", "named", "called"})
_MAX_KIND_WORDS = 3


def _is_kind_word(token: Token) -> bool:
    return token.is_lower and token.is_alpha and not token.is_stop and (
        token.lower_ not in _NOT_KINDS
    )


def _kind_words_end(trigger: Trigger, offset: int) -> int:
    """The offset after the lower-case words naming a kind of thing from `offset` on
    ("border collie", "neighbour"), at most three of them."""
    end = offset
    while end - offset < _MAX_KIND_WORDS and (token := trigger.at(end)) is not None and (
        _is_kind_word(token)
    ):
        end += 1
    return end


def _called_length(trigger: Trigger, offset: int) -> int | None:
    """How many words (a comma before them included) give a name at `offset`: "called",
    ", whose name is"; None when none does."""
    comma = trigger.at(offset)
    start = offset + 1 if comma is not None and comma.text == "," else offset
    for form in _CALLED_FORMS:
        tokens = [trigger.at(start + i) for i in range(len(form))]
        if all(t is not None and t.lower_ in said for t, said in zip(tokens, form, strict=True)):
            return start - offset + len(form)
    return None


def _named(kind: Span, name: str, *, owned: bool) -> FactDraft:
    """A person or animal of the user's known by its name: pets and family in their own
    slots; any other kind ("border collie", "neighbour") in a slot of its kind and name,
    so only the same thing named again restates it."""
    noun = kind[-1].lower_
    if noun in lex.PETS or noun in lex.RELATIONS_SINGLE or noun in lex.RELATIONS_MANY:
        return _relation_named(noun, name)
    slot = f"identity:named:{slot_key(kind.text)}:{name.lower()}"
    if owned:
        return identity(f"User has {kind.doc[kind.start - 1].text} {kind.text} named {name}",
                        slot, 0.75)
    return identity(f"User's {kind.text} is named {name}", slot, 0.75)


def _my_named(trigger: Trigger) -> list[FactDraft]:
    """"my neighbour, whose name is Ada", "my boss is called Tom"."""
    doc, start = trigger.span.doc, trigger.span.start + 1
    end = start
    while end < trigger.end and _is_kind_word(doc[end]):
        end += 1
    name = _name_after(trigger, 0, ends_clause=False)
    return [_named(doc[start:end], name, owned=False)] if name and end > start else []


def _my_relation(trigger: Trigger) -> list[FactDraft]:
    """"my daughter Emma", "my wife's name is Anna", "my dog is called Max"."""
    if trigger.span[-1].is_title:
        return []  # "my Snake Plant": a name for a thing, not a snake named Plant
    noun = trigger.span[-1].lower_
    for words in (("'s", "name", "is"), ("is", "named"), ("is", "called"), (",",), ()):
        name = _name_after(trigger, len(words), ends_clause=False)
        if trigger.followed_by(*words) and name:
            after = trigger.at(len(words) + len(name.split()))
            if words == (",",) and after is not None and after.lower_ in _LIST_JOINS:
                return []  # "my girlfriend, Toby and I": Toby is another of the list
            return [_relation_named(noun, name)]
    return []


def _have(trigger: Trigger) -> list[FactDraft]:
    """"I have two kids", "we have a dog named Max", "I have a peanut allergy"."""
    doc, start = trigger.span.doc, trigger.end
    count = trigger.at(0)
    if count is None or not (count.lower_ in lex.COUNT_WORDS or count.is_digit):
        return []
    phrase = phrase_after(doc, start, max_tokens=6)
    if phrase is not None and phrase[-1].lower_ in {"allergy", "allergies"}:
        return allergy_facts([doc[start + 1:phrase.end - 1].text])
    if trigger.followed_by(count.text.lower(), "allergy", "to"):
        return allergy_facts(list_items(doc, start + 3))
    kind_end = _kind_words_end(trigger, 1)
    if kind_end > 1 and (called := _called_length(trigger, kind_end)) is not None:
        name = _name_after(trigger, kind_end + called, ends_clause=False)
        kind = doc[start + 1:start + kind_end]
        return [_named(kind, name, owned=True)] if name else []
    for offset in (1, 2, 3):
        noun_token = trigger.at(offset)
        if noun_token is None:
            return []
        noun = noun_token.lower_
        if noun in lex.PETS or noun in lex.RELATIONS_MANY or noun in lex.RELATIONS_SINGLE:
            break
    else:
        return []
    said = doc[start:start + offset + 1].text
    if noun in lex.PETS:
        return [identity(f"User has {said}", f"identity:pet:{lex.PETS[noun]}:count", 0.75)]
    canonical = lex.RELATIONS_MANY.get(noun, noun)
    return [identity(f"User has {said}", f"identity:family:{canonical}:count", 0.8)]


def _work(trigger: Trigger) -> list[FactDraft]:
    if trigger.span[-1].lower_ == "as":
        return _occupation_facts(trigger, trigger.end, stated_as_work=True)
    return _employer_facts(trigger, trigger.end)


def _left_job(trigger: Trigger) -> list[FactDraft]:
    org = _organisation(trigger.span.doc, trigger.end)
    return [identity(f"User no longer works at {org}", "identity:employer", 0.85)] if org else []


def _am_reader(trigger: Trigger) -> list[FactDraft] | None:
    """What follows "I'm" / "I am" about identity; None when nothing here applies."""
    doc, nxt = trigger.span.doc, trigger.at(0)
    if nxt is None:
        return None
    if nxt.lower_ == "from":
        return _read_hometown(Trigger(doc[trigger.span.start:nxt.i + 1], trigger.when))
    if trigger.followed_by(nxt.lower_, "in") and nxt.lower_ in {"based", "living"}:
        return _read_location(Trigger(doc[trigger.span.start:nxt.i + 2], trigger.when))
    prep = trigger.at(1)
    if trigger.followed_by("working") and prep is not None and prep.lower_ in {"at", "for", "as"}:
        return _work(Trigger(doc[trigger.span.start:prep.i + 1], trigger.when))
    status = "self-employed" if trigger.followed_by("self", "-", "employed") else nxt.lower_
    if status in lex.MARITAL or status in lex.WORK_STATUS:
        if trigger.negated and not trigger.no_longer:
            return []
        slot = "identity:family:marital" if status in lex.MARITAL else "identity:occupation"
        return [identity(f"User {still(trigger, 'is')} {status}", slot, 0.8)]
    if trigger.negated and not trigger.no_longer:
        return None
    if (age := _age_at(trigger, after_turned=False)) is not None:
        return age
    if nxt.lower_ in {"a", "an"}:
        return _occupation_facts(trigger, trigger.end, stated_as_work=False) or None
    if len(trigger.span) == 2 and (name := _name_after(trigger)):
        return [identity(f"User's name is {name}", "identity:name", 0.9)]
    return None


_VERB_IN = word("in")
_KIND_WORD = {"IS_LOWER": True, "IS_ALPHA": True, "IS_STOP": False,
              "LOWER": {"NOT_IN": sorted(_NOT_KINDS)}, "OP": f"{{1,{_MAX_KIND_WORDS}}}"}
# "I live in Berlin and work at Acme": the base-form verb after "and" still has "I" as its
# subject, while a third party's verb would be inflected ("my brother lives ... and works").
_SUBJECT = {"LOWER": {"IN": ["i", "we", "and"]}}
RULES: dict[str, Rule] = {
    "name_is": Rule([[MY, word("name"), {"NORM": {"IN": ["is", "'s"]}}]], _my_name_is),
    "nickname": Rule(
        [[word("call"), word("me")], [I, ADV, word("go"), word("by")]], _nickname
    ),
    "live": Rule(
        [[_SUBJECT, ADV, word("live", "reside"), _VERB_IN]], _read_location, reads_negation=True
    ),
    "moved": Rule(
        [[I_OR_WE, ADV, word("moved", "relocated"), word("to")]],
        _place_reader("identity:location", "lives in", 0.85, proper_only=True),
    ),
    "hometown": Rule(
        [[I, ADV, word("grew"), word("up"), _VERB_IN], [I, ADV, word("come"), word("from")]],
        _read_hometown,
    ),
    "work": Rule(
        [[_SUBJECT, ADV, word("work", "working"), word("at", "for", "as")],
         [I, ADV, word("got", "landed", "started"), word("a", "new", "my"), {"OP": "?"},
          word("job"), word("at", "with")]],
        _work,
        reads_negation=True,
    ),
    "left_job": Rule(
        [[I, ADV, word("quit", "left"), word("my"), word("job"), word("at", "with")]],
        _left_job,
    ),
    "turned": Rule([[I, ADV, word("turned")]], _turned),
    "named": Rule(
        [[MY, _KIND_WORD, {"ORTH": ",", "OP": "?"}, *[word(*said) for said in form]]
         for form in _CALLED_FORMS],
        _my_named,
    ),
    "relation": Rule(
        [[MY, word(*lex.RELATIONS_SINGLE, *lex.RELATIONS_MANY, *lex.PETS)]], _my_relation
    ),
    "have": Rule([[I_OR_WE, ADV, word("have", "'ve", "has", "got")]], _have),
}
AM_PATTERN = [I, BE, ADV]
AM_READER = _am_reader
