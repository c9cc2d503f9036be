"""Personal data kept out of memory when `redact_pii` is on: e-mail addresses, phone
numbers, payment card numbers (Luhn-checked), IBANs (checksum-checked), national ids (US
social security and UK national insurance numbers) and IP addresses become typed
placeholders ("[email]", "[card]") before anything is stored.

Checksums and shapes keep ordinary numbers alone: dates, times, prices, years and order
numbers do not pass a Luhn or mod-97 check, nor look like a phone number's groups.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

# An address's local part is matched from the start of its run of address characters only
# (the lookbehind), without backtracking: starting anywhere inside it, "a." * n + "@" was
# read again from each of its n starts. The punctuation opening a run (`lead`) is kept in
# the text, as the word boundary the pattern once started at left it.
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])(?P<lead>[.%+-]*+)\b[A-Za-z0-9._%+-]++"
    r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}(?:\s?[A-Z0-9]{1,3})?\b")
_CARD = re.compile(r"(?<![\d.-])\d(?:[ -]?\d){12,18}(?!\d|[.-]\d)")
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}\b")
_NINO = re.compile(
    r"\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b"
)
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\d|\.\d)")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
# International (+country) numbers, North American (555) 123-4567 / 555-123-4567, and
# national numbers with a trunk 0 (020 7946 0958, 0612 345 678).
_PHONE = re.compile(
    r"""
    (?<![\w+])\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?\d{1,4}(?:[\s.-]?\d{2,4}){1,4}(?!\w)
    | (?<!\w)\(\d{3}\)\s?\d{3}[\s.-]\d{4}(?!\w)
    | (?<![\w.-])\d{3}(?P<sep>[.\s-])\d{3}(?P=sep)\d{4}(?!\w|[.-]\d)
    | (?<![\w.-])0\d{2,4}[\s.-]\d{3,4}[\s.-]?\d{3,4}(?!\w|[.-]\d)
    """,
    re.VERBOSE,
)


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _iban_valid(text: str) -> bool:
    compact = text.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def _card(text: str) -> bool:
    digits = _digits(text)
    return 13 <= len(digits) <= 19 and len(set(digits)) > 1 and _luhn(digits)


def _phone(text: str) -> bool:
    return 7 <= len(_digits(text)) <= 15


# (pattern, placeholder, check on the match): in this order, so that a card number is
# not taken for a phone number, nor an IBAN's digits for a card.
_KINDS: tuple[tuple[re.Pattern[str], str, Callable[[str], bool]], ...] = (
    (_EMAIL, "[email]", lambda _: True),
    (_IBAN, "[iban]", _iban_valid),
    (_CARD, "[card]", _card),
    (_SSN, "[national_id]", lambda _: True),
    (_NINO, "[national_id]", lambda _: True),
    (_IPV4, "[ip]", _ip),
    (_IPV6, "[ip]", lambda m: m.count(":") >= 2 and _ip(m)),
    (_PHONE, "[phone]", _phone),
)


_ANY_DIGIT = re.compile(r"\d")


def redact_pii(text: str) -> str:
    """The text with each piece of personal data above replaced by its typed placeholder."""
    # Every kind needs a digit, or an @ (e-mail), or colons (IPv6): most chat has neither,
    # and skips the expressions.
    if "@" in text:
        text = _EMAIL.sub(lambda m: m["lead"] + "[email]", text)
    if _ANY_DIGIT.search(text) is None:
        return text
    for pattern, placeholder, valid in _KINDS[1:]:
        if pattern is _IPV6 and "::" not in text and text.count(":") < 2:
            continue
        text = pattern.sub(lambda m: placeholder if valid(m[0]) else m[0], text)  # noqa: B023
    return text
