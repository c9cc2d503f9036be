"""Real token counts for the memory budget: OpenAI's o200k_base encoding.

The counter comes from the `bpe-openai` package (a Rust tokenizer). Its tiktoken-style
`bpe_openai.get_encoding("o200k_base")` works too, but it rebuilds a 200k-entry Python
rank table on load (~1.6 s), returns a list of ids we would only measure, and refuses
texts over 1M characters or 200k tokens; the Rust tokenizer it wraps has a `count`
that does none of that (~1.0 s to load, no length limit). When the package or its
encoding cannot load, counts fall back to ceil(len / 4), a usual English average, so
the budget still holds roughly instead of the chat failing.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable

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
        # bpe-openai 0.1.4 reads its rank files with a deprecated importlib.resources call;
        # under `-W error` that warning would otherwise cost us the real tokenizer.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from bpe_openai import _bindings

            tokenizer = _bindings.tokenizer_for_encoding(encoding_name)
        tokenizer.count("warm up")
    except Exception as exc:  # any failure means: estimate instead
        log.warning(
            "token counts are estimated (len/4): the %s tokenizer from bpe-openai did not "
            "load (%s); reinstall it with `pip install bpe-openai`",
            encoding_name,
            exc,
        )
        return estimate_tokens

    def count(text: str) -> int:
        try:
            return int(tokenizer.count(text))
        except UnicodeEncodeError:
            # Lone surrogates (from a broken client) cannot be UTF-8 encoded.
            return int(tokenizer.count(text.encode("utf-8", "replace").decode("utf-8")))

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
