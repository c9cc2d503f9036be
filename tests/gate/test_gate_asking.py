"""Which messages only ask: their turns, answered from memory, are not served as memory."""

from __future__ import annotations

import pytest

from mnemoproxy.gate.relevance.asking import only_asks


@pytest.mark.parametrize(("message", "asks"), [
    ("What's my dog called?", True),
    ("Thanks! What is my sister's name?", True),
    ("Remind me when my flight leaves.", True),
    ("Write a haiku about autumn.", True),
    ("can you tell me what I said about my job", True),
    ("I have a border collie called Biscuit.", False),
    ("My dog is sick. What should I do?", False),
    ("Given that I'm vegetarian, what should I cook tonight?", False),
    ("Since I moved to Paris, which museums should I see?", False),
    ("thanks!", False),
    ("", False),
])
def test_only_asks(message: str, asks: bool) -> None:
    assert only_asks(message) is asks
