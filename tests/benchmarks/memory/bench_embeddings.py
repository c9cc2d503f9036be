"""LocalEmbedder speed (texts/second), memory and LoCoMo dense retrieval recall, to pick the
default.

Speed: each local embedder on short (~10 words) and long (~120 words) texts, called with
batches of 256, of 64, and one text per call, and per CPU second in batches of 256 (less
sensitive to other work on the machine). Texts are LoCoMo turns when the data set is
present, generated sentences otherwise. Model loading is timed apart, not in the rates.
MiniLM and multilingual limit BLAS to one thread (BLAS_THREADS in their modules).

Memory: each embedder in a fresh process: resident MiB once its model is loaded, and its
peak after embedding 256 long texts, above the same process before the model.

Quality: per LoCoMo conversation, every turn embedded as "speaker: text" (and again with
the session date in front), every category 1-4 question embedded, exact cosine top-k over
that conversation's turns; recall@k = share of a question's evidence turns in its top k.

Timings are wall-clock on a shared 2-core machine where others run tests: noisy.

    python -m tests.benchmarks.memory.bench_embeddings            # everything (~8 min)
    python -m tests.benchmarks.memory.bench_embeddings --quick    # 2 conversations, fewer texts
    python -m tests.benchmarks.memory.bench_embeddings --backends wordllama hashing
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemoproxy.memory.embedders import LocalEmbedder, make_embedder
from tests.support.data import locomo
from tests.support.report import publish

RESULTS_FILE = Path(__file__).parents[1] / "results" / "embeddings.txt"
BACKENDS = ("hashing", "wordllama", "minilm", "multilingual")
CALL_SIZES = (256, 64, 1)
TOP_K = (5, 10)
SHORT_WORDS, LONG_WORDS = 10, 120
_FALLBACK_SENTENCES = (
    "we talked about the trip to the lake",
    "my sister said the new job in Berlin starts next month",
    "so I bought paint for the nursery",
)


def _word_pool() -> list[str]:
    """Sentences to cut texts from: LoCoMo turns, else a seeded generated stand-in."""
    if locomo.available():
        return [turn.text for sample in locomo.load() for turn in sample.turns]
    rng = random.Random(7)
    words = " ".join(_FALLBACK_SENTENCES).split()
    return [" ".join(rng.choices(words, k=rng.randint(5, 25))) for _ in range(2_000)]


def _texts(pool: list[str], words: int, count: int, rng: random.Random) -> list[str]:
    """`count` texts of about `words` words: consecutive pool sentences joined, then cut."""
    texts: list[str] = []
    while len(texts) < count:
        start = rng.randrange(len(pool))
        chunk: list[str] = []
        for sentence in pool[start:]:
            chunk += sentence.split()
            if len(chunk) >= words:
                break
        if len(chunk) >= words * 0.8:
            texts.append(" ".join(chunk[:words]))
    return texts


def embedding_rates(
    embedder: LocalEmbedder, texts: list[str], per_call: int, min_seconds: float
) -> tuple[float, float]:
    """Texts per second and per CPU second of this process, calling with `per_call` texts
    (cycling through them) for at least `min_seconds`: on a busy machine one lost scheduler
    slice would skew a short run."""
    done, started, cpu_started = 0, time.perf_counter(), time.process_time()
    while done == 0 or time.perf_counter() - started < min_seconds:
        start = done % len(texts)
        chunk = texts[start : start + per_call]
        embedder.encode(chunk)
        done += len(chunk)
    cpu = max(time.process_time() - cpu_started, 1e-9)
    return done / (time.perf_counter() - started), done / cpu


def embedding_rate(
    embedder: LocalEmbedder, texts: list[str], per_call: int, min_seconds: float
) -> float:
    """Texts per second (see embedding_rates)."""
    return embedding_rates(embedder, texts, per_call, min_seconds)[0]


def measure_speed(
    embedders: dict[str, LocalEmbedder], texts_per_cell: int, min_seconds: float
) -> list[dict[str, Any]]:
    pool = _word_pool()
    rng = random.Random(11)
    corpora = {
        "short": _texts(pool, SHORT_WORDS, texts_per_cell, rng),
        "long": _texts(pool, LONG_WORDS, texts_per_cell, rng),
    }
    rows = []
    for backend, embedder in embedders.items():
        started = time.perf_counter()
        embedder.encode(["load the model before the clock starts"])
        load_s = time.perf_counter() - started
        for length, texts in corpora.items():
            # One untimed pass, so no column pays for first-touch costs (hashing's feature
            # cache, tokenizer and allocator warm-up) that the others then skip.
            embedder.encode(texts)
            rates = {
                size: embedding_rates(embedder, texts, size, min_seconds) for size in CALL_SIZES
            }
            rows.append(
                {
                    "backend": backend,
                    "length": length,
                    "load_s": load_s,
                    **{f"per_call_{size}": wall for size, (wall, _) in rates.items()},
                    "per_cpu_s_256": rates[CALL_SIZES[0]][1],
                }
            )
    return rows


_MEMORY_PROBE = """
import json, sys
from pathlib import Path

def resident_mib():
    status = Path("/proc/self/status").read_text().split("\\n")
    fields = dict(line.split(":", 1) for line in status if ":" in line)
    return {k: int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM")}

from mnemoproxy.memory.embedders import make_embedder
texts = json.loads(sys.stdin.read())
embedder = make_embedder(sys.argv[1])
before = resident_mib()
embedder.encode(texts[:1])
loaded = resident_mib()
embedder.encode(texts)
after = resident_mib()
print(json.dumps({"loaded_mib": loaded["VmRSS"] - before["VmRSS"],
                  "peak_mib": after["VmHWM"] - before["VmRSS"]}))
"""


def measure_memory(backends: Sequence[str], texts: list[str]) -> list[dict[str, Any]]:
    """Each backend in a process of its own: the model's resident memory once loaded, and
    the process's peak after embedding `texts` in one call, above the same process with the
    package imported but no model loaded."""
    rows = []
    for backend in backends:
        probe = subprocess.run(
            [sys.executable, "-c", _MEMORY_PROBE, backend], input=json.dumps(texts),
            capture_output=True, text=True, timeout=600, check=True,
        )
        rows.append({"backend": backend, "texts": len(texts),
                     **json.loads(probe.stdout.strip().splitlines()[-1])})
    return rows


def _recall(
    question_vectors: np.ndarray, turn_vectors: np.ndarray, evidence: list[list[int]]
) -> dict[int, list[float]]:
    order = np.argsort(-(question_vectors @ turn_vectors.T), axis=1)
    return {
        k: [
            len(set(order[q, :k].tolist()) & set(wanted)) / len(wanted)
            for q, wanted in enumerate(evidence)
        ]
        for k in TOP_K
    }


def measure_recall(
    embedders: dict[str, LocalEmbedder], conversations: int | None
) -> list[dict[str, Any]]:
    samples = locomo.load()[:conversations]
    variants: dict[str, Callable[[locomo.LocomoTurn], str]] = {
        "speaker: text": lambda turn: turn.labelled(),
        "date + speaker: text": lambda turn: f"{turn.at:%d %B %Y}: {turn.labelled()}",
    }
    rows = []
    for backend, embedder in embedders.items():
        for variant, render in variants.items():
            started = time.perf_counter()
            recalls: dict[int, list[float]] = {k: [] for k in TOP_K}
            for sample in samples:
                turns = sample.turns
                position = {turn.dia_id: index for index, turn in enumerate(turns)}
                questions = [
                    q
                    for q in sample.questions
                    if q.category in locomo.RETRIEVAL_CATEGORIES and q.evidence
                ]
                turn_vectors = embedder.encode([render(turn) for turn in turns])
                question_vectors = embedder.encode([q.question for q in questions])
                evidence = [[position[dia_id] for dia_id in q.evidence] for q in questions]
                for k, values in _recall(question_vectors, turn_vectors, evidence).items():
                    recalls[k] += values
            rows.append(
                {
                    "backend": backend,
                    "variant": variant,
                    "questions": len(recalls[TOP_K[0]]),
                    **{f"recall@{k}": float(np.mean(recalls[k])) for k in TOP_K},
                    "seconds": time.perf_counter() - started,
                }
            )
    return rows


def _table(
    speed: list[dict[str, Any]],
    memory: list[dict[str, Any]],
    recall: list[dict[str, Any]],
    note: str,
) -> str:
    lines = [
        f"LocalEmbedder speed, texts/second (shared 2-core machine: noisy){note}",
        f"{'backend':<13}{'texts':<7}{'load s':>8}"
        + "".join(f"{f'{size}/call':>11}" for size in CALL_SIZES)
        + f"{'256/CPU s':>11}",
    ]
    lines += [
        f"{r['backend']:<13}{r['length']:<7}{r['load_s']:>8.2f}"
        + "".join(f"{r[f'per_call_{size}']:>11.0f}" for size in CALL_SIZES)
        + f"{r['per_cpu_s_256']:>11.0f}"
        for r in speed
    ]
    lines += [
        "",
        f"Resident memory, MiB above the process without a model (peak: after "
        f"{len(memory) and memory[0]['texts']} long texts in one call){note}",
        f"{'backend':<13}{'loaded':>8}{'peak':>8}",
    ]
    lines += [f"{r['backend']:<13}{r['loaded_mib']:>8.0f}{r['peak_mib']:>8.0f}" for r in memory]
    if recall:
        lines += [
            "",
            f"LoCoMo dense retrieval, categories 1-4, exact cosine{note}",
            f"{'backend':<13}{'turn text':<22}{'questions':>10}"
            + "".join(f"{f'R@{k}':>8}" for k in TOP_K)
            + f"{'secs':>8}",
        ]
        lines += [
            f"{r['backend']:<13}{r['variant']:<22}{r['questions']:>10}"
            + "".join(f"{r[f'recall@{k}']:>8.3f}" for k in TOP_K)
            + f"{r['seconds']:>8.0f}"
            for r in recall
        ]
    else:
        lines += ["", locomo.unavailable_message()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="*", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument(
        "--quick", action="store_true", help="2 conversations and 64 texts per speed cell"
    )
    args = parser.parse_args(argv)
    embedders = {backend: make_embedder(backend) for backend in args.backends}
    speed = measure_speed(embedders, 64 if args.quick else 256, 0.5 if args.quick else 3.0)
    long_texts = _texts(_word_pool(), LONG_WORDS, 256, random.Random(13))
    memory = measure_memory(args.backends, long_texts)
    recall = measure_recall(embedders, 2 if args.quick else None) if locomo.available() else []
    table = _table(speed, memory, recall, " [--quick]" if args.quick else "")
    publish(table, RESULTS_FILE)
    return {"speed": speed, "memory": memory, "recall": recall}


if __name__ == "__main__":
    main()
