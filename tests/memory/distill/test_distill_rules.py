"""The offline rule-based distiller: facts from the user's words, slots for supersession,
relative dates made absolute, and an extractive episode."""

from __future__ import annotations

from datetime import datetime

import pytest

from mnemoproxy.memory.distill.rules import RuleDistiller, extract_facts, slot_of
from mnemoproxy.memory.models import SessionInput, Turn

TUESDAY = datetime(2024, 5, 7, 9, 30)  # 2024-05-07 was a Tuesday

# (message, expected (content, slot) pairs in order); an empty list means "no facts".
CASES: list[tuple[str, list[tuple[str, str | None]]]] = [
    ("My name is Alice.", [("User's name is Alice", "identity:name")]),
    ("Hi, I'm Alice.", [("User's name is Alice", "identity:name")]),
    ("I'm Alice, what's yours?", [("User's name is Alice", "identity:name")]),
    ("Please call me Al", [("User goes by Al", "identity:nickname")]),
    ("I live in Berlin.", [("User lives in Berlin", "identity:location")]),
    ("I moved to Paris last month.", [("User lives in Paris", "identity:location")]),
    ("I'm based in New York.", [("User lives in New York", "identity:location")]),
    ("I'm from Lyon.", [("User is from Lyon", "identity:hometown")]),
    ("I live in a small town near the coast.",
     [("User lives in a small town near the coast", "identity:location")]),
    ("I work at Acme as a data engineer.",
     [("User works at Acme", "identity:employer"),
      ("User is a data engineer", "identity:occupation")]),
    ("I'm a nurse at St Mary's.",
     [("User is a nurse", "identity:occupation"),
      ("User works at St Mary's", "identity:employer")]),
    ("I no longer work at Acme.", [("User no longer works at Acme", "identity:employer")]),
    ("I don't live in Berlin anymore.",
     [("User no longer lives in Berlin", "identity:location")]),
    ("I'm 34.", [("User is 34 years old", "identity:age")]),
    ("I am 34 years old.", [("User is 34 years old", "identity:age")]),
    ("My wife Anna and I have two kids.",
     [("User's wife is named Anna", "identity:family:wife"),
      ("User has two kids", "identity:family:child:count")]),
    ("my daughter Emma starts school soon",
     [("User has a daughter named Emma", "identity:family:daughter:emma")]),
    ("We have a dog named Max.", [("User has a dog named Max", "identity:pet:max")]),
    ("I'm married.", [("User is married", "identity:family:marital")]),
    ("I prefer tea over coffee.", [("User prefers tea over coffee", "preference:drink")]),
    ("My favourite colour is blue.",
     [("User's favourite colour is blue", "preference:colour")]),
    ("My favorite color is green.",
     [("User's favourite colour is green", "preference:colour")]),
    ("I really love hiking in the mountains.",
     [("User loves hiking in the mountains", "preference:hiking in mountain")]),
    ("I don't like olives.", [("User dislikes olives", "preference:olive")]),
    ("I'm allergic to peanuts and shellfish.",
     [("User is allergic to peanuts", "health:allergy:peanut"),
      ("User is allergic to shellfish", "health:allergy:shellfish")]),
    ("I have a peanut allergy.", [("User is allergic to peanut", "health:allergy:peanut")]),
    ("I'm vegetarian.", [("User is vegetarian", "health:diet")]),
    ("I don't eat meat.", [("User doesn't eat meat", "health:diet:meat")]),
    ("I'm a big fan of jazz.", [("User is a fan of jazz", "preference:jazz")]),
    ("My sister, Maria, is visiting.",
     [("User has a sister named Maria", "identity:family:sister:maria")]),
    ("I work as a team lead.", [("User works as a team lead", "identity:occupation")]),
    # Full names, things and people of the user's known by a name, places named with
    # their kind.
    ("My name is Dana Whitfield.", [("User's name is Dana Whitfield", "identity:name")]),
    ("I am Ravi Menon.", [("User's name is Ravi Menon", "identity:name")]),
    ("Hi, I'm Ravi Menon.", [("User's name is Ravi Menon", "identity:name")]),
    ("Please call me Jo Ann.", [("User goes by Jo Ann", "identity:nickname")]),
    ("I have a border collie called Biscuit.",
     [("User has a border collie named Biscuit", "identity:named:border collie:biscuit")]),
    ("We have a rescue greyhound called Pip, and he's lovely.",
     [("User has a rescue greyhound named Pip", "identity:named:rescue greyhound:pip")]),
    ("I have a friend whose name is Jo.",
     [("User has a friend named Jo", "identity:named:friend:jo")]),
    ("My neighbour, whose name is Ada, waters my plants.",
     [("User's neighbour is named Ada", "identity:named:neighbour:ada")]),
    ("My colleague is called Sam Ortiz.",
     [("User's colleague is named Sam Ortiz", "identity:named:colleague:sam ortiz")]),
    ("My boss's name is Tom.", [("User's boss is named Tom", "identity:named:boss:tom")]),
    ("my new puppy is called Rex", [("User has a puppy named Rex", "identity:pet:rex")]),
    ("I have two cats named Tom and Jerry.", [("User has a cat named Tom", "identity:pet:tom")]),
    ("I work at St James hospital.", [("User works at St James hospital", "identity:employer")]),
    ("I work at the Royal Free Hospital as a nurse.",
     [("User works at the Royal Free Hospital", "identity:employer"),
      ("User is a nurse", "identity:occupation")]),
    ("I work at Bank of America.", [("User works at Bank of America", "identity:employer")]),
    ("I live in New York City.", [("User lives in New York City", "identity:location")]),
    ("I moved to Camden town last year.", [("User lives in Camden town", "identity:location")]),
    ("I work at Google every day.", [("User works at Google", "identity:employer")]),
    ("My favourite song is called Yesterday.",
     [("User's favourite song is called Yesterday", "preference:song")]),
    # Not facts about the user.
    ("I Am Legend Was A Great Movie", []),
    ("What is my dog called?", []),
    ("Is my neighbour called Ada?", []),
    ("If my neighbour is called Ada, I'd be surprised.", []),
    ("My friend said my dog is called Rex.", []),
    ("I have an image called sem.", []),
    ("I'm tired.", []),
    ("I'm Catholic.", []),
    ("I'm Excited to start tomorrow.", []),
    ("I'm a bit nervous about it.", []),
    ("I'm 5 minutes away.", []),
    ("my brother lives in Rome", []),
    ("My brother lives in Rome and works at Fiat.", []),
    ("Do you live in Paris?", []),
    ("What's my name?", []),
    ("Where do I live?", []),
    ("If I were a doctor I would help people.", []),
    ("I wish I lived in Tokyo.", []),
    ("My friend said I live in Rome.", []),
    ('He wrote "I live in Rome" on the card.', []),
    ("I'd love to visit Japan.", []),
    ("I love it!", []),
    ("I love that idea.", []),
    ("I'm not allergic to anything.", []),
    ("I need to relax.", []),
    ("I'll talk to you tomorrow.", []),
    ("Moments like these remind me to be grateful.", []),
    # A list, not a name for the relation: Toby may be the dog.
    ("My girlfriend, Toby and I are going camping.", []),
    ("It was a chance to learn something new and work as a team.", []),
    # Tastes that only mean something next to the lines they answer.
    ("I love seeing them eat fruit.", []),
    ("I like holding it.", []),
    # What means something only beside the conversation it came from, or was cut short.
    ("I'll try it out this weekend.", []),
    ("I like the options you provided.", []),
    ("I like the third option.", []),
    ("I love being in places like this.", []),
    ('I think I\'ll go with the "People\'s Choice" award idea.', []),
    ("I love spending time with each other's families.", []),
    ("My favorite studio and it is always busy.", []),
    ("I'm excited to get my Snake Plant and start enjoying it.", []),
    ("I think I'll go with Option 1, focusing on the coast.", []),
    ("I don't like bowling itself.", []),
    ("I have a painting in my room to remind me to stay true.", []),
    ("I want you to remind me to call mom tomorrow.",
     [("User wants to be reminded to call mom on 2024-05-08", "commitment:call mom")]),
    ("One of my favorite dishes is lasagna!",
     [("User's favourite dishes include lasagna", "preference:dishe:lasagna")]),
    ("I'm going to a concert from Friday to Sunday.",
     [("User will go to a concert from 2024-05-10 to 2024-05-12",
       "commitment:go to concert")]),
    ("I live in a region with hot summers.", []),
    ("I live in Chicago, I'm open to any diet.", [("User lives in Chicago", "identity:location")]),
    ("I'm planning to host a summer BBQ next Saturday and need some help with preparing for it.",
     [("User will host a summer BBQ on 2024-05-11", "commitment:host summer bbq")]),
    ("I think I'll go with the Eagle Creek Pack-It Cubes.",
     [("User decided to go with the Eagle Creek Pack-It Cubes", None)]),
    ("I need to renew my visa by March 2025.",
     [("User needs to renew their visa by 2025-03", "commitment:renew their visa")]),
    ("I plan to visit Japan next year.",
     [("User will visit Japan in 2025", "commitment:visit japan")]),
    ("I'm going to repaint the kitchen next month.",
     [("User will repaint the kitchen in 2024-06", "commitment:repaint kitchen")]),
    ("I'm going to finish the report this week.",
     [("User will finish the report in the week of 2024-05-06", "commitment:finish report")]),
    ("I love books that make me think.",
     [("User loves books that make them think", "preference:books that make them think")]),
    ("I love the colour!", []),
    ("hi", []),
    ("thanks, you too!", []),
]


@pytest.mark.parametrize(("message", "expected"), CASES, ids=[c[0] for c in CASES])
def test_extracts_exactly_the_stated_facts(message: str, expected: list[tuple[str, str | None]]):
    facts = extract_facts(message, when=TUESDAY)
    assert [(f.content, f.slot) for f in facts] == expected


@pytest.mark.parametrize(("message", "expected"), [c for c in CASES if c[1]],
                         ids=[c[0] for c in CASES if c[1]])
def test_slot_of_reads_back_each_fact_it_wrote(message: str, expected: list):
    for fact in extract_facts(message, when=TUESDAY):
        assert slot_of(fact.content) == fact.slot


def test_kinds_and_salience_follow_what_the_fact_is_about():
    facts = {f.slot: f for f in extract_facts(
        "I'm Alice. I'm allergic to cats. I love sushi. Remind me to call mom tomorrow.",
        when=TUESDAY,
    )}
    assert facts["identity:name"].kind == "identity"
    assert 0.8 <= facts["identity:name"].salience <= 0.9
    assert (facts["health:allergy:cat"].kind, facts["health:allergy:cat"].salience) == (
        "pinned", 0.9)
    assert facts["preference:sushi"].salience == 0.6
    assert facts["commitment:call mom"].salience == 0.7
    assert facts["commitment:call mom"].tags == ["commitment"]


def test_a_move_occupies_the_slot_of_the_old_home_and_a_restatement_is_identical():
    [before] = extract_facts("I live in Berlin.")
    [after] = extract_facts("I moved to Paris.")
    [again] = extract_facts("I live in Berlin")
    assert before.slot == after.slot == "identity:location"
    assert before.content != after.content
    assert again.content == before.content


def test_reversed_preference_supersedes_and_changed_taste_shares_the_slot():
    assert slot_of("User prefers coffee over tea") == slot_of("User prefers tea over coffee")
    [loves] = extract_facts("I love sushi.")
    [hates] = extract_facts("I hate sushi.")
    assert loves.slot == hates.slot == "preference:sushi"


def test_slot_of_understands_statements_written_by_another_distiller():
    assert slot_of("The user lives in Lisbon.") == "identity:location"
    assert slot_of("User's name is Bob") == "identity:name"
    assert slot_of("User works at Initech") == "identity:employer"
    assert slot_of("I moved to Oslo") == "identity:location"
    assert slot_of("User enjoys long walks") == "preference:long walk"
    assert slot_of("The sky is blue") is None


@pytest.mark.parametrize(("message", "content"), [
    ("Remind me to call mom tomorrow.",
     "User wants to be reminded to call mom on 2024-05-08"),
    ("I need to submit the report by Friday.",
     "User needs to submit the report by 2024-05-10"),
    ("I'll send you the slides next Monday.", "User will send you the slides on 2024-05-13"),
    ("Remind me to renew my passport in 3 days.",
     "User wants to be reminded to renew their passport on 2024-05-10"),
    ("I have to pay rent by June 1st.", "User needs to pay rent by 2024-06-01"),
    ("I'm going to the dentist next week.",
     "User will go to the dentist in the week of 2024-05-13"),
    ("We decided to launch on May 20.", "User decided to launch on 2024-05-20"),
])
def test_relative_dates_in_commitments_become_iso_dates(message: str, content: str):
    [fact] = extract_facts(message, when=TUESDAY)
    assert fact.content == content


def test_a_moved_deadline_keeps_the_commitment_slot():
    [first] = extract_facts("Remind me to call mom tomorrow.", when=TUESDAY)
    [moved] = extract_facts("Remind me to call mom on Friday.", when=TUESDAY)
    assert first.slot == moved.slot == "commitment:call mom"
    assert moved.content.endswith("on 2024-05-10")


def test_without_a_time_reference_the_words_stay_as_said():
    [fact] = extract_facts("Remind me to call mom tomorrow.")
    assert fact.content == "User wants to be reminded to call mom tomorrow"


def test_decisions_are_tagged_and_slotless():
    [fact] = extract_facts("Let's go with Postgres.")
    assert (fact.content, fact.tags, fact.slot) == (
        "User decided to go with Postgres", ["decision"], None)


def _session(turns: list[Turn]) -> SessionInput:
    return SessionInput("agent-1", "session-1", turns, session_date=TUESDAY)


REALISTIC = [
    Turn("Hi! I'm Maya, I just moved to Lisbon from Toronto for a new job.",
         "Welcome to Lisbon, Maya! What's the new job?"),
    Turn("I work at Feedzai as a data engineer. The team builds fraud detection pipelines "
         "with Apache Spark.", "That sounds exciting. How are you finding Spark?"),
    Turn("Spark is fine but our fraud detection pipelines are slow. We decided to migrate "
         "the batch jobs to Apache Flink next month.", "Flink suits streaming fraud detection."),
    Turn("Also I'm allergic to shellfish, which is tricky in Lisbon restaurants.",
         "Many Portuguese dishes use seafood, so ask about ingredients."),
    Turn("Remind me to book a table at Prado for Friday with my sister Ana.", "Noted."),
    Turn("Thanks, that's all for now!", "You're welcome, my name is Claude by the way!"),
]


async def test_distill_a_realistic_session_end_to_end():
    result = await RuleDistiller().distill(_session(REALISTIC))
    identity = {f.slot: f.content for f in result.identity}
    assert identity == {
        "identity:name": "User's name is Maya",
        "identity:location": "User lives in Lisbon",
        "identity:employer": "User works at Feedzai",
        "identity:occupation": "User is a data engineer",
        "identity:family:sister:ana": "User has a sister named Ana",
    }
    pinned = {f.content for f in result.pinned}
    assert "User is allergic to shellfish" in pinned
    episode = result.episode
    assert episode is not None
    assert episode.decisions == [
        "User decided to migrate the batch jobs to Apache Flink in 2024-06"]
    assert episode.action_items == [
        "User wants to be reminded to book a table at Prado on 2024-05-10 with their sister Ana"]
    assert "fraud detection" in episode.topics and "spark" in episode.topics
    assert len(episode.topics) <= 6
    assert {"Lisbon", "Toronto", "Feedzai", "Apache Spark", "Apache Flink"} <= set(
        episode.entities)
    assert len({e.lower() for e in episode.entities}) == len(episode.entities)
    assert "Claude" not in episode.entities  # the assistant's words name no entity
    assert 0 < len(episode.summary) <= 300
    assert "fraud detection" in episode.summary and "Thanks" not in episode.summary
    assert episode.salience == 0.9


async def test_topics_name_what_the_session_is_about_not_its_requests():
    echo = "Here is the fake upstream's answer: "
    result = await RuleDistiller().distill(_session([
        Turn("Can you tell me how to keep a sourdough starter alive?",
             echo + "feed the starter daily."),
        Turn("I was telling my friend about sourdough starter hydration. Write a short note "
             "about hydration, and give me some tips.", echo + "hydration is the water ratio."),
        Turn("Thanks! Could you explain why rye flour helps the starter?",
             echo + "rye flour ferments fast."),
    ]))
    assert result.episode is not None
    topics = result.episode.topics
    assert topics[:2] == ["sourdough starter", "hydration"]
    words = {w for topic in topics for w in topic.split()}
    assert not words & {"telling", "tell", "write", "explain", "help", "tip", "fake", "upstream",
                        "answer"}


async def test_small_talk_yields_no_episode_and_no_facts():
    result = await RuleDistiller().distill(_session([
        Turn("hi", "Hello! How can I help?"), Turn("thanks!", "You're welcome."),
        Turn("ok bye", "Goodbye!"),
    ]))
    assert (result.episode, result.pinned, result.identity) == (None, [], [])


async def test_only_the_last_value_of_a_slot_leaves_the_session():
    result = await RuleDistiller().distill(_session([
        Turn("I live in Berlin.", "Nice city."),
        Turn("Actually I moved to Paris last week.", "Congratulations on the move!"),
    ]))
    assert [f.content for f in result.identity] == ["User lives in Paris"]


async def test_turn_time_wins_over_session_date_for_relative_dates():
    turn = Turn("Remind me to water the plants tomorrow.", "Sure.", at=datetime(2024, 1, 31))
    result = await RuleDistiller().distill(_session([turn]))
    assert [f.content for f in result.pinned] == [
        "User wants to be reminded to water the plants on 2024-02-01"]


async def test_a_large_session_is_distilled_the_same_way_off_the_event_loop():
    turns = [Turn(f"I'm allergic to peanuts. We talked about gardening tomatoes {i}.", "ok")
             for i in range(400)]
    result = await RuleDistiller().distill(_session(turns))
    assert [f.content for f in result.pinned] == ["User is allergic to peanuts"]
    assert result.episode is not None and "gardening" in " ".join(result.episode.topics)


async def test_a_message_longer_than_spacy_takes_is_read_up_to_a_bound():
    pasted = "I live in Porto. " + "The log line repeats. " * 60_000  # over 1,000,000 chars
    result = await RuleDistiller().distill(_session([Turn(pasted, "Noted.")]))
    assert "User lives in Porto" in [f.content for f in result.identity + result.pinned]


# --- sentence starts: parse() marks them as spaCy's Sentencizer would -----------------------

SENTENCE_TEXTS = [
    "",
    " ",
    "?!",
    "...",
    "Hey Mel! Good to see you! How have you been?",
    "Hi!!! How are you?? I'm fine.",
    "\"Quote.\" He said. (Yes.) ok",
    "a.b.c. D e. f",
    "Wait... what?! Really. (No.) Yes!",
    "Line one\n\nLine two. Line three",
    "Done。 Next line！ Third？ Fourth",
    "It cost $5. Then 3.5 more... ok",
]


@pytest.mark.parametrize("text", SENTENCE_TEXTS)
def test_sentence_starts_are_the_sentencizers(text: str) -> None:
    import spacy
    from spacy.attrs import SENT_START

    from mnemoproxy.memory.text.parsing import parse

    reference = spacy.blank("en")
    reference.add_pipe("sentencizer")
    expected = reference(text).to_array([SENT_START]).tolist()
    parsed = parse(text)
    assert parsed.to_array([SENT_START]).tolist() == expected
    assert [s.text for s in parsed.sents] == [s.text for s in reference(text).sents]


# --- other languages: the rules read English; elsewhere they must not make junk ---------

FOREIGN_SESSIONS = {
    "de": [Turn("Kannst du mir helfen, einen Elternbrief für den Wandertag zu formulieren? "
                "Ich bin Grundschullehrerin in Freiburg und die Kinder brauchen Proviant.",
                "Gern, hier ist ein Entwurf."),
           Turn("Danke, klar, und bitte erwähne die Allergien der Kinder.", "Mache ich.")],
    "es": [Turn("¿Me ayudas a redactar un mensaje para cambiar un turno con una compañera? "
                "Soy enfermera en el hospital y el turno de noche me agota.", "Claro."),
           Turn("Eso es, para mañana por la mañana, gracias.", "De nada.")],
    "zh": [Turn("我家柯基叫豆豆，最近老是在家里乱尿，是不是生病了？", "可能需要看兽医。"),
           Turn("好的，周末带它去看看。", "祝豆豆早日康复。")],
    "ja": [Turn("札幌市立病院で看護師をしていて、夜勤明けにうまく眠れません。",
                "遮光カーテンを試してみてください。")],
}


@pytest.mark.parametrize("language", sorted(FOREIGN_SESSIONS))
async def test_other_languages_get_an_episode_and_no_made_up_facts(language: str) -> None:
    session = SessionInput("a", "s", FOREIGN_SESSIONS[language], session_date=datetime(2025, 3, 3))
    result = await RuleDistiller().distill(session)
    assert result.pinned == [] and result.identity == []
    assert result.episode is not None and result.episode.summary
    assert result.episode.summary.split()[0] in FOREIGN_SESSIONS[language][0].user
    # Topics are the session's own words, never the language's commonest ones.
    function_words = {"kannst", "den", "ich", "danke", "klar", "para", "eso", "que", "una"}
    assert not function_words & set(result.episode.topics)
    if language == "de":
        assert {"wandertag", "grundschullehrerin"} <= set(result.episode.topics)
