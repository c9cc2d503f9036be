"""The gate beyond English through a real proxy (the default embedder): a question of the
user's own gets their memory in German and Chinese, and a question anyone could ask in the
same language (knowledge, advice) gets none, measured against requests in its language."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.memory_client import post, serving_histories
from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.proxy_server import ProxyServer

HISTORIES: dict[str, list[tuple[str, str]]] = {
    "greta": [
        ("Ich lerne seit März Cello, jeden Dienstag bei Frau Albers in Leipzig.",
         "Schön, bleib dran!"),
        ("Kannst du mir ein Rezept für Kartoffelsuppe geben?",
         "Kartoffeln, Lauch, Möhren und Brühe, zwanzig Minuten kochen."),
        ("Unser Kater Fridolin frisst seit gestern nur noch Trockenfutter.",
         "Beobachte, ob er genug trinkt."),
        ("Wir haben im Oktober ein Lastenrad für die Kinder gekauft.", "Viel Spaß damit!"),
        ("Wie lange braucht ein Brief nach Italien?", "Meist drei bis fünf Werktage."),
    ],
    "mei": [
        ("我女儿今年九月开始在实验小学上一年级了。", "恭喜！"),
        ("帮我想一个周末去郊游的地方。", "可以去植物园或者湿地公园。"),
        ("我每周四晚上去学游泳，教练姓王。", "坚持下去！"),
        ("我们家上个月买了一台洗碗机。", "可以省不少时间。"),
        ("高铁票怎么改签？", "在购票软件里选择改签即可。"),
    ],
}


@pytest.fixture(scope="module")
def languages_proxy(
    _fake_upstream_server: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProxyServer]:
    with serving_histories(_fake_upstream_server, tmp_path_factory.mktemp("languages"), HISTORIES,
                           embedding_backend="wordllama") as server:
        yield server


def preview(server: ProxyServer, agent: str, question: str) -> dict[str, Any]:
    response = post(server, "/memory/preview", {
        "agent_id": agent, "messages": [{"role": "user", "content": question}]})
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.mark.parametrize(
    ("agent", "question", "said"),
    [
        ("greta", "Bei wem habe ich Unterricht?", "Albers"),
        ("greta", "Was für ein Rad haben wir uns zugelegt?", "Lastenrad"),
        ("mei", "我女儿上几年级？", "实验小学"),
        ("mei", "我的游泳教练姓什么？", "王"),
    ],
)
def test_a_question_of_the_users_own_gets_their_memory(
    languages_proxy: ProxyServer, agent: str, question: str, said: str
) -> None:
    shown = preview(languages_proxy, agent, question)
    assert said in str(shown["block"] or ""), shown["decision"]


@pytest.mark.parametrize(
    ("agent", "question"),
    [
        ("greta", "Warum leuchten Glühwürmchen?"),
        ("greta", "Was sollte ich bei einer Erkältung essen?"),
        ("mei", "为什么秋天树叶会变黄？"),
        ("mei", "怎么才能提高英语口语？"),
    ],
)
def test_a_question_anyone_could_ask_in_the_same_language_gets_none(
    languages_proxy: ProxyServer, agent: str, question: str
) -> None:
    shown = preview(languages_proxy, agent, question)
    assert shown["block"] is None, shown["decision"]
