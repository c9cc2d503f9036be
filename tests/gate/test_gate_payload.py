"""The instruction apart from the material it hands over: quotes, blocks after a colon,
labelled inputs, lists, code, paragraphs pointed at, other scripts; read in linear time."""

from __future__ import annotations

import time

import pytest

from mnemoproxy.gate.relevance.payload import split_request


@pytest.mark.parametrize(
    ("message", "instruction", "in_payload"),
    [
        ('Make this friendlier: "We regret that your order from last Tuesday was lost."',
         "Make this friendlier:", "last Tuesday"),
        ("Reply to this:\n\nDear Sam, my flight lands Friday.\n\nKeep it short.",
         "Reply to this:\nKeep it short.", "my flight"),
        ("Label each one:\n- I love my new job\n- Our trip was awful",
         "Label each one:", "Our trip"),
        ("Review: I stayed here in May and my room was cold.\nWrite a response.",
         "Review:\nWrite a response.", "my room"),
        ("```\n// my hack from last night\n```\nWhy is this slow?",
         "Why is this slow?", "last night"),
        ("tl;dr this please\n\nI spent all of last year rebuilding my garden shed.",
         "tl;dr this please", "my garden"),
        ("What does 今天我很忙 mean?", "What does  … mean?", "今天我很忙"),
        ("How do I tell my neighbour 'your dog barked all night on Sunday!' in Dutch?",
         "How do I tell my neighbour  …  in Dutch?", "on Sunday"),
        ('Translate "we missed the last train home" into German',
         "Translate  …  into German", "last train"),
        # An instruction naming its material ("the given", "the email") in a paragraph of
        # its own, as instruction sets put an input below its instruction.
        ("Suggest a title for the given recipe.\n\nLast Sunday my gran baked scones.",
         "Suggest a title for the given recipe.", "my gran"),
        ("Shorten the email without losing its tone.\n\nHi Ana, we moved yesterday.",
         "Shorten the email without losing its tone.", "we moved"),
        # An opening sentence that acts on "this", its material after it.
        ("Make these into a timeline. Last spring we moved; in June my son started school.",
         "Make these into a timeline.", "my son"),
        ("condense the following! our quarterly sync ran long because I overran my slot",
         "condense the following!", "my slot"),
        # A first paragraph opening on the material it acts on is the instruction however
        # much of the material runs on into it; the paragraphs after are material.
        ("Rephrase this article in plain words for a school newsletter, keep the headings "
         "and add a short summary. Based on our review so far, no member's details were "
         "exposed, and we moved quickly once we knew what had happened to the server.\n\n"
         "How Did We Respond?\nWe reset every password the same night.",
         "Rephrase this article in plain words for a school newsletter, keep the headings "
         "and add a short summary. Based on our review so far, no member's details were "
         "exposed, and we moved quickly once we knew what had happened to the server.",
         "How Did We Respond?"),
        # Items listed after a colon are things to work on.
        ("order these by price: my old Kindle, our spare tent, the blue kayak, two oars",
         "order these by price:", "our spare tent"),
        # A sentence named as such is material, however short.
        ("Is the sentence 'We sold our car' passive?", "Is the sentence  …  passive?",
         "We sold our car"),
    ],
)
def test_material_is_set_apart(message: str, instruction: str, in_payload: str) -> None:
    request = split_request(message)
    assert request.instruction == instruction
    assert in_payload in request.payload


@pytest.mark.parametrize(
    "message",
    [
        "What did I tell you about my sister's wedding?",
        "Question: where did I park last night?",
        'What does "ikigai" mean?',  # a short quote is a phrase asked about
        "I went to Rome in May.\n\nWhat was the name of the hotel?",
        "我的狗叫什么名字？",
        # Apostrophes open no quotation, short single quotes name a phrase.
        "Where's the kids' bike pump I don't use anymore, the one from my brother's garage?",
        "What does 'hygge' mean, and didn't my sister say it once?",
        # A title in single quotes, or events named without a sentence's end.
        "How many pages of 'A Short History of Nearly Everything' have I read?",
        "Which came first: 'I joined the climbing gym', or 'I moved to Leeds'?",
        # A title in double quotes: its words capitalised.
        'Did I ever finish "The Brothers Karamazov and Other Stories"?',
        'What does the word "saudade" mean, and did my aunt use it?',
        # A question about "this", or help asked for the user, is no instruction on it.
        "Is this normal? My cat has slept most of the day since we moved house.",
        "Help me with this. My landlord kept the deposit after we moved out in May.",
        # A list that ends in the user's question is theirs.
        "my week: gym on monday, dentist on tuesday, and what was wednesday?",
        # Material named by the user's own words is theirs to ask about.
        "Remember the email I sent my landlord?\n\nWhat did he answer?",
    ],
)
def test_the_users_own_words_stay_theirs(message: str) -> None:
    request = split_request(message)
    assert not request.has_payload
    assert request.instruction == message.strip()


@pytest.mark.parametrize(
    "text",
    ["\n" * 100_000, "“" * 100_000, '"' * 100_000, "a:\n" * 50_000, "1. x\n" * 50_000,
     "x: y\n" * 50_000, "this: " + "a" * 100_000, "猫 a " * 30_000, "a\n\n" * 50_000,
     "'" * 100_000, " 'a" * 50_000, "a' " * 50_000, "“Aa " * 50_000 + "”",
     "fix this " * 50_000 + ". ok", "rewrite this text " + "a " * 50_000 + "\n\n" * 1000],
)
def test_adversarial_text_is_read_in_linear_time(text: str) -> None:
    started = time.process_time()
    split_request(text)
    assert time.process_time() - started < 1.0
