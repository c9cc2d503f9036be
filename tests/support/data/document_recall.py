"""Look-alike manuals and questions that each one section answers, and how well memory
finds them through the HTTP API (search ranks, chat blocks, generic prompts kept quiet):
tests/benchmarks/quality/bench_documents.py at full size, its test at a small one."""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass
from typing import Any

import httpx

from tests.support.servers.fake_upstream import FakeUpstream

AGENT = "bench-docs"
NAMES = ["Orion", "Kestrel", "Basalt", "Juniper", "Marlin", "Tundra", "Saffron", "Cobalt",
         "Willow", "Nimbus", "Quarry", "Harrier", "Lumen", "Pioneer", "Zephyr", "Granite",
         "Hollis", "Vesper", "Talon", "Meridian", "Sable", "Aurora", "Bramble", "Falcon"]
KINDS = ["espresso machine", "air purifier", "robot vacuum", "bread maker", "dehumidifier",
         "pressure washer", "sous-vide cooker", "pellet stove"]
FILLER = ("Read every instruction in this manual before first use and keep it with the "
          "appliance. The manufacturer reserves the right to change the specifications "
          "without notice; the values here apply to units sold from this year on.")


@dataclass(frozen=True)
class Section:
    heading: str
    text: str  # with {product} and {value}
    questions: tuple[str, ...]  # with {product} and {value}
    values: tuple[str, ...]


SECTIONS = [
    Section("Warranty",
            "The {product} is covered for {value} months against defects in materials and "
            "workmanship. Claims go through the service desk with the proof of purchase.",
            ("What's the guarantee period on the {product}?",
             "How long is the {product} under warranty?"),
            ("12", "18", "24", "30", "36", "48", "60")),
    Section("Cleaning",
            "Rinse and descale the {product}'s internal filter every {value} weeks, more "
            "often with hard water. Use the cleaning tablets supplied in the box.",
            ("How often do I need to clean the filter of my {product}?",
             "Every how many weeks should the {product} be descaled?"),
            ("2", "3", "4", "6", "8", "10")),
    Section("Operating temperature",
            "Do not run the {product} in rooms warmer than {value} degrees Celsius: the "
            "thermal cut-out stops it and the motor may be damaged.",
            ("What is the hottest room the {product} can run in?",
             "Up to what temperature can I operate the {product}?"),
            ("30", "32", "35", "38", "40", "45")),
    Section("Support",
            "Our support line for the {product} answers on extension {value}, Monday to "
            "Friday from 8 am to 6 pm; have the serial number at hand.",
            ("Which phone extension do I dial for help with the {product}?",
             "How do I reach customer support for the {product} by phone?"),
            ("214", "387", "452", "519", "603", "748", "861", "935")),
    Section("Installation",
            "Leave at least {value} centimetres of free space between the {product} and any "
            "wall or cupboard so that air can circulate around the vents.",
            ("How much clearance does the {product} need from the wall?",
             "How far from the wall should I place the {product}?"),
            ("5", "10", "15", "20", "25", "30")),
    Section("Power",
            "At full load the {product} draws {value} watts from a standard socket; do not "
            "use an extension reel.",
            ("How much electricity does the {product} use?",
             "What is the power consumption of the {product} in watts?"),
            ("650", "900", "1200", "1450", "1800", "2100")),
    Section("Weight and size",
            "Packed, the {product} weighs {value} kilograms; lift it with two people when "
            "taking it out of the box.",
            ("How heavy is the {product}?",
             "What does the {product} weigh?"),
            ("4", "7", "9", "12", "16", "21")),
    Section("Error codes",
            "When the display of the {product} shows E{value}, the water tank is empty or "
            "badly seated: refill it and push it in until it clicks.",
            ("What does error E{value} mean on the {product}?",
             "My {product} shows E{value}, what should I do?"),
            ("11", "23", "37", "42", "58", "64", "79")),
]


@dataclass(frozen=True)
class Question:
    text: str
    title: str
    heading: str
    answer: str  # a phrase only the right section holds


def document_set(documents: int, seed: int = 7) -> tuple[list[tuple[str, str]], list[Question]]:
    """(title, Markdown) of each manual and the questions about them."""
    rng = random.Random(seed)
    docs: list[tuple[str, str]] = []
    questions: list[Question] = []
    for number in range(documents):
        product = f"{NAMES[number % len(NAMES)]} {rng.choice('XRSZ')}{number + 2}"
        kind = KINDS[number % len(KINDS)]
        title = f"{product} {kind} manual"
        chosen = rng.sample(SECTIONS, 6)
        lines = [f"# {title}", "", f"The {product} is a {kind} for the home.", ""]
        facts = []
        for section in chosen:
            value = rng.choice(section.values)
            text = section.text.format(product=product, value=value)
            lines += [f"## {section.heading}", "", text, "", FILLER, ""]
            facts.append((section, value, text))
        docs.append((title, "\n".join(lines)))
        for section, value, text in rng.sample(facts, 2):
            sentence = text.split(". ")[0]
            questions.append(Question(rng.choice(section.questions).format(
                product=product, value=value), title, section.heading, sentence))
    return docs, questions


def upload(client: httpx.Client, root: str, docs: list[tuple[str, str]]) -> float:
    started = time.perf_counter()
    for title, text in docs:
        response = client.post(f"{root}/agents/{AGENT}/documents", files={
            "file": (f"{title}.md", text.encode(), "text/markdown")})
        response.raise_for_status()
    return time.perf_counter() - started


def seed_history(client: httpx.Client, root: str) -> None:
    """A little conversation history, some of it on the same topics, to compete with."""
    turns = [
        ("My old espresso machine broke last week, the pump died.", "Sorry to hear that!"),
        ("I keep the air purifier in the bedroom at night.", "Good idea for allergies."),
        ("The warranty on my car ran out in March.", "That's annoying timing."),
        ("I called support three times about the router.", "Hope they fixed it."),
    ]
    for number, (user, assistant) in enumerate(turns):
        client.post(root + "/memory/ingest", json={
            "agent_id": AGENT, "conversation_id": f"h{number}",
            "turns": [{"user": user, "assistant": assistant}]}).raise_for_status()


def rank_of(results: list[dict[str, Any]], question: Question) -> int | None:
    for rank, result in enumerate(results, start=1):
        provenance = result.get("provenance", {})
        if result["kind"] == "document" and provenance.get("title") == question.title and (
            provenance.get("heading") == question.heading
        ):
            return rank
    return None


def measure(root: str, fake: FakeUpstream, docs: list[tuple[str, str]],
            questions: list[Question], prompts: list[str]) -> dict[str, Any]:
    with httpx.Client(timeout=120) as client:
        seed_history(client, root)
        upload_seconds = upload(client, root, docs)
        ranks: dict[str, list[int | None]] = {"documents": [], "all": []}
        for question in questions:
            for scope in ranks:
                body: dict[str, Any] = {"agent_id": AGENT, "query": question.text, "top_k": 10}
                if scope == "documents":
                    body["scope"] = "documents"
                found = client.post(root + "/memory/search", json=body).json()["results"]
                ranks[scope].append(rank_of(found, question))
        in_block = []
        sections = []
        latencies = []
        headers = {"X-Agent-Id": AGENT}
        for question in questions:
            started = time.perf_counter()
            response = client.post(root + "/v1/chat/completions", headers=headers, json={
                "model": "m", "messages": [{"role": "user", "content": question.text}]})
            latencies.append(time.perf_counter() - started)
            response.raise_for_status()
            sections.append(response.headers.get("x-memory-section"))
            sent = fake.requests[-1].json["messages"][-1]["content"]
            label = f"[{question.title} › {question.heading}]"
            in_block.append(question.answer in sent and label in sent)
        generic = []
        for prompt in prompts:
            response = client.post(root + "/v1/chat/completions", headers=headers, json={
                "model": "m", "messages": [{"role": "user", "content": prompt}]})
            generic.append(response.headers.get("x-memory-section", "none"))

    def recall(scope: str, k: int) -> float:
        hits = [r for r in ranks[scope] if r is not None and r <= k]
        return len(hits) / len(questions)

    return {
        "documents": len(docs),
        "questions": len(questions),
        "upload_seconds": round(upload_seconds, 2),
        "search_documents_recall@1": recall("documents", 1),
        "search_documents_recall@5": recall("documents", 5),
        "search_all_recall@1": recall("all", 1),
        "search_all_recall@5": recall("all", 5),
        "chats_with_a_block": sum(s not in (None, "none") for s in sections) / len(questions),
        "chats_whose_block_holds_the_answer": sum(in_block) / len(questions),
        "chat_p50_ms": statistics.median(latencies) * 1000,
        "generic_prompts": len(prompts),
        "generic_prompts_with_a_block": (
            sum(s != "none" for s in generic) / len(prompts) if prompts else None),
        "generic_prompts_with_a_document_block": (
            sum(s == "document" for s in generic) / len(prompts) if prompts else None),
    }
