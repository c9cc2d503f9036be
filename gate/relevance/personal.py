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

WH_WORDS = word_set("what which where when who whom whose how why whats wat wut wats")
# "How many pages have I read" asks about the user; "how do I" starts a how-to.
HOWTO_AUX = word_set("do can should could would might may")
# A bare question word before "do I" asks how to go on ("what do I do now?", "where do we
# start?"); a thing named between ("what bike do I ride?") or a habit ("where do I usually
# go?") asks about the user.
BARE_ASKING = word_set("what where when who which")
ANYONE = word_set("you one")
HABITS = word_set("usually normally typically always often still currently ever")
PERSONAL_AUX = word_set("did do does have had has was were am")
SUBJECTS = word_set("i we")
GIVING = word_set("gave sent told bought recommended lent showed taught gifted made got")
OBJECTS = word_set("me us")
# What follows "I" in a question that asks advice, a wish or the model's view rather than
# about the user's doings: "what should I", "which do I need", "what I want".
NOT_OWN_DOING = word_set(
    """should can could would might may will shall must need needs want wish hope think feel
    guess wonder 'd 'll ought to be am 'm"""
)
MODALS = word_set("should can could would might may will shall must 'd 'll")
# What opens a thing's name, not a person's: "how does the ...", "how do these ...".
THINGS_NAMED = word_set("the a an it this that these those")
# "Do I have to pay it?", "do we need to ...": an obligation asked of, as a modal is.
OBLIGING = word_set("have need got")
PAST_AUX = word_set("did had")
OPENING_AUX = word_set("did do have had was were am")
# "Why do we see lightning first?", "why am I always tired?": the present asks why things
# are as they are, not what the user did ("why did I cancel ...?").
PRESENT_AUX = word_set("do does am")
EXPLAINED = PRESENT_AUX | word_set("is are")
# Words that open the asking clause after a comma: a question word or an auxiliary.
CLAUSE_OPENERS = WH_WORDS | word_set(
    "is are was were do does did can could should would will any tips ideas suggestions")
# Verbs whose object is someone asked or made to do something ("recipes want me to"):
# that "me" is anyone reading them.
CAUSING = word_set("want wants need needs expect expects ask asks make makes let lets")
# "Did we ...?" asks about the user and someone; "Do we ...?" is as often people at large.
WE_OPENING_AUX = word_set("did had were was")
POSSESSIVES = word_set("my our")
SECOND_PERSON = word_set("you your yours yourself")
FIRST_PERSON_REACH = 4
SITUATED_AFTER_I = word_set("'m am 've was 'll will 'd had")
SITUATED_AFTER_WE = word_set("'re are 've were 'll")
TIME_ANCHORS = word_set(
    """tonight today tomorrow lately recently nowadays currently again soon anymore still
    yesterday"""
)
AHEAD = word_set("tonight tomorrow soon")
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
# What a question weighs for the user rather than a thing they have ("what are my
# options?"): the question's own terms, not something memory holds.
DECISION_SPACE = word_set("options choices chances odds expectations")
ABSTRACT_OWN = DECISION_SPACE | word_set(
    """skills skill productivity time focus motivation posture mindset confidence habits
    thinking own best first"""
)
# What "our" names when it speaks for everyone ("our solar system", "our brains"): the
# world's, not the user's household.
HUMANKIND_OWN = word_set(
    """planet world solar galaxy universe species society civilization ancestors brain
    brains body bodies"""
)
TASK_OPENERS = word_set(
    """write implement develop explain describe compose draft solve translate summarise
    summarize list create design generate calculate convert rewrite proofread outline
    structure use imagine pretend suppose assume given compare discuss analyze analyse
    evaluate debug refactor define plan organise organize"""
)
TASK_PAIRS = frozenset(
    [("what", "if"), ("as", "a"), ("as", "an"), ("if", "you"), ("in", "a"), ("why", "might"),
     ("how", "might")]
)
TASK_PHRASES = (("explain", "your", "answer"), ("try", "to", "explain"), ("step", "-", "by"),
                ("step", "by", "step"))
# Phrasal verbs that ask for a piece of work as a task opener does ("Come up with a
# name for ...", "can you come up with a slogan").
WORK_PHRASES = (("come", "up", "with"),)
HELP_TASKS = word_set("write draft create compose prepare plan understand")
# "Tell me a joke about ...", "give me a riddle": a piece of writing asked for.
TELLING = word_set("tell give")
PIECES = word_set("joke jokes story stories riddle riddles poem poems pun puns limerick haiku")
PIECE_REACH = 4  # words from the opening verb to the piece it asks for
_TASK_PHRASE_STARTS: dict[str, list[tuple[str, ...]]] = {}
for _phrase in TASK_PHRASES:
    _TASK_PHRASE_STARTS.setdefault(_phrase[0], []).append(_phrase)


# Role-play and persona set-ups: the user casts the model (and often themselves) in a
# scene; the "I" and "my" that follow belong to the scene, not to the user's life.
ACTING = word_set("roleplay role-play impersonate portray cosplay")
SUPPOSING = word_set("pretend imagine")
CAST_PEOPLE = word_set("you i we you're i'm we're that")
ACTING_VERBS = word_set("act behave respond reply answer speak talk write pose play")
CASTING_VERBS = word_set("play take assume adopt stay keep")
CASTS = word_set("role roles persona character part")
SCENE_OPENERS = (("from", "now", "on"), ("for", "the", "rest", "of"), ("in", "the", "following"),
                 ("in", "all", "the", "following"), ("for", "all", "the", "following"))
ARTICLES = word_set("a an the my")
# "Explain it like I'm five": the user as a comparison, not as themselves.
LIKENING = word_set("like as though")
# Words by which a request makes the user's own circumstances its condition.
CONDITIONING = word_set("given for with considering despite around within under about")
# Words after which a subject starts a clause inside the question, not its own subject.
SUBORDINATING = LIKENING | WH_WORDS | word_set(
    "if when whenever while because unless before after until though although whereas whether")
# Words that set a thing against another ("compare to what I paid", "more than what we
# spent"), and past states of mind, which are no doings ("than what I expected").
COMPARING = word_set("to than against")
MINDED = word_set("thought expected imagined hoped wanted wished assumed guessed feared")
# What opens a clause of time, condition or concession inside a question.
CLAUSE_CONJUNCTIONS = word_set(
    "if whenever while because unless before after until till though although whereas")
# Words that cannot be the verb after a subject: "i before e" is no doing of the user's.
NO_VERB = SUBORDINATING | CONDITIONING | ARTICLES | word_set("and or but of in on at to from by")
# "since I don't live there" gives a reason; "since I bought it" dates the user's own past.
SINCE = word_set("since once")
# Question words that open a question about a thing, not a clause of time or manner
# ("when I baked it, it collapsed").
ASKING_A_THING = word_set("what which who where whats wat wut")
# Verbs that ask for what was, or a figure of it: "tell me where I parked", "add up what
# I paid", "tally the miles we ran"; not for a new text about it ("write a poem about the
# day we met" is told what it needs as a rule).
REPORTING = word_set(
    "tell remind list find show name add sum count total tally figure work calculate compute")
QUANTITIES = word_set("much many long often")
HAPPENED_AUX = word_set("did has have had was were")
TALLY_REACH = 4  # words from "how many" to the auxiliary: "how many babies were born"
PAST_ASKED = word_set("did was were had")
PAST_REACH = 5  # words from the question word to the auxiliary: "what coffee to water ratio was"
THE_WORDS = word_set("the all every each")
AT_HAND = word_set("this these here above below attached pasted")
# Past forms that do not end in "-ed": "where I put the spare key", "what I paid for it".
IRREGULAR_PAST = GIVING | word_set(
    """paid put left met spent took said went saw ate read kept lost found chose wore began
    brought built caught came dug drew drank drove fell fed felt fought flew forgot froze
    grew hung heard hid held knew lent rode rang rose ran sold shook shot slept spoke stood
    stole stuck swam swung tore thought threw understood woke won wrote""")
# After "have" or "had": "the countries I've been to", "what the bike has cost me".
PERFECT_AUX = word_set("have 've has had")
PARTICIPLES = IRREGULAR_PAST | word_set(
    """been done seen eaten taken given gone written driven ridden flown grown known shown
    spoken stolen worn chosen forgotten frozen hidden broken fallen begun drunk swum sung
    run cost""")

REQUESTING = word_set("can could would will please give tell suggest recommend any")
VIEW_VERBS = word_set("think recommend suggest reckon advise believe feel say")
FIRST_SINGULAR = word_set("i me my mine myself")
VIEW_NOUNS = word_set("thoughts opinion opinions take verdict")
VIEW_ASKED_WORDS = 2  # "Thoughts?", "your take?", "any opinions?"

ASKING_FOR = word_set(
    "recommend recommendations suggest suggestions tips ideas advice recommendation suggestion"
)
# A choice asked for ("recommend a show", "ideas for a gift", "help me pick"): the user's
# tastes and circumstances decide it, where a fix or a how-to is the same for anyone.
# "for me", "recommend me ...": the user as the one a choice is for.
FOR_ME = word_set("for recommend suggest")
CHOOSING = word_set(
    "recommend recommendation recommendations suggest suggestion suggestions ideas pick choose"
)
# "What <thing> should I get", "any <things> I should learn": a thing chosen for the user.
CHOICE_OPENERS = word_set("what which any")
# "which one", "which of them": a pick among the options at hand, not a thing to choose.
AMONG_AT_HAND = word_set("one ones of")
# What to do, say, know or look for is asked as advice, whoever asks: "what should I
# expect?", "what should I say to her?", "what could I use instead?".
ADVISING_VERBS = word_set(
    "do be say tell ask know expect mean call write think consider look avoid use")
MAX_THING_WORDS = 3
# A measure is worked out, not chosen to taste: "what temperature should I bake it at".
MEASURES = word_set(
    """time temperature size age amount number percentage speed length distance weight
    height width depth level setting angle ratio dose dosage pressure voltage""")
# "What's a good way to ...", "What is the best way to ...": advice anyone could ask; so
# is any superlative way ("the easiest way to ...").
ADVICE_WAYS = (("good", "way"), ("best", "way"), ("how", "to"))
WAY_OPENERS = ARTICLES | word_set("some any other")
DEMONSTRATIVES = word_set("that those")
RELATIVES = word_set("where who which when that")
# Words that cannot be the thing a demonstrative points at, nor part of its name.
NOT_A_THING = RELATIVES | SECOND_PERSON | word_set(
    """i me my we us our he she it they them his her its their this these those the a an
    what why how whose is was are were be been am 's 're do does did have has had can
    could would will should shall must may might to of so if as not n't something anything
    everything nothing someone anyone everyone somebody anybody everybody nobody one""")
POINTING_REACH = 4  # words from the thing to the user who tells of it
# What a question asks when it asks what went wrong.
DIAGNOSED = word_set("wrong mistake mistakes mess messed screw screwed")
ORDER_WORDS = word_set("first last earlier later before after between recently sooner "
                       "latest earliest")
# What sets a clause apart inside a sentence.
CLAUSE_MARKS = frozenset([",", "-", "–", "—"])
ACTED_ON = word_set("it them one him her")
ASKING_AUX = PERSONAL_AUX | MODALS | EXPLAINED
# Words by which a clause points back at what was just told ("..., when was it?", "of
# the flats I saw, which was cheapest?").
REFERRING = word_set("it its that this they them those he she him her there then which")
STATED_ENDS = frozenset([".", "!"])
COPULAS = word_set("was were am")
# "Should I ...", "am I ...", "is that ...": a clause asking a decision or a state.
STATE_OR_DECISION = MODALS | word_set("am is are")
SUBJECT_PRONOUNS = word_set("i we it that this you he she they")
# What closes one of the alternatives a question sets against each other.
BREAKS = frozenset([",", ":", ";", "-", "–", "—", "?", "!", ".", "(", ")"])


@dataclass
class Personal:
    own_past: str | None = None  # the words that showed it
    situated: str | None = None
    # A recommendation asked for the user ("resources where I can learn ..."): their
    # preferences may matter, though the request names nothing of their life.
    for_the_user: str | None = None
    # A choice asked with no one named it is for ("recommend a podcast for the commute?",
    # "what should I read next?"): the asker's tastes decide it, if the message tells
    # nothing else that would.
    left_to_taste: str | None = None
    task: bool = False
    role_play: bool = False  # a scene or persona set up (a task whatever it says of "me")
    # A question that speaks of the user as themselves ("... my sister's flight?", "how
    # much did I spend ...?"), not in a comparison, a supposition or a request for advice.
    asks_about_user: str | None = None
    # A thing pointed at as one the user spoke of ("that app I use", "those boots my
    # sister lent me"): a lookup in memory, however it is phrased.
    points_back: str | None = None
    # A question about the world (no person in it: "what year did the Wall fall?"), and
    # whether any question or request speaks to or of the user: a situation told beside a
    # question about the world is background to it.
    world_question: bool = False
    user_question: bool = False
    advice: bool = False  # a how-to or best-way frame ("How do I ...", "the best way to")
    # A choice or the model's view asked for the user ("recommend a show for me", "do you
    # think it's my living room?"), not a fix or a how-to anyone would be given.
    chooses: bool = False
    # A why-question about how things are ("Why do I always feel sleepy after lunch?", "why
    # is my grocery bill higher than last year?"): it asks an explanation, not a memory.
    explains: bool = False
    # The things a question sets against each other ("..., the standing desk or the
    # dishwasher leak?", "between the christening and the marathon"), each as its words.
    alternatives: tuple[tuple[str, ...], ...] = ()
    # The question asks in time ("which came first", "before or after"): alternatives
    # are events lived, where "which is heavier" compares things anyone knows.
    in_time: bool = False
    # A time ahead is named ("this weekend", "tomorrow"): the situation is a plan of the
    # user's, which their ways shape, not a problem with a fix anyone gets.
    planned: bool = False
    # A count or a length of what happened ("how many times has the basement flooded",
    # "how long did the passport renewal take"): the words that ask it.
    tallied: str | None = None
    # A question after what happened to a thing or what it was ("what was the book club
    # pick for November?", "did the roof leak happen before ...?"): the words that ask it.
    happened: str | None = None


def read_sentence(words: Sequence[str], signals: Personal, first_sentence: bool) -> None:
    """Update `signals` from one sentence's lower-cased tokens."""
    if not words:
        return
    opening = [w for w in words if w.isalpha()][:4]
    cast = role_play(words)
    if cast or _is_task(words, opening if first_sentence else (), cast=False):
        signals.task = True
    if cast:
        signals.role_play = True
    told = not first_sentence  # the user has told something before this sentence
    if opening and _advice(words, opening, told):
        signals.advice = True
    if not CHOOSING.isdisjoint(words) or _asks_model_view(words):
        signals.chooses = True
    if len(opening) > 1 and opening[0] == "why" and opening[1] in EXPLAINED:
        signals.explains = True
    if _how_things_work([w for w in _question_clause(words) if w.isalpha()][:3]):
        signals.explains = True
    if _diagnosis(words, told):
        signals.explains = True
    elif signals.own_past is None:
        signals.own_past = _own_past(words, opening, told)
    if signals.situated is None:
        signals.situated = _situated(words, opening)
    signals.planned = signals.planned or _time_ahead(words)
    signals.tallied = signals.tallied or _tallied(words)
    if signals.points_back is None:
        signals.points_back = _points_back(words)
    asks = _asks(words, opening)
    if asks and signals.happened is None:
        signals.happened = _happened([w for w in _question_clause(words) if w.isalpha()])
    if asks and not signals.alternatives:
        signals.alternatives = _alternatives(words)
    # "What came last: the tires or the roof?" asks in time across its colon.
    signals.in_time = signals.in_time or (asks and not ORDER_WORDS.isdisjoint(words))
    if asks and signals.asks_about_user is None:
        part = _asking_part(words)
        # A clause asked after a statement follows something told, as a later sentence does.
        signals.asks_about_user = _speaks_of_user(part, told or part is not words)
    _weigh_question(words, opening, asks, signals)
    if signals.for_the_user is None:
        signals.for_the_user = _thing_chosen(words)
        signals.chooses = signals.chooses or signals.for_the_user is not None
    if signals.left_to_taste is None:
        signals.left_to_taste = _left_to_taste(words)
    if signals.for_the_user is None and not ASKING_FOR.isdisjoint(words):
        # The user as the one it is for ("where I can learn", "for my garden", "for me"),
        # not merely as the one given it ("give me ten ideas").
        beneficiary = next(
            (w for i, w in enumerate(words)
             if w in ("i", "my") or (w == "me" and i > 0 and words[i - 1] in FOR_ME)),
            None,
        )
        if beneficiary is not None:
            signals.for_the_user = f"{next(w for w in words if w in ASKING_FOR)} ... {beneficiary}"


def _thing_chosen(words: Sequence[str]) -> str | None:
    """A thing the user is to choose, asked for them: "what office chair should I get",
    "any pieces I could learn next", "which tent should we take": their tastes and
    circumstances decide it, as in a request for a recommendation."""
    for i, word in enumerate(words):
        if word not in CHOICE_OPENERS:
            continue
        for at in range(i + 2, min(i + 2 + MAX_THING_WORDS, len(words) - 2)):
            pair = (words[at], words[at + 1])
            # "what chair should I get", or a relative clause: "any pieces I should learn"
            if ((pair[0] in MODALS and pair[1] in SUBJECTS and words[at + 2].isalpha())
                    or (pair[0] in SUBJECTS and pair[1] in MODALS)):
                thing = words[i + 1:at]
                # "what questions should I ask": words to say, not a thing to choose
                if all(w.isalpha() and w not in NOT_A_THING and w not in MEASURES
                       and w not in TASK_OBJECTS for w in thing):
                    return f"{word} {' '.join(thing)} {' '.join(pair)}"
                break
    return None


def _left_to_taste(words: Sequence[str]) -> str | None:
    """A choice asked without naming what decides it: a recommendation asked for ("what
    dessert would you suggest?", "ideas?"), or a thing to pick asked as the object of a
    verb of its own ("what should we put on", "what could I grow this spring?"). Not a pick
    among options at hand ("which would you pick?"), nor what to do, say or know, which is
    advice anyone gets ("what should I expect?")."""
    for i, word in enumerate(words):
        at_hand = word == "which" and i + 1 < len(words) and (
            words[i + 1] in MODALS or words[i + 1] in AMONG_AT_HAND)
        if at_hand or word in ("how", "way", "ways"):
            return None
    chosen = next((word for word in words if word in CHOOSING), None)
    if chosen is not None:
        return chosen
    for i, word in enumerate(words[:-3]):
        if (word in CHOICE_OPENERS and words[i + 1] in MODALS and words[i + 2] in SUBJECTS
                and words[i + 3].isalpha() and words[i + 3] not in NOT_A_THING
                and words[i + 3] not in ADVISING_VERBS):
            return " ".join(words[i:i + 4])
    return None


def _weigh_question(
    words: Sequence[str], opening: Sequence[str], asks: bool, signals: Personal
) -> None:
    """Whether a sentence's question is one for this user (the model's view or
    suggestions asked for them, or a question of their own life) or one anyone could ask
    (about the world, or advice as anyone in their place would want)."""
    asking_for = not ASKING_FOR.isdisjoint(words)
    requests = bool(opening) and opening[0] in REQUESTING
    if not (asks or requests or asking_for or (opening and _advice(words, opening))):
        return
    clause = _question_clause(words)
    # A request to the model on the user's behalf ("Can you help me write a letter to my
    # employer?") is theirs as much as a question about them.
    on_behalf = (requests or _addressed(clause)) and not FIRST_SINGULAR.isdisjoint(clause)
    conditioned = any(clause[i] in CONDITIONING and clause[i + 1] in POSSESSIVES
                      for i in range(len(clause) - 1))
    for_user = asking_for or on_behalf or conditioned or _asks_model_view(clause) or (
        asks and _speaks_of_user(clause) is not None)
    if for_user:
        signals.user_question = True
    else:
        signals.world_question = True


def _question_clause(words: Sequence[str]) -> Sequence[str]:
    """The clause that asks: from the last clause (after a comma or a dash) opening with a
    question word or an auxiliary to the end ("I'm a complete beginner, what's the
    difference ...?", "useEffect runs twice in my app - is that a bug?")."""
    start = 0
    for i in range(len(words) - 1):
        if words[i] in CLAUSE_MARKS and words[i + 1] in CLAUSE_OPENERS:
            start = i + 1
    return words[start:]


def _diagnosis(words: Sequence[str], told: bool) -> bool:
    """Whether a sentence asks what is wrong with what the user has just told ("... i
    water every evening, what am i doing wrong", "... one coat, no primer. Where did we
    go wrong?"): diagnosed from the telling, as a why-question is explained."""
    clause = _question_clause(words)
    return (bool(clause) and clause[0] in WH_WORDS and not DIAGNOSED.isdisjoint(clause)
            and (told or len(clause) < len(words)))


def _asking_part(words: Sequence[str]) -> Sequence[str]:
    """What a question asks about: the whole sentence, except where a statement is
    followed by a clause that asks for a judgment or tips on it ("useEffect runs twice in
    my app, is that a bug?", "my battery drains fast, tips?"): that clause alone. A
    question-word clause that points back asks about what the statement names ("my
    sister's wedding in Porto, when was it?"), unless it asks how to go on ("my landlord
    kept the deposit, what do I do now?"); one of its own asks its own ("I had a Civic
    that ate brake pads - what causes pad wear?")."""
    clause = _question_clause(words)
    if not clause or len(clause) == len(words):  # no statement before it
        return words
    if (clause[0] not in WH_WORDS or REFERRING.isdisjoint(clause)
            or _howto([w for w in clause if w.isalpha()][:4], told=True)):
        return clause
    return words


def _alternatives(words: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """The things a question sets against each other: around its last "or" ("which came
    first, X or Y?", "X or Y - which was earlier?", "A, B, or C?"), on either side of
    "before or after" ("was X before or after Y?"), or after "between" in a question of
    how long or how many ("how long between X and Y?"; "the difference between X and Y"
    compares meanings, not events), each up to the punctuation that closes it."""
    def phrase(part: Sequence[str]) -> tuple[str, ...]:
        return tuple(w for w in part if w.isalpha())

    def until_break(part: Sequence[str], breaks: frozenset[str] = BREAKS) -> list[str]:
        end = next((n for n, w in enumerate(part) if w in breaks), len(part))
        return list(part[:end])

    def back_to_break(part: Sequence[str], breaks: frozenset[str] = BREAKS) -> list[str]:
        return list(reversed(until_break(list(reversed(part)), breaks)))

    if "between" in words and "how" in words:
        rest = until_break(words[words.index("between") + 1:])
        if "and" in rest:
            cut = rest.index("and")
            first, second = phrase(rest[:cut]), phrase(rest[cut + 1:])
            if first and second:
                return first, second
    ors = [n for n, w in enumerate(words) if w == "or"]
    if not ors:
        return ()
    at = ors[-1]
    around = (words[at - 1] if at > 0 else "", words[at + 1] if at + 1 < len(words) else "")
    if around in (("before", "after"), ("after", "before")):
        first = phrase(back_to_break(words[:at - 1]))
        second = phrase(until_break(words[at + 2:]))
        return (first, second) if first and second else ()
    second = phrase(until_break(words[at + 1:]))
    if _clause_asked(second):
        return ()  # "is that normal, or should I worry?": a state or a decision asked
    if around[0] == ",":  # "A, B, or C": every item of the list
        items = _split_on(back_to_break(words[:at - 1], BREAKS - {","}), ",")
        listed = [phrase(item) for item in items if item and item[0] not in WH_WORDS]
        groups = [g for g in listed if g]
        return (*groups, second) if groups and second else ()
    before = back_to_break(words[:at])
    first = phrase(before)
    if first and second and first[-1] in ACTED_ON and second[-1] in ACTED_ON:
        return ()  # "fix it or sell it?": two things to do with one thing, not two things
    if len(before) == at and words[0] not in ASKING_AUX and WH_WORDS.isdisjoint(words):
        return ()  # "Mac or Windows for a student?", "raise now or wait?": a choice weighed
    if _clause_asked(first):
        return ()
    return (first, second) if first and second else ()


def _clause_asked(words: Sequence[str]) -> bool:
    """Whether an alternative is a clause asked ("should I worry", "am I overthinking
    it", "is that a bad sign"), not a thing."""
    return (len(words) > 1 and words[0] in STATE_OR_DECISION
            and words[1] in SUBJECT_PRONOUNS)


def _split_on(words: Sequence[str], mark: str) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for word in words:
        if word == mark:
            parts.append([])
        else:
            parts[-1].append(word)
    return parts


def _addressed(words: Sequence[str]) -> bool:
    """'Can you ...', 'Could you ...', 'Would you ...': a request put to the model."""
    opening = [w for w in words if w.isalpha()][:2]
    return len(opening) == 2 and opening[0] in REQUESTING and opening[1] == "you"


def _asks_model_view(words: Sequence[str]) -> bool:
    """'What do you think?', 'Do you think it might be ...', 'would you recommend', and a
    view asked in a word after what was told ('... for our honeymoon. Thoughts?')."""
    spoken = [w for w in words if w.isalpha()]
    if (len(spoken) <= VIEW_ASKED_WORDS and not VIEW_NOUNS.isdisjoint(spoken)
            and words[-1] in ("?", "？")):
        return True
    return any(words[i] == "you" and words[i + 1] in VIEW_VERBS for i in range(len(words) - 1))


def role_play(words: Sequence[str]) -> bool:
    """Whether a sentence casts the model in a role or sets up a scene ("Pretend you are my
    grandmother", "Act as a job interviewer", "take on the role of a coach", "You are now
    a travel agent", "In all the following conversations, answer as Shakespeare")."""
    if not ACTING.isdisjoint(words):
        return True
    for i, word in enumerate(words[:-1]):
        if word in SUPPOSING and words[i + 1] in CAST_PEOPLE:
            return True
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        if word in ACTING_VERBS and following in ("as", "like") and i + 2 < len(words) and (
            words[i + 2] in ARTICLES or words[i + 2] == "if"
        ):
            return True
        if word in CASTS and any(w in CASTING_VERBS for w in words[max(0, i - 3) : i]):
            return True
    opening = [w for w in words if w.isalpha() or w in ("'re", "'m")][:4]
    if len(opening) >= 2 and opening[0] == "be" and opening[1] in ARTICLES:
        return True  # "Be a time traveller visiting me", "be my tutor"
    if len(opening) >= 3 and opening[0] == "you" and opening[1] in ("are", "'re") and (
        opening[2] in ARTICLES or (opening[2] == "now" and opening[3:4] and opening[3] in ARTICLES)
    ):
        return True
    return any(tuple(words[: len(scene)]) == scene for scene in SCENE_OPENERS)


def _is_task(words: Sequence[str], opening: Sequence[str], *, cast: bool | None = None) -> bool:
    """`cast`: whether the sentence is a role-play set-up, when already known."""
    if opening and _work_verb(opening):
        return True
    if role_play(words) if cast is None else cast:
        return True
    if len(opening) >= 2 and (opening[0], opening[1]) in TASK_PAIRS:
        return True
    if _asks_for_work(words):
        return True
    if opening and opening[0] in TELLING and not PIECES.isdisjoint(
            words[: words.index(opening[0]) + 1 + PIECE_REACH]):
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


def _asks_for_work(words: Sequence[str]) -> bool:
    """'Can you explain ...', 'could you please write ...': a piece of work asked of the
    model, in whichever sentence it comes."""
    opening = [w for w in words if w.isalpha()][:6]
    if len(opening) < 3 or opening[0] not in REQUESTING or opening[1] != "you":
        return False
    return _work_verb(opening[3:] if opening[2] == "please" else opening[2:])


def _work_verb(words: Sequence[str]) -> bool:
    """Whether `words` open on a verb that asks for a piece of work."""
    return bool(words) and (words[0] in TASK_OPENERS or any(
        tuple(words[: len(phrase)]) == phrase for phrase in WORK_PHRASES))


def _howto(opening: Sequence[str], told: bool = False) -> bool:
    """'How do I ...', 'How can we ...', 'How can you tell ...', 'What should I ...',
    'Where do I start?': advice anyone could ask."""
    if len(opening) < 3:
        return False
    if opening[0] == "how" and opening[1] in HOWTO_AUX and opening[2] in ANYONE:
        return True  # "How can you tell if an egg is off?": you as anyone
    advising = opening[0] == "what" and opening[1] in ("should", "can", "could")
    if opening[2] in POSSESSIVES:  # "What should my first month look like?": a plan
        return advising
    if opening[2] not in SUBJECTS:
        return False
    return _how_to(opening, 1, told) or advising


def _how_to(words: Sequence[str], at: int, told: bool = False) -> bool:
    """Whether the auxiliary at `at` opens a how-to with the subject after it: "how do I",
    "how can we", and after something told (earlier in the sentence, or `told`: in an
    earlier one) "what do I do", "where do we start"; on its own "where do I keep my
    sneakers?" asks about the user."""
    if at < 1 or at >= len(words):
        return False
    before, aux = words[at - 1], words[at]
    habit = at + 2 < len(words) and words[at + 2] in HABITS
    if before == "how":
        return aux in HOWTO_AUX and not habit
    return (before in BARE_ASKING and aux == "do" and at + 1 < len(words)
            and words[at + 1] in SUBJECTS and not habit and (told or at >= 2))


def _own_past(words: Sequence[str], opening: Sequence[str], told: bool = False) -> str | None:
    """What shows a question about the user's own doings, things and times: "How many
    bikes do I own?", "Who gave me the mixer?", "How long did it take me to ...?", "the
    total I spent on ...", "Did I ever ...?". Not advice ("How do I ...", "What should I
    ...") nor the model's opinion ("What do you think I should ...")."""
    if not opening or _howto(opening, told):
        return None
    # "When I was eight, I swallowed a cherry pit.": a question word opening a sentence
    # that states tells the user's past, it does not ask it.
    wh = opening[0] in WH_WORDS and words[-1] not in STATED_ENDS
    # "tell me where I parked", "add up what I paid for gas": a request for it
    # ("list what I missed in this proof" works on the text at hand).
    bidding = opening[0] in REPORTING and not _points_at_hand(words)
    addressed = False  # "you" came first: the question asks the model's view
    clause_opened = next(
        (at for at in range(1, len(words)) if words[at] in CLAUSE_CONJUNCTIONS), len(words))
    for i in range(len(words) - 1):
        pair = (words[i], words[i + 1])
        addressed = addressed or pair[0] in SECOND_PERSON
        if addressed:
            continue
        if pair[0] in MODALS and pair[1] in SUBJECTS:
            # "Which language should I learn if ... I have four hours a week?": what the
            # user should do is asked; what they say of themselves after is its premise.
            return None
        before = words[i - 1] if i > 0 else ""
        if not wh:
            if bidding and _done_by_user(words, i):
                return " ".join(pair)
            if bidding and _done_to_user(words, i + 1):
                return " ".join(pair)
            continue
        if _how_to(words, i):  # "... and how do we introduce her", "where do I start?"
            continue
        if before == "why" and pair[0] in PRESENT_AUX:  # a reason for how things are
            continue
        if pair[0] in PERSONAL_AUX and pair[1] in SUBJECTS and (
            i + 2 >= len(words) or words[i + 2] not in NOT_OWN_DOING
        ) and not (pair[0] in PRESENT_AUX and _obliged(words, i + 2)):
            return " ".join(pair)
        if pair[0] in GIVING and pair[1] in OBJECTS:
            return " ".join(pair)
        # "the total I spent", not "where I am", "when we cut them", "if I invest", "how
        # do we introduce her".
        asked_how = i > 1 and (
            _how_to(words, i - 1) or (words[i - 2] == "why" and before in PRESENT_AUX))
        # "How long before the swelling goes down and I look normal?": a subject in a
        # clause of time or condition is that clause's, not the one asked.
        in_clause = clause_opened < i
        if _set_against(words, i):
            return " ".join(pair)
        if (pair[0] in SUBJECTS and pair[1].isalpha() and pair[1] not in NOT_OWN_DOING
                and pair[1] not in NO_VERB and before not in NOT_OWN_DOING
                and before not in SUBORDINATING and not asked_how and not in_clause):
            return " ".join(pair)
        # "wat i named the bunny", "where I parked at the airport": the question word
        # opening the sentence asks of the user's past doing, its auxiliary left out.
        if i == 1 and words[0] in ASKING_A_THING and pair[0] in SUBJECTS and _past(pair[1]):
            return " ".join(pair)
        if pair[0] in PERSONAL_AUX and _first_person_after(words, i + 1):
            return f"{pair[0]} ... {_first_person_after(words, i + 1)}"
    if opening[0] in OPENING_AUX and len(opening) > 1 and opening[1] in SUBJECTS and (
        len(opening) < 3 or opening[2] not in NOT_OWN_DOING
    ) and (opening[1] == "i" or opening[0] in WE_OPENING_AUX) and not (
        opening[0] in PRESENT_AUX and _obliged(opening, 2)
    ) and not (told and opening[0] in COPULAS):
        # "... saw the northern lights only once. Were we just unlucky?" judges what was
        # told; "Was I at the dentist in March?" opening the message asks it.
        return " ".join(opening[:2])
    return None


# A lookup typed as into a search box is short ("truckee cabin wifi pw", "the guy i
# bought the canoe off"); a longer message without a mark tells or asks for work.
FRAGMENT_WORDS = 8
# Words that make a sentence state something rather than name a thing: a subject that
# opens it ("we went ..."), a verb of its own ("the car is ...", "my sister has ...").
STATING_OPENERS = word_set("i i'm im i've we we're you he she they it this there just")
STATING_VERBS = word_set("is are was were am 's 're 'm has have will 'll can")
# A word followed by one of these is a verb taking its object: "build a database of
# dishes", "sort these numbers" ask for work.
TAKEN_OBJECTS = word_set(
    "a an the this that these those some all every each any my your our his her their its "
    "me us him them it")
FRAGMENT_ENDS = (".", "!", "?", "？", ":", "…")


def looks_up(words: Sequence[str]) -> bool:
    """Whether a sentence (its lower-cased tokens) is a fragment that names what it asks
    for and no more ("gym locker code", "whisky i liked at the islay tasting"): chat types
    a question so, without its mark. Not one that states something of its own ("went
    hiking with jo", "my sister is visiting") nor one that asks for work."""
    if not words or words[-1] in FRAGMENT_ENDS:
        return False
    spoken = [w for w in words if w.isalpha() or "'" in w]
    if not 2 <= len(spoken) <= FRAGMENT_WORDS:
        return False
    opening = spoken[0]
    if (opening in STATING_OPENERS or opening in WH_WORDS or _past(opening)
            or opening.endswith("ing") or not STATING_VERBS.isdisjoint(spoken)
            or "please" in spoken  # "two coffees please" asks for a thing done
            or (len(spoken) > 1 and spoken[1] in TAKEN_OBJECTS)):
        return False
    # The model's view asked now ("kindle or paper, which do you prefer") names no thing;
    # "the podcast you recommended" names one by what was said.
    if any(
            word == "you" and (at + 1 == len(spoken) or not _past(spoken[at + 1]))
            for at, word in enumerate(spoken)):
        return False
    # After "my" a verb states what the thing did ("my cat threw up"), after a thing
    # named first it tells which one is meant ("the wine we liked").
    return opening not in POSSESSIVES or not any(_past(w) for w in spoken)


def _points_at_hand(words: Sequence[str]) -> bool:
    """Whether a word points at material at hand ("this proof", "the code below"), not at
    a time ("this year")."""
    return any(
        word in AT_HAND and (i + 1 == len(words) or (word, words[i + 1]) not in ANCHOR_PAIRS)
        for i, word in enumerate(words))


def _done_by_user(words: Sequence[str], at: int) -> bool:
    """Whether a subject at `at`, then a past verb, is a clause about what the user did
    that a request asks after: "where I parked", "how much we spent", "the places we
    visited"; not a clause of the request's own ("saying I quit", "if we moved")."""
    if at < 1 or at + 1 >= len(words) or words[at] not in SUBJECTS or not _done(words, at + 1):
        return False
    before = words[at - 1]
    return (before in ASKING_A_THING or before in QUANTITIES
            or (at >= 2 and (words[at - 2] in THE_WORDS or words[at - 2] in QUANTITIES)
                and before.isalpha() and before not in NOT_A_THING
                and before not in TASK_OBJECTS))


def _done_to_user(words: Sequence[str], at: int) -> bool:
    """Whether "me" or "us" at `at` closes a clause a request asks after, of what was done
    to the user: "add up what the bike has cost me", "list everything the vet gave us"."""
    if words[at] not in OBJECTS or at < 2:
        return False
    verb = at - 1
    done = _past(words[verb]) or (words[verb] in PARTICIPLES and words[verb - 1] in PERFECT_AUX)
    return done and not ASKING_A_THING.isdisjoint(words[max(0, at - DONE_TO_REACH) : verb])


# Words from the question word to the "me" of what was done to the user.
DONE_TO_REACH = 7


def _done(words: Sequence[str], at: int) -> bool:
    """Whether the words at `at` say a thing done: a past verb, or "have" and its
    participle ("I've traveled", "we had seen")."""
    if words[at] in PERFECT_AUX and at + 1 < len(words):
        return _past(words[at + 1]) or words[at + 1] in PARTICIPLES
    return _past(words[at])


def _past(word: str) -> bool:
    # "need", "feed", "succeed" end in "-ed" and are no past; "agreed", "freed" are.
    regular = word.endswith("ed") and len(word) > 3 and (
        not word.endswith("eed") or word in PAST_IN_EED)
    return regular or word in IRREGULAR_PAST


PAST_IN_EED = word_set("agreed disagreed freed guaranteed decreed refereed")


def _how_things_work(opening: Sequence[str]) -> bool:
    """'How does the internet get to my house?', 'how do these filters work?': how a thing
    works, whoever's it is (a person as the subject asks about them: "how does Gina ...")."""
    return (len(opening) == 3 and opening[0] == "how" and opening[1] in ("do", "does")
            and opening[2] in THINGS_NAMED)


def _set_against(words: Sequence[str], at: int) -> bool:
    """Whether a subject at `at` opens what the user did, set against the thing asked
    about ("how does that compare to what I paid last year?"): their past, asked as much
    as the thing. What they expected or thought is no doing."""
    return (at > 1 and at + 1 < len(words) and words[at] in SUBJECTS
            and words[at - 1] in ASKING_A_THING and words[at - 2] in COMPARING
            and _done(words, at + 1) and words[at + 1] not in MINDED)


def _obliged(words: Sequence[str], at: int) -> bool:
    """Whether the words at `at` say an obligation ("have to", "need to", "got to"): in
    the present a question of what anyone must do; in the past ("how long did I have to
    wait?") one of the user's doings."""
    return at + 1 < len(words) and words[at] in OBLIGING and words[at + 1] == "to"


def _first_person_after(words: Sequence[str], start: int) -> str | None:
    """A first-person object or possessive within a few words after `start` ("did it take
    me", "was my flight"), before any second person."""
    reach = words[start : start + FIRST_PERSON_REACH]
    for n, word in enumerate(reach):
        if word in SECOND_PERSON:
            return None
        if word in ("me", *POSSESSIVES):  # "us" is as often people at large ("make us cry")
            return None if n > 0 and reach[n - 1] in CAUSING else word
    return None


def _asks(words: Sequence[str], opening: Sequence[str]) -> bool:
    """A question, not a request for advice: it ends with a question mark or opens with a
    question word, and is no how-to or best-way frame."""
    last = next((w for w in reversed(words) if w.isalpha()), "")
    asks = (words[-1] in ("?", "？")) or (
        bool(opening) and opening[0] in WH_WORDS and words[-1] not in STATED_ENDS) or (
        last in ("when", "where", "who", "what", "which"))
    return asks and not _advice(words, opening)


def _speaks_of_user(words: Sequence[str], told: bool = False) -> str | None:
    """The first-person word by which a sentence speaks of the user as themselves: not
    likened ("like I'm five"), supposed ("if I invest"), in a clause of the question
    ("where I am"), nor the subject of a wish or an opinion asked ("should I", "do you
    think I"). How many or how much of something the user has, needs or did is theirs
    whatever the verb ("how many items do I need to return?")."""
    counting = any(words[i] == "how" and words[i + 1] in ("many", "much")
                   for i in range(len(words) - 1))
    for i, word in enumerate(words):
        before = words[i - 1] if i > 0 else ""
        if before in SUBORDINATING or before in ("suppose", "imagine", "pretend"):
            continue
        following = words[i + 1] if i + 1 < len(words) else ""
        if before in SINCE and not _past(following):
            continue
        if word in SECOND_PERSON:
            return None
        # "We" and "us" are as often people at large ("why do onions make us cry?", "do
        # we have a duty to ...?"); "our" with a thing is mostly the user's household.
        if word in ("my", "our") and (_everyones(words, i) or following in DECISION_SPACE):
            continue
        if word == "i" and _how_to(words, i - 1, told):
            continue  # "... and how do I structure it?": a how-to inside the question
        if word in ("my", "our") or (word == "me" and before not in CAUSING):
            return word
        if word == "i" and (
            (counting and following not in MODALS and before not in MODALS)
            or (following not in NOT_OWN_DOING and before not in NOT_OWN_DOING
                and not (before not in PAST_AUX and _obliged(words, i + 1)))
        ):
            return word
    return None


def _points_back(words: Sequence[str]) -> str | None:
    """"that <thing> (where|who)? I/we/my ...": a demonstrative whose thing the user then
    tells of. Not "that" opening a clause ("so that I", "is that what I")."""
    for i in range(len(words) - 2):
        thing = words[i + 1]
        if words[i] not in DEMONSTRATIVES or not thing.isalpha() or thing in NOT_A_THING:
            continue
        for j in range(i + 2, min(len(words), i + 2 + POINTING_REACH)):
            if words[j] in ("i", "we", "my"):
                return " ".join(words[i : j + 1])
            if words[j] in NOT_A_THING - RELATIVES:
                break
    return None


def _everyones(words: Sequence[str], i: int) -> bool:
    """Whether the possessive at `i` speaks for everyone ("our brains", "our planet")."""
    return words[i] == "our" and (
        (i + 1 < len(words) and words[i + 1] in HUMANKIND_OWN)
        or list(words[:3]) == ["why", "do", "we"])  # "why do we forget our dreams?"


def _advice(words: Sequence[str], opening: Sequence[str], told: bool = False) -> bool:
    """How-to and best-way frames: what the user says of themselves there ("if I've never
    run before") shapes the advice, it does not point at memory."""
    if _howto(opening, told):
        return True
    # "In Italian, how do I say ...?": the how-to opens the clause that asks.
    clause = _question_clause(words)
    if len(clause) < len(words) and _howto([w for w in clause if w.isalpha()][:4]):
        return True
    return any((words[i], words[i + 1]) in ADVICE_WAYS or _way_to(words, i)
               for i in range(len(words) - 1))


def _way_to(words: Sequence[str], i: int) -> bool:
    """"the quickest way to", "a polite way to", "some ways to": a method asked for."""
    return (words[i + 1] in ("way", "ways") and i + 2 < len(words) and words[i + 2] == "to"
            and (words[i].endswith("est") or words[i] in WAY_OPENERS
                 or (i > 0 and words[i - 1] in WAY_OPENERS)))


def _tallied(words: Sequence[str]) -> str | None:
    """"how many / how long ..." then a past or perfect auxiliary before the clause ends:
    a count or a length of what happened."""
    for i in range(len(words) - 2):
        if words[i] != "how" or words[i + 1] not in QUANTITIES:
            continue
        for j in range(i + 2, min(len(words), i + 2 + TALLY_REACH)):
            if words[j] in BREAKS:
                break
            if words[j] in HAPPENED_AUX:
                return " ".join(words[i:j + 1])
    return None


def _happened(clause: Sequence[str]) -> str | None:
    """A question clause (its words) asked in the past: a question word, then within
    PAST_REACH words a past auxiliary or "happened" ("what coffee-to-water ratio was it",
    "why was the dishwasher ..."); or the past auxiliary opening it ("did the roof leak
    happen ...", "was the vet bill ..."). A word may come first ("btw what ...")."""
    for start in range(min(2, len(clause))):
        if clause[start] in PAST_ASKED:
            return clause[start]
        if clause[start] not in WH_WORDS:
            continue
        for j in range(start + 1, min(len(clause), start + 1 + PAST_REACH)):
            if clause[j] in PAST_ASKED or clause[j] == "happened":
                return " ".join(clause[start:j + 1])
        return None
    return None


def _time_ahead(words: Sequence[str]) -> bool:
    return not AHEAD.isdisjoint(words) or any(
        (words[i], words[i + 1]) in ANCHOR_PAIRS and words[i] in ("this", "next")
        for i in range(len(words) - 1))


def _situated(words: Sequence[str], opening: Sequence[str]) -> str | None:
    advice = bool(opening) and _advice(words, opening)
    first_person = False
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        before = words[i - 1] if i > 0 else ""
        # "like I'm five", "if I had", "where I am": the user as a comparison, a supposition
        # or a clause inside the question, not their situation.
        aside = before in LIKENING or before in WH_WORDS or before == "if"
        if word == "i" and following in SITUATED_AFTER_I and not advice and not aside:
            return f"{word} {following}"
        if word == "we" and following in SITUATED_AFTER_WE and not advice and not aside:
            return f"{word} {following}"
        own = following.isalpha() and following not in ABSTRACT_OWN | TASK_OBJECTS
        # In a how-to or best-way frame ("How do I negotiate my salary?") "my" names what
        # the advice is about, as anyone's would; unless it sets the advice a condition
        # of the user's own ("What should I cook, given my diet?").
        if (word in ("my", "our") and own and not _everyones(words, i)
                and (not advice or before in CONDITIONING)):
            return f"{word} {following}"
        # "i before e" speaks of no one
        first_person = first_person or (word in ("i", "me", "my", "we", "our", "us")
                                        and not (word == "i" and following in NO_VERB))
    # A choice asked for a time of the user's ("any ideas for a date night this weekend?")
    # is their plan as much as one said with "I".
    if first_person or not CHOOSING.isdisjoint(words):
        for i, word in enumerate(words):
            if word in TIME_ANCHORS:
                return word
            if i + 1 < len(words) and (word, words[i + 1]) in ANCHOR_PAIRS:
                return f"{word} {words[i + 1]}"
    return None
