"""The write- and read-side benchmark scripts run end to end at tiny sizes, as `python -m`
runs them, and their figures render as Markdown. Timings are not checked: only that the
scripts measure what they claim (memory questions inject, plain prompts do not, ingested
turns get embedded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.blackbox import Evidence, fenced_block, norm
from tests.support.data import locomo
from tests.support.report import FIGURES_FILE_ENV, markdown


def run_benchmark(module: str, *args: str, folder: Path) -> dict[str, Any]:
    """`python -m tests.benchmarks.<module> args`; the figures it wrote."""
    figures = folder / f"{module}.json"
    env = {**os.environ, FIGURES_FILE_ENV: str(figures)}
    done = subprocess.run([sys.executable, "-m", f"tests.benchmarks.{module}", *args],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(figures.read_text(encoding="utf-8"))
    return result


def test_read_path_benchmark_times_memory_questions_and_plain_prompts(tmp_path: Path) -> None:
    figures = run_benchmark("memory.bench_read_path", "--sizes", "300", "--rounds", "1",
                            folder=tmp_path)

    rows = {row["messages"]: row for row in figures["latency"]}
    assert rows["memory question"]["injected"] == 1.0
    assert rows["plain prompt"]["injected"] == 0
    assert rows["all"]["calls"] == rows["memory question"]["calls"] * 2 == 20
    assert figures["seeding"][0]["items"] == 300
    assert len(figures["summary"]) == 3  # the two kinds' p50, the loop's stall
    assert 0 <= figures["seeding"][0]["stall_p50_ms"] <= figures["seeding"][0]["stall_max_ms"]


def test_ingest_benchmark_waits_for_embeddings_and_times_recording(tmp_path: Path) -> None:
    figures = run_benchmark(
        "relay.bench_ingest", "--conversations", "2", "--turns", "5", "--requests", "3",
        "--embed-seconds", "0.1", "--rounds", "2", folder=tmp_path,
    )

    ingest = figures["ingest"]
    assert ingest["turns"] == 10
    assert len(ingest["rounds_turns_per_s"]) == 2 and min(ingest["rounds_turns_per_s"]) > 0
    assert ingest["embedded_items"] >= 2 * ingest["turns"] + ingest["episodes"]
    assert figures["recording"]["gate_said_none"] == "3/3"
    assert figures["embedder"]["texts_per_s"] > 0


def test_figures_render_as_markdown_tables() -> None:
    lines = markdown({
        "items": 1200,
        "rows": [{"mode": "stream", "p50_ms": 1.234}, {"mode": "json", "p50_ms": 250.0}],
        "by_name": {"bm25": {"recall": 0.5}},
    })

    assert "| items | 1,200 |" in lines
    assert "| stream | 1.23 |" in lines
    assert "| json | 250 |" in lines
    assert "| bm25 | 0.50 |" in lines


@pytest.mark.skipif(not locomo.available(), reason=locomo.unavailable_message())
def test_memory_eval_reads_blocks_through_the_http_api_and_leaves_memory_as_ingested(
    tmp_path: Path,
) -> None:
    figures = run_benchmark(
        "quality.eval_memory", "--datasets", "locomo", "--modes", "transcript", "--limit", "1",
        "--out", "", folder=tmp_path,
    )

    [overall] = figures["summary"]
    assert overall["questions"] == 4  # one per category 1-4
    assert overall["got_memory"] > 0
    assert 0 < overall["evidence_mean"] <= 1
    assert overall["deadline_misses"] == 0
    [run] = figures["runs"]
    assert run["transcript_messages"] == 2 * run["turns"]
    assert run["messages_added_by_asking"] == 0


def test_memory_eval_finds_the_block_wherever_it_was_injected() -> None:
    inside = "\n- [2024-05-08] user: I live in Berlin\n"
    block = f"<recalled_memory>{inside}</recalled_memory>"
    as_prefix = [{"role": "user", "content": f"{block}\n\nWhere do I live?"}]
    as_system = [{"role": "system", "content": [{"type": "text", "text": block}]},
                 {"role": "user", "content": "Where do I live?"}]

    assert fenced_block(as_prefix) == fenced_block(as_system) == inside
    assert fenced_block([{"role": "user", "content": "Where do I live?"}]) is None


def test_memory_eval_finds_evidence_by_any_sixty_character_excerpt() -> None:
    turn = Evidence(norm(
        "Thanks!  By the way, I moved to Paris last spring with my two cats and a piano."
    ))
    block = norm(
        "- user: … the way, I moved to Paris last spring with my two cats and a piano."
    )

    assert turn.found(block)
    assert not turn.found(norm("- user: I moved to Paris last spring."))
    assert Evidence("thanks! sure.").found("user: thanks! sure. bye")



def test_public_instruction_sets_become_generic_prompts(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t1", "instruction": "Fix the grammar.", "instances": [
        {"input": "me and him goes home", "output": "He and I go home."}]}) + "\n")
    wizard = tmp_path / "wizard.jsonl"
    wizard.write_text(json.dumps({"idx": 7, "Instruction": "Explain tides."}) + "\n")
    alpaca = tmp_path / "alpaca.json"
    alpaca.write_text(json.dumps([{"instruction": f"Name a colour ({n}).", "input": ""}
                                  for n in range(5)]))
    out = tmp_path / "prompts.jsonl"
    subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.quality.public_prompts",
         "--self-instruct-user", str(tasks), "--wizardlm", str(wizard), "--alpaca", str(alpaca),
         "--alpaca-sample", "2", "--out", str(out)],
        check=True, capture_output=True, timeout=120)

    items = [json.loads(line) for line in out.read_text().splitlines()]
    assert items[0] == {"id": "pub-t1", "kind": "self_instruct_user",
                        "prompt": "Fix the grammar.\n\nme and him goes home"}
    assert items[1] == {"id": "pub-wizardlm-7", "kind": "wizardlm", "prompt": "Explain tides."}
    assert [item["kind"] for item in items[2:]] == ["alpaca", "alpaca"]


def test_koala_and_mt_bench_become_generic_prompts(tmp_path: Path) -> None:
    koala = tmp_path / "koala.jsonl"
    koala.write_text(json.dumps({"id": "koala_3", "prompt": " Proofread this. "}) + "\n")
    mt_bench = tmp_path / "mt_bench.jsonl"
    mt_bench.write_text(json.dumps({"question_id": 81, "category": "writing", "turns": [
        "Write a travel blog post.", "Rewrite your previous response."]}) + "\n")
    out = tmp_path / "prompts.jsonl"
    subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.quality.public_prompts",
         "--koala", str(koala), "--mt-bench", str(mt_bench), "--out", str(out)],
        check=True, capture_output=True, timeout=120)

    items = [json.loads(line) for line in out.read_text().splitlines()]
    assert items == [
        {"id": "pub-koala_3", "kind": "koala", "prompt": "Proofread this."},
        # Only the first turn: the second refers back to an answer not given here.
        {"id": "pub-mt-bench-81", "kind": "mt_bench", "prompt": "Write a travel blog post."},
    ]
