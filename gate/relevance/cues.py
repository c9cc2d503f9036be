"""The heuristic gate's vocabulary: spaCy token patterns for memory cues and word lists.

spaCy's blank English pipeline only tokenizes (no tagger or lemmatizer is installed
offline), so patterns match lower-cased surface forms and list the inflections they
accept. A pattern is written as a sequence of token specs: "a|b" matches either word,
a trailing "?" makes the token optional ("?" alone is the question mark itself), and
GAP allows up to four tokens of anything.
"""

from __future__ import annotations

from typing import Any

TokenSpec = str | dict[str, Any]
# Words after "what was that" that ask how something went, not for a thing told.
NOT_ASKED_BACK = ("like", "about", "for", "all", "in", "on", "to", "when", "because", "so")
GAP: dict[str, Any] = {"OP": "{0,4}"}

COPULA = "'s|’s|s|is|was"
SPEECH_PAST = (
    "said|mentioned|told|discussed|talked|asked|wrote|shared|gave|sent|spoke|suggested|"
    "recommended|showed|promised|agreed|decided|explained|covered"
)
SPEECH_ANY = f"{SPEECH_PAST}|say|mention|tell|discuss|talk|ask|write|suggest|recommend"
PERIODS = "week|weekend|month|year|night|evening|morning|summer|winter|spring|fall|autumn"
WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
# "may" is left out: lower-cased it is mostly the verb; the month is matched as "May".
MONTHS = "january|february|march|april|june|july|august|september|october|november|december"
SMALL_COUNTS = "a|an|few|couple|several|some|one|two|three|four|five|six|1|2|3|4|5|6"
TIME_UNITS = "minutes|hour|hours|day|days|night|nights|week|weeks|month|months|year|years|while"


def word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Objects of everyday tasks: "fix my code" asks for work on the text at hand, not memory.
TASK_OBJECTS = word_set(
    """code essay email e mail text grammar spelling punctuation answer answers question
    questions homework assignment resume résumé cv function method class variable loop regex
    query sql script program bug error errors output input test tests build sentence
    sentences paragraph paragraphs message messages letter draft story poem article post
    tweet blog bio paper thesis report document doc docs file files notes summary list table
    chart graph slides presentation spreadsheet formula translation writing wording words
    prompt reply response opinion mind point understanding knowledge bad god goodness gosh
    lord way turn"""
)
FIRST_PERSON = word_set("i me my mine myself we us our ours ourselves")
SECOND_PERSON = word_set("you your yours yourself")
INTERROGATIVES = word_set(
    """what whats who whom whose where when why how which do does did is are am was were can
    could would will should shall have has had wat wut wats"""
)
REQUEST_VERBS = word_set(
    """tell write help give suggest recommend plan make draft remind find list describe
    summarise summarize book buy pick choose create compose send show explain fix check
    rewrite translate organise organize prepare get compare calculate name brainstorm draw
    design let lets please"""
)
LEADING_FILLERS = word_set("hey hi hello ok okay so and now also oh well alright um")


def spec(token: TokenSpec) -> dict[str, Any]:
    """One spaCy token pattern from the compact notation described in the module doc."""
    if isinstance(token, dict):
        return token
    optional = token.endswith("?") and token != "?"
    words = (token[:-1] if optional else token).split("|")
    pattern: dict[str, Any] = {"LOWER": words[0]} if len(words) == 1 else {"LOWER": {"IN": words}}
    if optional:
        pattern["OP"] = "?"
    return pattern


def seq(*tokens: TokenSpec) -> list[dict[str, Any]]:
    return [spec(token) for token in tokens]


CUE_PATTERNS: dict[str, list[list[dict[str, Any]]]] = {
    "identity": [
        seq("what", f"{COPULA}?", "my", "name|job|occupation|profession|age|birthday|surname"),
        seq("who", "am", "i"),
        seq("where", "do|did", "i", "live|work|study|stay"),
        seq("know|remember|recall", "where", "i", "live|work|study|stay"),
        seq("where", "am", "i", "from"),
        seq("where", "do|did", "i", "come|grow", "from|up"),
        seq("how", "old", "am", "i"),
        seq("when", COPULA, "my", "birthday"),
        seq("what", "do", "i", "do", "for", "a?", "living|work"),
        seq("do|did", "you", "know|remember", "me"),
        seq("do|did", "you", "know|remember", "my", "name"),
        seq("know|remember", "who", "i", "am"),
        seq("what", "do", "you", "know|remember", "about", "me|myself"),
        seq("what", "do|did|should", "you", "call", "me"),
        seq("tell", "me", "about", "myself"),
    ],
    "transcript": [
        seq("what|which", "did", "i", "say|tell|write|type|ask|send"),
        seq("what", "was|were", "my", "exact|precise|actual?", "words|wording|phrasing"),
        seq("my", "exact|precise|actual|original|very", "words|wording|phrasing|message|question"),
        seq("quote", "me|back"),
        seq("repeat|recite|quote|paste", "me?", "back?", "exactly?", "what", "i|we", SPEECH_PAST),
        seq("how", "did", "i", "phrase|put|word", "it|that"),
    ],
    # "word for word" alone is often a translation style; with "I said" it is recall.
    "verbatim": [seq("word", "-?", "for", "-?", "word"), seq("verbatim"), seq("exact", "words")],
    "my_speech": [
        seq("i|we", "said|wrote|told|typed|asked|sent|mentioned|put|gave"),
        seq("my", "words|message|messages|question|wording|phrasing"),
    ],
    "episode": [
        seq(
            "we",
            "have|'ve|had|'d|were|are|'re?",
            "discussed|talked|spoke|chatted|discussing|talking|chatting|speaking",
        ),
        seq("you|i", "and", "i|you", "discussed|talked|spoke|chatted"),
        seq(
            "our",
            "last|previous|earlier|recent|past|other|first|old?",
            "conversation|conversations|chat|chats|discussion|discussions|talk|session|sessions",
        ),
        seq("remember", "when"),
        seq("do|did|can|could|would", "n't|not?", "you", "remember|recall"),
        seq("you", "remember|recall", "when|what|how|where|who|which|my|me|our|us|?"),
        seq("remember|recall", "what|how|where|who", "i|we|you"),
        seq(SPEECH_ANY, GAP, "earlier|previously"),
        seq(SPEECH_PAST, GAP, "before"),
    ],
    # A time pointed back at: of the conversation where it asks or speaks with "you" or
    # "we" ("last time you suggested ..."), of the user's own day elsewhere.
    "back_then": [
        seq("last", "time"),
        seq("the", "other", "day|night|week|evening|morning|afternoon"),
        seq("earlier|previously", ",|today|tonight|this|in|on|we|you|i|when"),
    ],
    # Dates are memory cues only in a message about the user or the assistant: "what did
    # I do in March" is, "what's the weather like in May" is not.
    "calendar": [
        seq("last", f"{PERIODS}|{WEEKDAYS}|{MONTHS}"),
        seq("this", "past", "week|weekend|month|year"),
        seq("yesterday"),
        seq("in|on|since|last|during", f"{MONTHS}|{WEEKDAYS}"),
        seq("in|on|since|last|during", {"ORTH": "May"}),
        seq(SMALL_COUNTS, TIME_UNITS, "ago"),
        seq("a", "while", "back"),
    ],
    "recall": [
        seq("remind", "me", "what|of|about|who|where|when|how|which|why|whether|again"),
        # "What's the band called again?": asked to be reminded of a particular.
        seq("what|whats|where|wheres|who|whos|when|which", GAP, "again", "?"),
        # "What was that bakery name with the kettle in it?": a thing asked back, as told
        # before ("what was that like?" asks how it went).
        seq("what|who|where|which", "was|were", "that|those",
            {"IS_ALPHA": True, "LOWER": {"NOT_IN": list(NOT_ASKED_BACK)}}),
        seq("do|did|can|could|would", "you", "recall"),
        # "How do I recall an email?" asks how to do a thing: "I" recalls only rightly.
        seq("do|did", "i", "recall", "correctly|right|rightly"),
        seq("recall", "what|when|where|who|how|if|whether|my|our|me|us"),
        seq(
            "did|have|had",
            "i|we",
            "ever?",
            "mention|mentioned|tell|told|say|said|share|shared|talk|talked|discuss|discussed",
        ),
        seq("i", "already|once|previously?", "told|mentioned|showed|gave|sent", "you"),
        seq("i", "mentioned|said", "to", "you"),
        # The user pointing back at what they said: "As I mentioned, ...", "I mentioned
        # that I ...", "I told you before".
        seq("as", "i", "mentioned|said|told|explained|wrote"),
        seq("i", "mentioned|said", "that|earlier|before|previously|once"),
        # What the assistant said: "what did you tell me about ...", "the book you
        # recommended", "you mentioned earlier".
        seq(
            "did|have|had",
            "you",
            "say|tell|mention|recommend|suggest|give|share|explain|show|list|call|name|offer|"
            "point|send",
        ),
        # "that budgeting method you explained", "the podcast you pointed me to"
        seq("that|the|those|this", GAP, "you",
            "explained|described|recommended|suggested|mentioned|showed|gave|sent|shared|"
            "taught|pointed|told"),
        seq("you", "told|mentioned|recommended|suggested|gave|showed|shared", "me|us"),
        # "you mentioned a stretch for my lower back, which one was it"
        seq("you", "mentioned|recommended|suggested|said",
            "a|an|the|some|that|this|those|one|something"),
    ],
    "preference": [
        seq(
            "do|did",
            "n't?",
            "i",
            "usually|normally|typically|always|really?",
            "like|prefer|love|hate|enjoy|dislike",
        ),
        seq("do|did", "i", "usually|normally|typically|always"),
        seq("my", "favourite|favorite|fave|preferred|usual"),
        seq("am|are", "i|we", "allergic|intolerant|vegan|vegetarian|diabetic|married|lactose"),
        seq(
            "what|which|where|when|how",
            "did|have",
            "we|i",
            "decide|decided|agree|agreed|"
            "choose|chosen|settle|settled|pick|picked|plan|planned|conclude",
        ),
        seq("did|have", "we", "decide|decided|agree|agreed|choose|chose|settle|settled|pick"),
    ],
    # Makes a recall request about preferences ("remind me what wine I prefer") pinned.
    "preference_word": [
        seq(
            "favourite|favorite|fave|prefer|prefers|preferred|preference|preferences|allergic|"
            "allergy|allergies|diet|dietary|vegan|vegetarian|hate|dislike"
        )
    ],
}


# Function words: too frequent to tell which sentences are worth matching.
COMMON_WORDS = (
    FIRST_PERSON
    | SECOND_PERSON
    | INTERROGATIVES
    | word_set("the a an in on of to for and it that this not n't 's ’s s since during about from")
)


def _required_words(token: dict[str, Any]) -> frozenset[str]:
    """The words a token spec accepts, or nothing when it is optional or not a word."""
    if token.get("OP") not in (None, "+"):
        return frozenset()
    value = token.get("LOWER", token.get("ORTH"))
    if isinstance(value, str):
        return frozenset({value.lower()})
    if isinstance(value, dict) and "IN" in value:
        return frozenset(word.lower() for word in value["IN"])
    return frozenset()  # any word but some ("NOT_IN") is no anchor


def anchor_words(pattern: list[dict[str, Any]]) -> frozenset[str]:
    """The words of the pattern's least common required token: a sentence without any of
    them cannot match the pattern."""
    candidates = [words for words in map(_required_words, pattern) if words]
    return min(candidates, key=lambda words: (len(words & COMMON_WORDS), len(words)))


# spaCy's Matcher costs (patterns x tokens); it only runs on sentences holding an anchor.
ANCHOR_WORDS = frozenset().union(
    *(anchor_words(pattern) for patterns in CUE_PATTERNS.values() for pattern in patterns)
)
