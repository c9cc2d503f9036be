"""The gate beyond English: which language a message is in, and its decision read through
that language's lexicon (gate/relevance/languages.py)."""

from __future__ import annotations

import pytest

from mnemoproxy.gate.relevance import GateContext, HeuristicGate
from mnemoproxy.gate.relevance.languages import content_of, read_shape
from mnemoproxy.gate.relevance.types import Evidence
from mnemoproxy.memory.text.language import detect_language

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
    ],
)
def test_the_language_is_told_by_script_and_frequent_words(text: str, language: str) -> None:
    assert detect_language(text) == language


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
    ],
)
async def test_pointing_back_at_what_was_said_gets_memory_in_any_language(
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
        return Evidence(0.1, REFERENCE, words={"ア レ": 2, "レ ル": 2}, items=500)

    decision = await HeuristicGate().decide(
        "私のアレルギーを教えてください。", GateContext(probe=probe, language="ja"))
    assert decision.section == "episode", decision.reason
