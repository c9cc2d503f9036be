"""Public instruction sets as generic prompts for `make eval ARGS="--prompts FILE"`.

The sets are not part of the repository (their licences and sizes are their own): give
the files of a local copy and this writes them as JSON Lines of id, kind and prompt, an
instruction followed by its input after a blank line, as a user would paste it.

- Self-Instruct's human-written tasks: `human_eval/user_oriented_instructions.jsonl` (252)
  and `data/seed_tasks.jsonl` (175) of github.com/yizhongw/self-instruct;
- WizardLM's test set: `WizardLM/data/WizardLM_testset.jsonl` (218) of
  github.com/nlpxucan/WizardLM;
- Alpaca: `data/alpaca_5000.json` of github.com/tatsu-lab/stanford_alpaca, of which
  `--alpaca-sample` prompts are drawn with a fixed seed;
- Koala's test set, prompts users shared: `koala_test_set.jsonl` (180) of
  github.com/arnav-gudibande/koala-test-set;
- MT-Bench's first turns (the second ones refer back to the first answer):
  `fastchat/llm_judge/data/mt_bench/question.jsonl` (80) of github.com/lm-sys/FastChat.

    python -m tests.benchmarks.quality.public_prompts --self-instruct-user U.jsonl \\
        --self-instruct-seed S.jsonl --wizardlm W.jsonl --alpaca A.json --out prompts.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ALPACA_SEED = 20261127


def _prompt(instruction: str, given: str) -> str:
    return instruction.strip() + ("\n\n" + given.strip() if given.strip() else "")


def self_instruct(path: Path, kind: str) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        given = task["instances"][0]["input"] if task.get("instances") else ""
        yield {"id": f"pub-{task['id']}", "kind": kind,
               "prompt": _prompt(task["instruction"], given)}


def wizardlm(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        yield {"id": f"pub-wizardlm-{task['idx']}", "kind": "wizardlm",
               "prompt": task["Instruction"].strip()}


def alpaca(path: Path, sample: int) -> Iterator[dict[str, Any]]:
    tasks = json.loads(path.read_text(encoding="utf-8"))
    for index in sorted(random.Random(ALPACA_SEED).sample(range(len(tasks)), sample)):
        task = tasks[index]
        yield {"id": f"pub-alpaca-{index}", "kind": "alpaca",
               "prompt": _prompt(task["instruction"], task.get("input", ""))}


def koala(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        yield {"id": f"pub-{task['id']}", "kind": "koala", "prompt": task["prompt"].strip()}


def mt_bench(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        yield {"id": f"pub-mt-bench-{task['question_id']}", "kind": "mt_bench",
               "prompt": task["turns"][0].strip()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--self-instruct-user", type=Path)
    parser.add_argument("--self-instruct-seed", type=Path)
    parser.add_argument("--wizardlm", type=Path)
    parser.add_argument("--alpaca", type=Path)
    parser.add_argument("--alpaca-sample", type=int, default=600)
    parser.add_argument("--koala", type=Path)
    parser.add_argument("--mt-bench", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    options = parser.parse_args(argv)
    items: list[dict[str, Any]] = []
    if options.self_instruct_user:
        items += self_instruct(options.self_instruct_user, "self_instruct_user")
    if options.self_instruct_seed:
        items += self_instruct(options.self_instruct_seed, "self_instruct_seed")
    if options.wizardlm:
        items += wizardlm(options.wizardlm)
    if options.alpaca:
        items += alpaca(options.alpaca, options.alpaca_sample)
    if options.koala:
        items += koala(options.koala)
    if options.mt_bench:
        items += mt_bench(options.mt_bench)
    with options.out.open("w", encoding="utf-8") as out:
        for item in items:
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"{len(items)} prompts -> {options.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
