"""Generic prompts: requests anyone could send, with no reference to the user's past (the
negatives of the relevance gate). Read from ../shared/eval-data/ when it is there."""

from __future__ import annotations

import json
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
VICUNA_PATH = REPO_ROOT.parent / "shared" / "eval-data" / "vicuna_questions.jsonl"


def vicuna_prompts(path: Path = VICUNA_PATH) -> list[str]:
    """The 80 Vicuna-bench questions (the first turn of each); [] when the file is absent."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["turns"][0] for line in lines if line.strip()]
