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
    "with the car I gave you, how long is the Sintra drive?",
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


async def memory_above_half(names):
    """Retrieval nearer than half the requests anyone might send, and no more."""
    return Evidence(0.32, [0.2, 0.25, 0.3, 0.35, 0.4, 0.45], names=list(names), items=1000)


@pytest.mark.parametrize("message", [
    "so which one for me then?",
    "any recommendation for me then?",
    "What should I book then?",
])
async def test_a_choice_asked_for_the_user_in_a_thread_is_made_from_what_it_told(message):
    gate = HeuristicGate()
    alone = await gate.decide(message, GateContext(probe=memory_above_half))
    assert alone.section == "episode", alone
    decision = await gate.decide(message, GateContext(thread=TRIP, probe=memory_above_half))
    assert decision.section == "none", decision
    # Memory standing out beyond every request still speaks.
    decision = await gate.decide(message, GateContext(thread=TRIP, probe=memory_near))
    assert decision.section == "episode", decision


async def test_a_thing_of_the_users_own_asked_in_a_thread_is_still_theirs():
    decision = await HeuristicGate().decide(
        "what size is my car again, roughly?", GateContext(thread=TRIP, probe=memory_above_half))
    assert decision.section == "episode", decision


def memory_holding(*held):
    """Retrieval no nearer than most requests come, holding `held` (the message's words) rarely."""
    async def probe(names):
        return Evidence(0.25, [0.2, 0.25, 0.3, 0.35, 0.4, 0.45], names=list(names),
                        items=1000, words=dict.fromkeys(held, 2),
                        commonness=dict.fromkeys(held, 1.5))
    return probe


@pytest.mark.parametrize(("message", "held"), [
    ("how much Alentejo wine should I buy for the two of us?", "alentejo"),
    ("Comporta rice fields, when?", "comporta"),
])
async def test_words_memory_holds_count_only_beyond_what_the_thread_says(message, held):
    gate = HeuristicGate()
    alone = await gate.decide(message, GateContext(probe=memory_holding(held)))
    assert alone.section == "episode", alone
    decision = await gate.decide(message, GateContext(thread=TRIP, probe=memory_holding(held)))
    assert decision.section == "none", decision
    # A word the thread never says is memory's still.
    beyond = message.replace(held, "Odeceixe").replace(held.title(), "Odeceixe")
    decision = await gate.decide(
        beyond, GateContext(thread=TRIP, probe=memory_holding("odeceixe")))
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


# Other languages, read by their lexicon: the same conversation in Spanish, Chinese and
# German.
THREADS = {
    "es": (
        "dame tres ideas de escapada de fin de semana desde Sevilla\n"
        "1. Cádiz: playa de la Caleta y el barrio de la Viña.\n"
        "2. Ronda: el Puente Nuevo y bodegas de la serranía.\n"
        "3. Aracena: la Gruta de las Maravillas y jamón ibérico.\n"
        "vamos en tren, sin coche\n"
        "Entonces Cádiz: hay tren directo en una hora y media."
    ),
    "zh": (
        "周末从杭州出发去哪里玩比较好\n"
        "1. 乌镇：古镇夜景，住在西栅。2. 莫干山：竹林和民宿，适合徒步。3. 千岛湖：骑行环湖。\n"
        "我们不开车\n"
        "那乌镇最方便，从杭州东站坐高铁到桐乡，再换公交，大约一个半小时。"
    ),
    "de": (
        "Drei Ideen für ein Wochenende ab München?\n"
        "1. Füssen: Schloss Neuschwanstein und der Forggensee.\n"
        "2. Salzburg: Altstadt, Festung Hohensalzburg, Mozarts Geburtshaus.\n"
        "3. Garmisch: Partnachklamm und Zugspitze."
    ),
    "ko": (
        "주말에 부산 가면 어디 가볼까?\n"
        "1. 감천문화마을: 골목 벽화. 2. 해운대: 해변 산책. 3. 자갈치시장: 회."
    ),
}


@pytest.mark.parametrize(("message", "language", "points_back"), [
    ("¿qué me dijiste de la gruta, hay que reservar?", "es", True),
    ("recuerdame lo de las bodegas de Ronda, cuales eran?", "es", True),
    ("你刚才说的莫干山民宿，大概多少钱一晚？", "zh", True),
    ("我说过我们不开车，那千岛湖骑行怎么去？", "zh", True),
    ("Was hatten Sie nochmal zur Partnachklamm gesagt, braucht man Tickets?", "de", True),
    ("아까 말한 감천문화마을은 입장료 있어요?", "ko", True),
    # a thing the thread never names, a time before the conversation: memory's
    ("¿recuerdas a qué es alérgica mi hija?", "es", False),
    ("el otro día te dije el nombre de una bodega de Ronda, ¿cuál era?", "es", False),
    ("我上次跟你说过我女儿在哪个学校来着？", "zh", False),
    ("Wissen Sie noch, wie mein Zahnarzt heißt?", "de", False),
    ("Ich hatte Ihnen neulich von Salzburg erzählt, wo haben wir damals gewohnt?", "de", False),
    ("전에 말했던 우리 딸 학교 이름이 뭐였지?", "ko", False),
])
async def test_a_follow_up_in_another_language_gets_memory_only_for_what_its_thread_lacks(
    message, language, points_back,
):
    context = GateContext(thread=THREADS[language], probe=memory_near, language=language)
    decision = await HeuristicGate().decide(message, context)
    assert (decision.section == "none") == points_back, decision
    assert ("this conversation" in decision.reason) == points_back


async def test_a_word_to_the_last_reply_before_a_question_tells_no_situation():
    # Acknowledging the reply, then an aside only memory answers, then why it is asked.
    message = ("Gut, dann buchen wir Füssen. Wie hieß nochmal die Pension am See, in der "
               "wir im Frühjahr waren? Ich finde die Rechnung nicht mehr.")
    context = GateContext(thread=THREADS["de"], probe=memory_near, language="de")
    decision = await HeuristicGate().decide(message, context)
    assert decision.section != "none", decision
    assert "told in full" not in decision.reason
