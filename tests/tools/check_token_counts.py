"""Our o200k_base counts against tiktoken's on every text at hand (a few minutes):

    python -m tests.tools.check_token_counts

every message, question and answer of the evaluation data (../shared/eval-data: LoCoMo,
the LongMemEval slice, the generic prompts) and every Unicode code point in contexts
where its class decides the pieces. tests/gate/test_gate_tokens.py checks a fixed sample of both.
"""

from __future__ import annotations

import json
import time

from mnemoproxy.gate.tokens.counter import count_tokens
from tests.support.data import locomo, longmemeval, tiktoken_reference
from tests.support.data.generic_prompts import VICUNA_PATH


def eval_texts() -> list[str]:
    texts: list[str] = []
    for sample in locomo.load():
        texts += [turn.text for turn in sample.turns]
        texts += [f"{question.question}\n{question.answer}" for question in sample.questions]
        texts += [fact for session in sample.sessions
                  for facts in session.observations.values() for fact in facts]
    for question in longmemeval.load():
        texts += [turn.content for session in question.sessions for turn in session.turns]
        texts.append(f"{question.question}\n{question.answer}")
    with VICUNA_PATH.open(encoding="utf-8") as lines:
        texts += [turn for line in lines for turn in json.loads(line)["turns"]]
    return list(dict.fromkeys(texts))  # each distinct text once


def compare(label: str, texts: list[str]) -> int:
    encoding = tiktoken_reference.o200k()
    started = time.perf_counter()
    differing = [t for t in texts if count_tokens(t) != len(encoding.encode_ordinary(t))]
    print(f"{label}: {len(texts):,} texts ({sum(map(len, texts)):,} characters) compared, "
          f"{len(differing)} differ ({time.perf_counter() - started:.0f} s)")
    for text in differing[:5]:
        print(f"  {text[:200]!r}")
    return len(differing)


def main() -> None:
    differing = compare("evaluation data", eval_texts())
    differing += compare("code points", tiktoken_reference.code_point_texts(range(0x110000)))
    raise SystemExit(1 if differing else 0)


if __name__ == "__main__":
    main()
