"""Document retrieval, measured through the public API.

    python -m tests.benchmarks.quality.bench_documents [--documents 20] [--embedding-backend B]

A document set built here: N Markdown manuals of made-up products, each with six of eight
section kinds (warranty, cleaning, temperature, support, installation, power, weight,
error codes) written from the same templates, so every section has a twin in every other
manual that differs only in the product's name and its values: the hard case for a
knowledge base. Each section also holds two sentences of filler shared by all manuals.
Two questions per manual (2N in all), each answerable from one section and worded unlike
it ("What's the guarantee period on the Orion X3?" against "is covered for 36 months").

Measured, on a proxy process in front of the fake upstream, everything uploaded through
POST /agents/{id}/documents:
- recall@1 / @5 of the right chunk through POST /memory/search (scope documents) and
  unscoped (chunks competing with a conversation history of the same agent);
- the share of chats (the question through /v1/chat/completions) whose memory block, as
  the upstream received it, holds the answer's value and the chunk's [title › section];
- the share of generic prompts (vicuna, 80) asked of the same agent that got a block.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from tests.support.data.document_recall import document_set, measure
from tests.support.data.generic_prompts import vicuna_prompts
from tests.support.servers.fake_upstream import FakeUpstream
from tests.support.servers.processes import proxy_process


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--embedding-backend", default="wordllama")
    parser.add_argument("--no-generic", action="store_true", help="skip the vicuna prompts")
    args = parser.parse_args(argv)
    docs, questions = document_set(args.documents)
    prompts = [] if args.no_generic else vicuna_prompts()
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeUpstream() as fake,
        proxy_process(fake.base_url, Path(tmp) / "data", "--embedding-backend",
                      args.embedding_backend) as root,
    ):
        figures = measure(root, fake, docs, questions, prompts)
    figures["embedding_backend"] = args.embedding_backend
    print(f"\ndocuments, embedding {args.embedding_backend}")
    for name, value in figures.items():
        print(f"{name:<42} {value:.3f}" if isinstance(value, float) else f"{name:<42} {value}")
    return figures


if __name__ == "__main__":
    main()
