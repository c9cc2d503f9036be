"""Excerpts of long messages and the words an agent's memory says throughout."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemoproxy.gate.excerpt import ELLIPSIS, FIND_FROM, Query, excerpt, sentence_spans, term
from mnemoproxy.memory.search.common_terms import common_words, names_among, without

LONG = (
    "Thanks for asking! We spent most of the weekend at my parents' place. "
    "On Saturday I finally took the kids to the park by the river. "
    "They fed the ducks and we stayed until sunset. "
    "Sunday was quiet, mostly laundry and a long nap. "
    "Next week I have a dentist appointment, which I am dreading."
)


def test_a_short_message_stays_whole() -> None:
    query = Query.of("When did I go to the park?", [LONG])
    assert excerpt("I went to the park.", query, 50) == "I went to the park."


def test_a_long_message_gives_the_sentences_about_the_question() -> None:
    query = Query.of("When did I take the kids to the park?", [LONG, "an unrelated text"])
    cut = excerpt(LONG, query, 30)
    assert "took the kids to the park" in cut
    assert "dentist" not in cut
    assert cut.startswith(ELLIPSIS) and cut.endswith(ELLIPSIS)
    assert len(cut) <= 30 * 4 + 10


def test_a_message_sharing_no_word_with_the_question_keeps_its_opening() -> None:
    query = Query.of("What is my favourite colour?", [LONG])
    cut = excerpt(LONG, query, 20)
    assert cut.startswith("Thanks for asking!") and cut.endswith(ELLIPSIS)


def test_a_word_every_candidate_holds_weighs_least() -> None:
    candidates = [f"Caroline: message {n} about nothing" for n in range(9)]
    candidates.append("Caroline: we went camping by the lake")
    query = Query.of("When did Caroline go camping?", candidates)
    assert query.weights[term("camping")] > query.weights[term("caroline")]


def test_words_most_of_the_memory_says_are_common() -> None:
    messages = [f"Melanie: day {n} was fine, thanks Caroline" for n in range(40)]
    messages += [f"Caroline: I painted a sunset number {n}" for n in range(6)]
    common = common_words(messages)
    assert {"melanie", "caroline"} <= common
    assert "sunset" not in common and "painted" not in common
    assert common_words(messages[:5]) == frozenset()  # too few to tell


def test_a_question_loses_its_common_words_but_never_all_of_them() -> None:
    common = frozenset({"melanie", "caroline"})
    assert without("When did Melanie's kids go to the park?", common) == (
        "When did kids go to the park?"
    )
    assert without("Caroline?", common) == "Caroline?"


# Words and characters where finding terms by str.find could part ways with the pattern:
# case, a dotted capital I (lower-cases to two characters), final and capital sigma,
# the long s and the Kelvin sign (which re's case-insensitive match takes as s and k),
# underscores and digits inside words, combining marks, and words a term merely starts.
TRICKY_WORDS = [
    "park", "Parks", "PARKING", "parked", "sparkle", "park_ranger", "park2", "İstanbul",
    "istanbul", "ΟΔΟΣ", "οδος", "οδοσ", "ſtation", "station", "Kelvin", "kelvin",
    "café", "cafe\u0301", "river", "Rivers", "rIvEr", "kids", "kid", "sunset", "dentist",
]
TRICKY_GAPS = [" ", ". ", "\n", "-", "'", "_", "", "!? ", "\u00a0", "…", "‹", "1"]


def pattern_occurrences(query: Query, text: str) -> list[tuple[int, str]]:
    """What Query finds, by its pattern alone (as for short texts)."""
    assert query.pattern is not None
    return [(m.start(), word_term) for m in query.pattern.finditer(text)
            if (word_term := term(m.group().lower())) in query.weights]


@given(st.lists(st.tuples(st.sampled_from(TRICKY_WORDS), st.sampled_from(TRICKY_GAPS)),
                min_size=1, max_size=60),
       st.lists(st.sampled_from(TRICKY_WORDS), min_size=1, max_size=4))
@settings(max_examples=400, deadline=None)
def test_long_texts_find_the_words_the_pattern_finds(words, asked) -> None:
    query = Query.of(" ".join(asked), [])
    text = "".join(word + gap for word, gap in words)
    long_text = text * (FIND_FROM // len(text) + 1)
    assert query.occurrences(long_text) == pattern_occurrences(query, long_text)


def test_a_long_message_is_excerpted_as_a_short_one_would_be() -> None:
    filler = "Nothing much happened on most days of that month at all. " * 60
    text = filler + LONG + " " + filler
    assert len(text) >= FIND_FROM
    query = Query.of("When did I take the kids to the park?", [text, "an unrelated text"])
    cut = excerpt(text, query, 30)
    assert "took the kids to the park" in cut
    spans = sentence_spans(text)
    assert query.sentence_scores(text, spans) == [
        sum(query.weights[t] for t in {t for at, t in pattern_occurrences(query, text)
                                       if start <= at < end})
        for start, end in spans]


def test_a_common_word_the_question_writes_as_a_name_is_a_name_asked_about() -> None:
    common = frozenset({"melanie", "caroline", "paint"})
    assert names_among("When did Melanie's kids paint with Caroline?", common) == {
        "Melanie", "Caroline"}
    assert names_among("what did melanie paint?", common) == frozenset()
    assert names_among("When did Anna paint?", common) == frozenset()
