"""Keeping secrets out of memory: spotting credentials in text that is about to be stored.

The distiller prompt already tells the model to leave credentials out; this is the check
in code behind it, because memory is re-injected into later prompts and a leaked key would
travel with it. It errs on the side of dropping: losing a fact costs less than storing a key.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

REDACTED = "[redacted]"

# Well-known key formats; each match is a secret as a whole.
_KEY_FORMATS = re.compile(
    r"""
    \bsk-[A-Za-z0-9_-]{16,}                               # OpenAI / Anthropic style
    | \b(?:AKIA|ASIA)[0-9A-Z]{16}\b                       # AWS access key ids
    | \bgh[pousr]_[A-Za-z0-9]{30,}                       # GitHub tokens
    | \bgithub_pat_[A-Za-z0-9_]{22,}                      # GitHub fine-grained tokens
    | \bxox[abposr]-[A-Za-z0-9-]{10,}                     # Slack tokens
    | \bAIza[0-9A-Za-z_-]{35}                             # Google API keys
    | \b[rsp]k_(?:live|test)_[0-9A-Za-z]{16,}             # Stripe keys
    | \beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}  # JWTs
    | -----BEGIN[A-Z ]*PRIVATE\ KEY-----                  # PEM private keys
    """,
    re.VERBOSE,
)

# "password: hunter2", "my API key is abc123": the value after the label is the secret.
# The lookahead spares sentences that talk about a credential without giving it away
# ("the API key is stored in Vault").
_LABELLED_SECRET = re.compile(
    r"""
    \b(?:password|passwd|passphrase|passcode|pin\ code|secret[\ _-]?key
       |api[\ _-]?key|access[\ _-]?key|private[\ _-]?key|(?:access|auth|bearer|api)[\ _-]?token
       |client[\ _-]?secret)
    s?\b["']?\s*(?:is|was|=|:)\s*
    (?!(?:stored|saved|kept|in|on|at|set|the|a|an|not|now|required|missing|expired|invalid
         |wrong|rotated|managed|changed|reset)\b)
    (?P<secret>["']?[^\s"',;]{3,}["']?)
    | \bBearer\s+(?P<bearer>[A-Za-z0-9._~+/=-]{16,})
    """,
    re.VERBOSE | re.IGNORECASE,
)

# Every match of the two patterns above contains one of these (case-sensitively for key
# formats, case-insensitively for labels): text with none of them, as most chat is, skips
# those expressions, which cost about 20 us a message on a bulk import.
_KEY_MARKERS = (
    "sk-", "AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox",
    "AIza", "k_live_", "k_test_", "eyJ", "-----BEGIN",
)
_LABEL_MARKERS = ("pass", "pin", "secret", "key", "token", "bearer")

_TOKEN_RUN = re.compile(r"[A-Za-z0-9+/=_-]{32,}")
_MIN_ENTROPY_BITS = 3.0
_RICH_ENTROPY_BITS = 4.0


def looks_like_secret(text: str) -> bool:
    """True if the text contains a credential: a known key format, a labelled password or
    key, or a long random-looking token."""
    return (
        (_may_name_a_key(text) and _KEY_FORMATS.search(text) is not None)
        or (_may_label_a_secret(text) and _LABELLED_SECRET.search(text) is not None)
        or any(_is_random_token(run) for run in _TOKEN_RUN.findall(text))
    )


def redact_secrets(text: str) -> str:
    """The text with every credential in it replaced by `[redacted]`; labels are kept
    ("password: [redacted]") so the sentence still reads."""
    if _may_name_a_key(text):
        text = _KEY_FORMATS.sub(REDACTED, text)
    if _may_label_a_secret(text):
        text = _LABELLED_SECRET.sub(_redact_value, text)
    return _TOKEN_RUN.sub(lambda m: REDACTED if _is_random_token(m[0]) else m[0], text)


def _may_name_a_key(text: str) -> bool:
    return any(marker in text for marker in _KEY_MARKERS)


def _may_label_a_secret(text: str) -> bool:
    # Case-insensitive matching also equates the dotless and the dotted capital i with
    # "i", which casefold() does not.
    folded = text.casefold().replace("\u0131", "i").replace("i\u0307", "i")
    return any(marker in folded for marker in _LABEL_MARKERS)


# Sentence punctuation right after a value ends the sentence, not the secret.
# From the first mark of a run only, so a long run of dots is read once, not once a dot.
_TRAILING_PUNCTUATION = re.compile(r"(?<![.!?:)\]}])[.!?:)\]}]++$")


def _redact_value(match: re.Match[str]) -> str:
    group = "secret" if match["secret"] is not None else "bearer"
    start, end = match.start(group) - match.start(), match.end(group) - match.start()
    trailing = _TRAILING_PUNCTUATION.search(match[0][start:end])
    if trailing is not None and trailing.start() > 0:
        end -= len(trailing[0])
    return match[0][:start] + REDACTED + match[0][end:]


def _is_random_token(run: str) -> bool:
    """Random keys mix letters and digits all the way through, or use every character class
    with few separators; slugs, identifiers and model names ("release-2024-07-15-hotfix",
    "Qwen2.5-Coder-32B-Instruct") keep digits in blocks between separators."""
    entropy = _entropy_bits(run)
    if entropy < _MIN_ENTROPY_BITS:
        return False
    digit_switches = sum(
        1
        for left, right in itertools.pairwise(run)
        if left.isalnum() and right.isalnum() and left.isdigit() != right.isdigit()
    )
    if digit_switches >= len(run) / 12:
        return True
    separators = sum(char in "-_" for char in run)
    every_class = (
        any(c.isupper() for c in run)
        and any(c.islower() for c in run)
        and any(c.isdigit() for c in run)
    )
    return every_class and separators <= len(run) / 16 and entropy >= _RICH_ENTROPY_BITS


def _entropy_bits(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())
