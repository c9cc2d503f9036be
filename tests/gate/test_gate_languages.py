"""The gate beyond English: which language a message is in, and its decision read through
that language's lexicon (gate/relevance/languages.py)."""

from __future__ import annotations

import pytest

from mnemoproxy.gate.relevance import (
    REFERENCE_LANGUAGES,
    REFERENCE_PROMPTS,
    GateContext,
    HeuristicGate,
    reference_prompts,
)
from mnemoproxy.gate.relevance.languages import content_of, read_shape
from mnemoproxy.gate.relevance.types import Evidence
from mnemoproxy.memory.text.language import detect_language, word_languages
from mnemoproxy.memory.text.rarity import everyday_zipf, zipf

REFERENCE = tuple(sorted(0.2 + 0.01 * i for i in range(20)))


@pytest.mark.parametrize(
    ("text", "language"),
    [
        # The pieces of English contractions and possessives are no French "s" or "t".
        ("when's me mam's birthday again", "en"),
        ("what's Sam's dog's name, it's not Rex", "en"),
        ("Quel est le nom de mon chat, déjà ?", "fr"),
        ("Wie heißt noch mal der Hund meiner Schwester?", "de"),
        ("¿Cuál es mi comida favorita?", "es"),
        ("我的狗叫什么名字？", "zh"),
        ("私の猫の名前は何ですか？", "ja"),
        # Neighbours share their most frequent words; the others decide.
        ("Qual a diferença entre chuva e garoa?", "pt"),
        ("Comment fonctionne un moteur à hydrogène ?", "fr"),
        # No frequent word of any language: the one that knows more of its words than
        # English does; a name or a loanword is known everywhere.
        ("Woher stammen Maultaschen ursprünglich?", "de"),
        ("Bruno's kibble brand?", "en"),
        ("¿Qué diferencia hay entre un lago y una laguna?", "es"),
        # One frequent word another language also writes: English knows them all.
        ("van roof rack weight", "en"),
        ("Arzttermin – wann?", "de"),
        ("de fiets van mijn zus", "nl"),
    ],
)
def test_the_language_is_told_by_script_and_frequent_words(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_han_characters_in_a_japanese_question_are_read_in_both_languages() -> None:
    # "一番" (most) is everyday Japanese, rarer in Chinese; "作" alone is everyday Chinese:
    # read in one language only, either would look like a name memory holds.
    assert word_languages("一 番", "ja", "en") == ("ja", "zh")
    assert word_languages("一 番", "zh", "en") == ("zh",)
    assert word_languages("ラーメン", "ja", "en") == ("ja",)
    assert word_languages("sushi", "ja", "en") == ("en",)
    assert everyday_zipf("一 番", ("ja", "zh")) == zipf("一 番", "ja") > zipf("一 番", "zh")
    assert everyday_zipf("作", ("ja", "zh")) == zipf("作", "zh")


def test_an_english_form_the_word_lists_leave_out_is_as_everyday_as_its_stem() -> None:
    assert zipf("pricier", "en") == 0.0
    assert everyday_zipf("pricier", ("en",)) == zipf("pricey", "en") > 3
    assert everyday_zipf("mealybugs", ("en",)) == 0.0  # rare as its stem is


async def decide(message: str, language: str, similarity: float = 0.1):
    async def probe(names):
        return Evidence(similarity, REFERENCE)

    return await HeuristicGate().decide(message, GateContext(probe=probe, language=language))


@pytest.mark.parametrize(
    ("message", "language"),
    [
        ("Rappelle-moi le nom de mon vétérinaire.", "fr"),
        ("Напомни, как зовут мою сестру.", "ru"),
        # A task word ("教えて", tell/teach) beside pointing back at what was said.
        ("私の猫の名前、覚えてますか？教えてください。", "ja"),
        ("提醒我一下，我妹妹的生日是哪天？", "zh"),
        # A question of the user's own, though nothing stands out in memory.
        ("Wo habe ich letzten Sommer gezeltet?", "de"),
        ("¿Cómo se llamaba mi profe de guitarra?", "es"),
        # The pronoun dropped, the verb's ending says who.
        ("¿Dónde estacioné el coche ayer?", "es"),
        ("Onde deixei o guarda-chuva?", "pt"),
        ("Où est-ce que j'ai garé la voiture hier ?", "fr"),
        ("Какой сорт яблони я посадил?", "ru"),
        # "We" in two words.
        ("O que a gente comprou pro quarto?", "pt"),
        # The user's own people, named without "my".
        ("Wann hat Oma ihren Arzttermin?", "de"),
        # "again", asking to be reminded: of the user's own, or where the subject goes
        # unsaid.
        ("Wie hieß nochmal unser Restaurant in Bonn?", "de"),
        ("C'était quel jour déjà, mon déménagement ?", "fr"),
        ("Rappelle-moi le jour de notre déménagement.", "fr"),
        ("娘の習い事は何でしたか？", "ja"),
        ("아들이 다니는 학원 이름이 뭐였더라?", "ko"),
        ("周末上的是什么课来着？", "zh"),
    ],
)
async def test_pointing_back_or_asking_of_the_users_own_life_gets_memory_in_any_language(
    message: str, language: str
) -> None:
    decision = await decide(message, language)
    assert decision.section != "none", decision.reason


@pytest.mark.parametrize(
    ("message", "language"),
    [
        ("Écris un poème sur la mer.", "fr"),
        ("Переведи на английский: «Я люблю свою собаку».", "ru"),
        ("Pythonについて説明してください。", "ja"),
    ],
)
async def test_tasks_in_other_languages_stay_quiet(message: str, language: str) -> None:
    decision = await decide(message, language, similarity=0.9)
    assert decision.section == "none", decision.reason



def test_tell_me_asks_in_japanese_and_its_own_words_are_what_it_asks_about() -> None:
    shape = read_shape("私の勤め先を教えてください。", "ja")
    assert shape is not None and shape.question and shape.first_person and not shape.task
    # Memory is asked about its kanji and katakana, not about how it is asked.
    assert content_of("私の勤め先を教えてください。", "ja").split() == ["勤", "先", "。"]
    assert "请" not in content_of("请告诉我我的狗叫什么名字", "zh")
    assert content_of("Tell me my dog's name", "en") == "Tell me my dog's name"


async def test_tell_me_about_the_users_own_thing_gets_memory_where_memory_holds_it() -> None:
    async def probe(names):
        return Evidence(0.1, REFERENCE, words=dict.fromkeys(ALLERGY, 2), items=500)

    decision = await HeuristicGate().decide(
        "私のアレルギーを教えてください。", GateContext(probe=probe, language="ja"))
    assert decision.section == "episode", decision.reason


ALLERGY = ("ア レ", "レ ル", "ル ギ", "ギ ー")  # "アレルギー", as the search cuts it


async def test_a_piece_of_a_loanword_memory_does_not_hold_whole_is_no_word_of_the_users() -> None:
    async def probe(names):
        # "ッチ" of "ストレッチ" is held, as a piece of "マッチ" or "キッチン" would be.
        return Evidence(0.1, REFERENCE, words={"ス ト": 0, "ト レ": 0, "レ ッ": 0, "ッ チ": 2},
                        items=500)

    decision = await HeuristicGate().decide(
        "肩こりに効く、自分でできるストレッチある？", GateContext(probe=probe, language="ja"))
    assert not decision.reason.startswith("the user's own words"), decision.reason


@pytest.mark.parametrize(
    ("message", "language"),
    [
        # Knowledge anyone could ask.
        ("Warum ist Meerwasser salzig?", "de"),
        ("Как работает солнечная батарея?", "ru"),
        ("为什么冬天天黑得早？", "zh"),
        # An ending like a verb's, but no verb: an accent before it, or an article.
        ("¿Cuáles son los próximos eclipses de luna?", "es"),
        ("¿Qué hace un comité de empresa?", "es"),
        # Advice or an explanation anyone in the user's place would want, asked in the
        # first person.
        ("Почему я всегда хочу спать после обеда?", "ru"),
        ("Was sollte ich zu einem Vorstellungsgespräch anziehen?", "de"),
        ("¿Qué debería llevar para una excursión de un día?", "es"),
        ("Je pars à Lisbonne, qu'est-ce qu'il faut voir ?", "fr"),
        ("Comment je prépare un entretien annuel ?", "fr"),
        ("我总是失眠，有什么办法吗？", "zh"),
        ("肩こりを治すにはどうすればいいですか？", "ja"),
        ("자취할 때 식비를 줄이려면 어떻게 해야 해요?", "ko"),
    ],
)
async def test_questions_anyone_could_ask_stay_quiet_where_nothing_stands_out(
    message: str, language: str
) -> None:
    decision = await decide(message, language)
    assert decision.section == "none", decision.reason


async def test_a_pair_of_characters_across_words_names_nothing_in_a_question_about_the_world(
) -> None:
    async def probe(names):
        # "里的" is held in few items, but it is no word: it cuts across "家里" and "的".
        return Evidence(0.1, REFERENCE, words={"里 的": 1}, items=500)

    decision = await HeuristicGate().decide(
        "家里的绿萝为什么叶子发黄？", GateContext(probe=probe, language="zh"))
    assert decision.section == "none", decision.reason


@pytest.mark.parametrize(("message", "language", "piece", "commonness"), [
    ("『博士の愛した数式』の作者は誰？", "ja", "博 士", 4.7),
    ("『불편한 편의점』 작가가 누구야?", "ko", "불 편", 4.8),
    ("¿Quién escribió «La sombra del viento»?", "es", "sombra", 4.6),
])
async def test_a_piece_of_a_quoted_title_names_nothing_memory_holds(
    message: str, language: str, piece: str, commonness: float
) -> None:
    async def probe(names):
        return Evidence(0.1, REFERENCE, words={piece: 1}, commonness={piece: commonness},
                        items=500)

    decision = await HeuristicGate().decide(message, GateContext(probe=probe, language=language))
    assert decision.section == "none", decision.reason


def test_the_reference_prompts_are_the_same_requests_in_each_language() -> None:
    english = REFERENCE_PROMPTS["en"]
    assert {"de", "es", "fr", "pt", "ru", "zh", "ja", "ko"} <= set(REFERENCE_LANGUAGES)
    for language in REFERENCE_LANGUAGES:
        prompts = reference_prompts(language)
        assert len(prompts) == len(english) and len(set(prompts)) == len(prompts)
        assert language == "en" or not set(prompts) & set(english)
    # A language the gate has no requests in is measured against English ones.
    assert reference_prompts("sv") == english


async def test_a_particular_of_what_memory_holds_gets_memory_but_an_explanation_does_not(
) -> None:
    async def probe(names):
        # "zahnarzt" is no name (Zipf 3.5), but memory holds it in a single item.
        return Evidence(0.1, REFERENCE, words={"zahnarzt": 1}, items=500,
                        commonness={"zahnarzt": 3.5})

    gate = HeuristicGate()
    asked = await gate.decide(
        "Wann ist der Termin beim Zahnarzt?", GateContext(probe=probe, language="de"))
    assert asked.section == "episode", asked.reason
    explained = await gate.decide(
        "Warum tut ein Besuch beim Zahnarzt so weh?", GateContext(probe=probe, language="de"))
    assert explained.section == "none", explained.reason
    # Asked about the world, it is a topic memory happens to touch.
    topic = await gate.decide(
        "Was genau macht ein Zahnarzt bei einer Wurzelbehandlung?",
        GateContext(probe=probe, language="de"))
    assert topic.section == "none", topic.reason
    # A fragment with no question word looks up what it names.
    looked_up = await gate.decide(
        "Zahnarzt am Donnerstag?", GateContext(probe=probe, language="de"))
    assert looked_up.section == "episode", looked_up.reason


async def test_a_name_memory_holds_written_inside_a_sentence_gets_memory() -> None:
    async def probe(names):
        return Evidence(0.1, REFERENCE, words={"marta": 1, "boda": 40}, items=500,
                        commonness={"marta": 3.6, "boda": 4.2})

    gate = HeuristicGate()
    named = await gate.decide(
        "¿Y la boda de la prima Marta es en junio?", GateContext(probe=probe, language="es"))
    assert named.section == "episode", named.reason
    # Opening the sentence, a capital names nothing.
    opening = read_shape("Marta es un nombre bonito, ¿de dónde viene?", "es")
    assert opening is not None and "marta" not in opening.names
    # German writes every noun with a capital.
    german = read_shape("Wie lange hält sich Marmelade im Kühlschrank?", "de")
    assert german is not None and not german.names


@pytest.mark.parametrize(("message", "language"), [
    ("¿Sabes en qué año pintó Picasso el Guernica?", "es"),
    ("Rappelle-moi la différence entre « davantage » et « d'avantage ».", "fr"),
    ("Was ist nochmal die Hauptstadt von Neuseeland?", "de"),
    # The "mir" of a task opening the message is the one it is for.
    ("Erklär mir nochmal, wie der Satz des Pythagoras funktioniert.", "de"),
    ("Lembra-me outra vez: escreve-se 'há de' ou 'há-de'?", "pt"),
    ("Напомни, в каком году пала Берлинская стена?", "ru"),
    ("提醒我一下，氧化和还原的区别是什么？", "zh"),
    ("한국전쟁 정전협정 몇 년도였는지 기억나?", "ko"),
])
async def test_asked_to_be_reminded_of_the_world_it_points_back_at_nothing(
    message: str, language: str
) -> None:
    # "Remind me", "do you know", "again": of nothing of the user's own, and nothing of
    # it in memory.
    shape = read_shape(message, language)
    assert shape is not None and shape.reminded and not shape.recall and not shape.first_person
    decision = await decide(message, language)
    assert decision.section == "none", decision.reason


@pytest.mark.parametrize(("message", "language", "word"), [
    ("Wie hieß nochmal die Tierärztin in Herdern?", "de", "tierärztin"),
    ("comment elle s'appelait déjà, l'éducatrice de Pistache ?", "fr", "pistache"),
])
async def test_asked_to_be_reminded_of_a_thing_memory_holds_gets_memory(
    message: str, language: str, word: str
) -> None:
    # Memory holds the word in one item of 500; rarer than everyday words.
    async def probe(names):
        return Evidence(0.1, REFERENCE, words={word: 1}, items=500, commonness={word: 2.5})

    decision = await HeuristicGate().decide(message, GateContext(probe=probe, language=language))
    assert decision.section == "episode", decision.reason


def test_a_day_asked_is_a_particular_and_a_name_may_follow_an_elided_article() -> None:
    for message, language in [("МРТ колена, какое число?", "ru"),
                              ("Le mariage à Annecy, c'est quel jour ?", "fr")]:
        shape = read_shape(message, language)
        assert shape is not None and shape.particular
    # A name after an elided article is written inside the sentence.
    shape = read_shape("le brevet d'Hugo, c'était quels jours déjà ?", "fr")
    assert shape is not None and "hugo" in shape.names


@pytest.mark.parametrize(("message", "language"), [
    ("tengo la mampara de la ducha llena de cal, ¿cómo la limpio sin rayarla?", "es"),
    ("mon téléphone n'a plus de place, comment libérer de l'espace ?", "fr"),
    ("Мне 24, снимаю комнату за 15 тысяч. Как распределить бюджет?", "ru"),
    ("내 노트북이 또 느려졌어. 시작 프로그램 정리하는 법 알려줘.", "ko"),
])
def test_a_how_after_the_users_situation_asks_a_way_anyone_could_take(
    message: str, language: str
) -> None:
    shape = read_shape(message, language)
    assert shape is not None and shape.first_person and shape.general


def test_the_words_of_how_a_question_is_asked_are_not_asked_of_memory() -> None:
    assert content_of("¿Cuándo se inauguró el Museo del Prado?", "es").split() == [
        "¿", "se", "inauguró", "el", "Museo", "del", "Prado?"]
    assert "wann" not in content_of("Wann hat Oma Geburtstag?", "de").lower()


@pytest.mark.parametrize(
    ("message", "language"),
    [
        ("Ich bin 38, arbeite Teilzeit und habe zwei Kinder. Unser Auto ist zwölf Jahre alt. "
         "Welches Auto passt zu uns?", "de"),
        ("我今年三十岁。我在一家小公司做会计。老板想让我转去做销售。我该接受吗？", "zh"),
    ],
)
async def test_a_situation_told_at_length_in_any_language_needs_memory_to_stand_out(
    message: str, language: str
) -> None:
    # Memory holds the user's own words ("Welches Auto passt zu uns?" alone gets memory),
    # but the message already says what it needs.
    async def probe(names):
        return Evidence(0.3, REFERENCE, words={"auto": 2, "teilzeit": 1, "会 计": 1},
                        items=60, size=2000, commonness={"auto": 4.5, "teilzeit": 3.0,
                                                         "会 计": 4.0})

    decision = await HeuristicGate().decide(message, GateContext(probe=probe, language=language))
    assert decision.section == "none", decision.reason
    assert decision.reason.startswith("told in full")


@pytest.mark.parametrize(("text", "language"), [
    ("cuándo era la cita con la dermatóloga? no la encuentro en el calendario", "es"),
    ("c'était quoi le nom du garage? je dois rappeler", "fr"),
    ("女儿的钢琴老师叫什么？要给她发消息", "zh"),
])
def test_a_question_followed_by_a_short_reason_is_a_question(text: str, language: str) -> None:
    shape = read_shape(text, language)
    assert shape is not None and shape.question


def test_a_time_before_the_conversation_and_one_within_it_are_told_apart() -> None:
    before = read_shape("el otro día te conté lo de mi moto, ¿qué modelo era?", "es")
    within = read_shape("你刚才说的第二个地方叫什么？", "zh")
    assert before is not None and before.before_now and not before.within_now
    assert within is not None and within.within_now and not within.before_now
