"""English text as spaCy reads it: one blank pipeline, shared by the rule distiller and the
search's reading of time expressions.

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

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc
    from spacy.vocab import Vocab

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
