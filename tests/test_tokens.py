"""Token counts: o200k_base through bpe-openai, and the len/4 fallback."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import pytest

from mnemoproxy.gate.tokens import (
    count_tokens,
    counting_exactly,
    estimate_tokens,
    load_token_counter,
)


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
    with caplog.at_level(logging.WARNING, logger="mnemoproxy.gate.tokens"):
        counter = load_token_counter("no_such_encoding")
    assert counter is estimate_tokens
    assert counter("hello world") == 3  # ceil(11 / 4)
    assert counter("") == 0
    (record,) = caplog.records
    assert "no_such_encoding" in record.getMessage()
    assert "pip install bpe-openai" in record.getMessage()
