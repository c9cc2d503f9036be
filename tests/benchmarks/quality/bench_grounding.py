"""Grounding, on a capable model's true facts and on facts of other conversations.

LoCoMo annotates each session with the first speaker's facts ("Caroline attended ..."), each
naming the utterances it was drawn from: true, well-formed facts of the kind a capable
core model writes. Each session's facts ("Caroline" written "User") go through grounding
(memory/distill/grounding.py) against the session as the proxy would distil it, and this
counts the share kept:

- *named*: each fact names its source turns, as the distillation prompt asks;
- *unnamed*: no turns named (a model that does not give them);
- per pairing of the conversation into turns: *consecutive* (utterances two by two, as
  `make eval` ingests LoCoMo: the first speaker is on either side) and *first speaker as
  user* (each of the first speaker's utterances a user message, the other's its reply).

Invented facts: each session is also given the facts of a session of another conversation
(the first speaker's name swapped in), with a turn picked at random named as the source:
fluent, plausible and false here. The share of those kept is grounding's false-acceptance.

Conversations are split tune/held by id (tests/benchmarks/quality/eval_datasets.py): the
constants were tuned on the first. Run from the repository root:
`python -m tests.benchmarks.quality.bench_grounding`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from mnemoproxy.memory.distill.grounding import ground
from mnemoproxy.memory.models import Distillation, FactDraft, SessionInput, Turn
from tests.benchmarks.quality.eval_datasets import locomo_pairs, split_of
from tests.support.data import locomo
from tests.support.report import run_as_script

Pairing = Callable[[locomo.LocomoSample, locomo.LocomoSession],
                   tuple[list[tuple[str, str]], dict[str, int]]]


def consecutive(sample: locomo.LocomoSample, session: locomo.LocomoSession
                ) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """Utterances two by two; each utterance's turn."""
    return locomo_pairs(session), {t.dia_id: t.index // 2 for t in session.turns}


def first_speaker_as_user(sample: locomo.LocomoSample, session: locomo.LocomoSession
                          ) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """Each of the first speaker's utterances opens a turn; the other's is its reply."""
    pairs: list[list[str]] = []
    where: dict[str, int] = {}
    for turn in session.turns:
        text = turn.labelled()
        if turn.speaker == sample.speaker_a:
            pairs.append([text, ""])
        elif pairs and not pairs[-1][1]:
            pairs[-1][1] = text
        else:
            pairs.append(["", text])
        where[turn.dia_id] = len(pairs) - 1
    return [(user, reply) for user, reply in pairs], where


def _as_user(text: str, name: str) -> str:
    return re.sub(rf"\b{re.escape(name)}\b", "User", text)


def measure(samples: list[locomo.LocomoSample], pairing: Pairing, others: list[Any]
            ) -> dict[str, Any]:
    kept = {"named": 0, "unnamed": 0, "invented": 0}
    total = {"named": 0, "unnamed": 0, "invented": 0}
    for sample in samples:
        for session in sample.sessions:
            pairs, where = pairing(sample, session)
            turns = SessionInput(sample.sample_id, str(session.number),
                                 [Turn(user, reply) for user, reply in pairs])
            facts = [(_as_user(text, sample.speaker_a),
                      tuple(sorted({where[d] for d in dia_ids if d in where})))
                     for text, dia_ids in session.sourced.get(sample.speaker_a, [])]
            rnd = random.Random(f"{sample.sample_id}/{session.number}")
            other, other_session = rnd.choice(
                [o for o in others if o[0].sample_id != sample.sample_id])
            invented = [(_as_user(text, other.speaker_a), (rnd.randrange(len(pairs)),))
                        for text, _ in other_session.sourced.get(other.speaker_a, [])]
            for kind, drafts in (("named", [FactDraft(t, source_turns=s) for t, s in facts]),
                                 ("unnamed", [FactDraft(t) for t, _ in facts]),
                                 ("invented", [FactDraft(t, source_turns=s)
                                               for t, s in invented])):
                out = ground(Distillation(pinned=drafts), turns)
                total[kind] += len(drafts)
                kept[kind] += len(out.pinned) + len(out.identity)
    return {f"{kind} kept": kept[kind] / max(1, total[kind]) for kind in kept} | {
        "facts": total["named"], "invented facts": total["invented"]}


def main() -> dict[str, Any]:
    samples = locomo.load()
    others = [(s, session) for s in samples for session in s.sessions]
    figures: dict[str, Any] = {}
    for split in ("tune", "held"):
        part = [s for s in samples if split_of(s.sample_id) == split]
        for name, pairing in (("consecutive", consecutive),
                              ("first speaker as user", first_speaker_as_user)):
            figures[f"{split}, {name}"] = measure(part, pairing, others)
    for row, values in figures.items():
        print(row, {k: round(v, 3) if isinstance(v, float) else v for k, v in values.items()})
    return figures


if __name__ == "__main__":
    run_as_script(main)
