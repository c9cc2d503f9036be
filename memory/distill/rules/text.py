"""The shared spaCy pipeline and token-level helpers of the rule-based distiller.

No trained model is available offline, so everything stands on `spacy.blank("en")`: its
tokenizer (which splits contractions and gives "'m" the norm "am"), sentence starts as
spaCy's rule-based sentencizer sets them, and lexical attributes. The pipeline is built on
first use, once, behind a lock.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy

from mnemoproxy.lazy import LazyResource
from mnemoproxy.memory.distill.rules.lexicon import CLAUSE_BREAKS

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token
    from spacy.vocab import Vocab

QUOTES = frozenset({'"', "“", "”", "«", "»"})
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)
_CURLY_APOSTROPHES = re.compile("[\u2018\u2019\u02bc]")


def _build_pipeline() -> Language:
    import spacy  # deferred: importing spaCy costs about a second

    return spacy.blank("en")


_PIPELINE = LazyResource(_build_pipeline)


def pipeline() -> Language:
    return _PIPELINE.get()


# A message is read up to this many characters: a pasted log or book says nothing more of
# the user past it, and spaCy refuses texts over its max_length (1,000,000) outright.
MAX_PARSE_CHARS = 100_000


def parse(text: str) -> Doc:
    """Tokenise and split into sentences. Curly apostrophes become straight ones so that
    "I’m" and "I'm" reach the patterns alike."""
    doc = pipeline().make_doc(_CURLY_APOSTROPHES.sub("'", text[:MAX_PARSE_CHARS]))
    _mark_sentences(doc)
    return doc


# What a word form (spaCy orth id) is to the sentence splitter: it depends on the form
# alone, and the same forms recur in every message. Bounded; only the rules' one thread
# (the helper process) touches it.
_PLAIN, _PUNCT, _SENTENCE_END = 0, 1, 2
_SPLIT_KINDS: dict[int, int] = {}
_SPLIT_KINDS_LIMIT = 200_000


def _split_kind(vocab: Vocab, orth: int) -> int:
    kind = _SPLIT_KINDS.get(orth)
    if kind is None:
        from spacy.pipeline import Sentencizer

        lexeme = vocab[orth]
        if lexeme.orth_ in Sentencizer.default_punct_chars:
            kind = _SENTENCE_END
        else:
            kind = _PUNCT if lexeme.is_punct else _PLAIN
        if len(_SPLIT_KINDS) >= _SPLIT_KINDS_LIMIT:
            _SPLIT_KINDS.clear()
        _SPLIT_KINDS[orth] = kind
    return kind


def _mark_sentences(doc: Doc) -> None:
    """Sentence starts exactly as spaCy's Sentencizer (default punctuation) sets them: a
    sentence ends after a run of sentence-final marks, at the next word that is not
    punctuation. Computed over word-form ids rather than through the component, which
    builds a Token object per token (measured: a sixth of all the rules' time)."""
    if not len(doc):
        return
    from spacy.attrs import ORTH, SENT_START

    starts = [-1] * len(doc)
    start, seen_end = 0, False
    for index, orth in enumerate(doc.to_array(ORTH).tolist()):
        kind = _split_kind(doc.vocab, orth)
        if seen_end and kind == _PLAIN:
            starts[start] = 1
            start, seen_end = index, False
        elif kind == _SENTENCE_END:
            seen_end = True
    starts[0] = starts[start] = 1
    # spaCy's arrays are uint64: -1 (not a start) wraps as in Doc.to_array.
    marks: Any = numpy.array(starts, dtype=numpy.int64).astype(numpy.uint64)  # thinc's Ints2d
    doc.from_array([SENT_START], marks[:, None])


def _is_punct_break(token: Token) -> bool:
    """Punctuation ends a clause, except joining marks: "gluten-free", "AT&T". A dash with
    a space beside it ("again - even") is a break."""
    if token.text == "-":
        before = token.doc[token.i - 1] if token.i > 0 else None
        return bool(token.whitespace_) or (before is not None and bool(before.whitespace_))
    return token.is_punct and token.text not in {"&", "'"}


def is_clause_break(token: Token) -> bool:
    return _is_punct_break(token) or token.lower_ in CLAUSE_BREAKS


def phrase_after(
    doc: Doc, start: int, *, max_tokens: int = 8, breaks: frozenset[str] = CLAUSE_BREAKS
) -> Span | None:
    """The words from `start` up to the end of the clause, or None when the clause is longer
    than `max_tokens` (a long tail is rarely a clean value) or empty."""
    end = start
    sentence_end = doc[start].sent.end if start < len(doc) else start
    while end < sentence_end and not _is_punct_break(doc[end]) and doc[end].lower_ not in breaks:
        end += 1
    if end == start or end - start > max_tokens:
        return None
    return doc[start:end]


def is_name_like(token: Token) -> bool:
    """A capitalised word that could be a proper name (not "I", a weekday or a stop word)."""
    return (
        token.is_title
        and token.is_alpha
        and len(token) > 1
        and not token.is_stop
        and token.lower_ not in WEEKDAYS
        and token.lower_ not in MONTHS
    )


def proper_span(doc: Doc, start: int) -> Span | None:
    """Capitalised words from `start`, joined by "of"/"de"/"&" and one comma ("New York",
    "Bank of America", "Austin, Texas"); None when the word at `start` is not capitalised."""
    end = start
    sentence_end = doc[start].sent.end if start < len(doc) else start
    used_comma = False
    while end < sentence_end:
        token = doc[end]
        if token.is_title or (token.is_upper and len(token) > 1 and token.is_alpha):
            end += 1
            continue
        if token.lower_ == "'s" and end > start and not doc[end - 1].whitespace_:
            end += 1  # "St Mary's", "McDonald's"
            continue
        nxt = doc[end + 1] if end + 1 < sentence_end else None
        # "Austin, Texas" but not "Chicago, I'm open to ...".
        joins_names = nxt is not None and nxt.is_title and nxt.lower_ != "i" and end > start
        if joins_names and token.lower_ in {"of", "de", "del", "la", "upon", "&"}:
            end += 1
        elif joins_names and token.text == "," and not used_comma:
            used_comma = True
            end += 1
        else:
            break
    if end == start or doc[start].is_stop:
        return None
    return doc[start:end]


def mostly_title_case(sentence: Span) -> bool:
    """Headline-style text capitalises every word, so capitals say nothing about names."""
    words = [t for t in sentence if t.is_alpha]
    return len(words) >= 4 and sum(t.is_title for t in words) * 2 > len(words)


def inside_quotes(token: Token) -> bool:
    sentence = token.sent
    opened = sum(1 for t in doc_slice(sentence, token.i) if t.text in QUOTES)
    return opened % 2 == 1


def doc_slice(sentence: Span, end: int) -> Span:
    """The part of `sentence` before the token index `end`."""
    return sentence.doc[sentence.start:end]


def singular(word: str) -> str:
    """A crude singular, only for building slot keys ("peanuts" and "peanut" share a slot)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def slot_key(text: str) -> str:
    """A value turned into a slot suffix: lower case, no articles, singular last word."""
    words = [w for w in re.findall(r"[\w'-]+", text.lower()) if w not in {"a", "an", "the"}]
    if words:
        words[-1] = singular(words[-1])
    return " ".join(words)
