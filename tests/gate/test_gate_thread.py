"""A follow-up pointing back into its own conversation needs no memory; a question only
earlier conversations answer still gets it, asked in the middle of a thread."""

from __future__ import annotations

import pytest

from mnemoproxy.gate.messages import thread_before
from mnemoproxy.gate.relevance import Evidence, GateContext, HeuristicGate

TRIP = (
    "Give me three ideas for a weekend trip from Lisbon\n"
    "Here are three ideas:\n1. Sintra: palaces, forest walks, the Pena Palace.\n"
    "2. Évora: a walled Roman town, the Chapel of Bones, Alentejo wine.\n"
    "3. Comporta: quiet beaches, rice fields, seafood.\n"
    "we only have a small car and I get carsick on windy roads\n"
    "Then Évora is the easiest drive: motorway most of the way, about 90 minutes."
)



async def memory_near(names):
    """Retrieval standing out above every request anyone might send."""
    return Evidence(0.9, [0.2, 0.3, 0.4], names=list(names), items=1000)


@pytest.mark.parametrize("message", [
    "what was that chapel you mentioned?",
    "tell me more about the second option you gave",
    "You said the drive is about 90 minutes, is that without traffic?",
    "earlier you said seafood in Comporta, any restaurant there?",
    "like I said, I get carsick. Which one is flattest?",
    "what did I say about the car again?",
    "remind me what you said about the palaces",
    "that chapel you mentioned, is it open on sundays?",
    "so what did we decide on for the second day in Évora?",
])
async def test_a_follow_up_pointing_into_the_thread_gets_no_memory(message):
    decision = await HeuristicGate().decide(message, GateContext(thread=TRIP, probe=memory_near))
    assert decision.section == "none", decision
    assert "this conversation" in decision.reason


@pytest.mark.parametrize("message", [
    # a thing the thread never says, a time before it, the user's own past
    "what was that book you recommended me?",
    "what was the name of the hotel you suggested in Sintra?",
    "last month you suggested a hotel in Évora, what was it called?",
    "which of these did I already visit?",
    "What did I tell you about my sister's wedding?",
    "do I like seafood?",
    "you recommended a wine once, which was it?",
    "what did I say my hotel budget was?",
    "what did i pay for the car hire? i think i told you",
])
async def test_what_the_thread_does_not_hold_is_still_memorys(message):
    decision = await HeuristicGate().decide(message, GateContext(thread=TRIP, probe=memory_near))
    assert decision.section != "none", decision


async def test_the_same_words_without_a_thread_point_at_memory():
    decision = await HeuristicGate().decide(
        "what was that chapel you mentioned?", GateContext(probe=memory_near))
    assert decision.section == "episode", decision


def test_the_thread_is_the_user_and_assistant_text_before_the_message_its_last_part():
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "a" * 30},
        {"role": "assistant", "content": [{"type": "text", "text": "b" * 30}]},
        {"role": "user", "content": "now?"},
    ]
    assert thread_before(messages, 3, 1_000) == "a" * 30 + "\n" + "b" * 30
    assert thread_before(messages, 3, 40) == "a" * 9 + "\n" + "b" * 30
    assert thread_before(messages, 1, 1_000) == ""
