"""The proxy's Prometheus metrics (prometheus-client), as GET /metrics exports them.

Two sources:
- What the proxy sees as it serves: responses by route and status, the upstream's
  latency to its response headers, the memory read's latency and outcome, the tokens it
  injected, the gate's decisions. These are prometheus-client counters and histograms
  whose label children are bound in advance, so the chat path pays about a microsecond
  a metric.
- What memory holds and did: items by kind, turns waiting for distillation or
  dead-lettered, distillations by outcome, core-model tokens by purpose and the daily
  cap. memory/ keeps plain counters and knows nothing of Prometheus; `MemoryCollector`
  turns the `Memory.health()` snapshot taken at scrape time into metrics.

Each app has a registry of its own: tests build many apps in one process, and the global
registry refuses a metric registered twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from litestar.types import Message, Scope
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from mnemoproxy.gate import SECTIONS

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
# Routes are labelled by their template (/agents/{agent_id}/facts), never the raw path: a
# series per agent id would grow without bound. A request no route matches (404, 405) is
# "unmatched".
UNMATCHED = "unmatched"
CHAT_ROUTE = "/v1/chat/completions"
PASS_THROUGH_ROUTE = "/v1/{path}"
READ_OUTCOMES = ("injected", "not_needed", "deadline_missed", "failed")
# Distillation outcomes shown at 0 before they first happen (memory may report others).
DISTILL_OUTCOMES = ("distilled", "fallback", "failed", "dead_lettered", "deferred",
                    "nothing_pending")
# A read takes milliseconds, with a deadline of up to 30 s; an upstream answers a whole
# completion in seconds to minutes, a stream's headers in milliseconds.
READ_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
UPSTREAM_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
                    300, 600)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._responses = Counter(
            "mnemoproxy_requests", "HTTP requests answered, by route template and status.",
            ["route", "status"], registry=self.registry,
        )
        self._response_series: dict[tuple[str, int], Any] = {}
        upstream = Histogram(
            "mnemoproxy_upstream_seconds",
            "Seconds from sending a request upstream to its response headers, by route.",
            ["route"], buckets=UPSTREAM_BUCKETS, registry=self.registry,
        )
        self.upstream = {route: upstream.labels(route) for route in (CHAT_ROUTE,
                                                                      PASS_THROUGH_ROUTE)}
        self.read_seconds = Histogram(
            "mnemoproxy_memory_read_seconds",
            "Seconds a chat request with an agent waited for its memory (gate, search, "
            "block), missed deadlines and failures included.",
            buckets=READ_BUCKETS, registry=self.registry,
        )
        self._reads = Counter(
            "mnemoproxy_memory_reads", "Chat requests with an agent, by what memory did.",
            ["outcome"], registry=self.registry,
        )
        self.reads = {outcome: self._reads.labels(outcome) for outcome in READ_OUTCOMES}
        self.injected_tokens = Counter(
            "mnemoproxy_injected_tokens", "Tokens of memory added to upstream requests.",
            registry=self.registry,
        )
        gate = Counter(
            "mnemoproxy_gate_decisions",
            "The relevance gate's decision for each memory read, by section (none: no "
            "memory needed).",
            ["section"], registry=self.registry,
        )
        self.gate_decisions = {section: gate.labels(section) for section in SECTIONS}
        self.memory = MemoryCollector()
        self.registry.register(self.memory)

    async def count_response(self, message: Message, scope: Scope) -> None:
        """Litestar's before_send hook: each response counted once, at its start."""
        if message["type"] != "http.response.start":
            return
        key = (_route_of(scope), message["status"])
        series = self._response_series.get(key)
        if series is None:
            series = self._response_series[key] = self._responses.labels(key[0], str(key[1]))
        series.inc()

    def read_counts(self) -> dict[str, int]:
        """The reads by outcome and the tokens injected, as /health shows them."""
        counts = {outcome: 0 for outcome in READ_OUTCOMES}
        for family in self._reads.collect():
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    counts[sample.labels["outcome"]] = int(sample.value)
        injected = next(s.value for family in self.injected_tokens.collect()
                        for s in family.samples if s.name.endswith("_total"))
        return {**counts, "injected_tokens": int(injected)}

    def exposition(self, health: dict[str, Any] | None) -> bytes:
        """Every metric in Prometheus' text format; `health` is Memory.health() with
        Memory.activity() (None: memory is off)."""
        self.memory.health = health  # nothing awaits in between: no other scrape sees it
        try:
            return generate_latest(self.registry)
        finally:
            self.memory.health = None


def _route_of(scope: Scope) -> str:
    """The template of the route that answered (a mounted app, /mcp, has only its path)."""
    template = scope.get("path_template")
    if template:
        return str(template)
    handler = scope.get("route_handler")
    return min(handler.paths) if handler is not None else UNMATCHED


# Memory.health()'s store fields exported as gauges: (field, metric, label or None, help).
_STORE_GAUGES = (
    ("agents", "mnemoproxy_agents", None, "Agents memory holds."),
    ("transcript_messages", "mnemoproxy_items", ("kind", "messages"), "Items in memory, by kind."),
    ("facts", "mnemoproxy_items", ("kind", "facts"), ""),
    ("episodes", "mnemoproxy_items", ("kind", "episodes"), ""),
    ("embedded_items", "mnemoproxy_embedded_items", None, "Items with a vector."),
    ("embedding_failures", "mnemoproxy_embedding_failures", None,
     "Items the embedder could not embed (found by their words only)."),
    ("pending_signals", "mnemoproxy_turns_to_distil", ("state", "pending"),
     "Turns waiting for distillation, and dead-lettered ones."),
    ("dead_signals", "mnemoproxy_turns_to_distil", ("state", "dead"), ""),
    ("records_in_flight", "mnemoproxy_records_in_flight", None,
     "Chat turns being stored after their reply went out."),
)


class MemoryCollector:
    """Memory's numbers at scrape time, from the health snapshot `Metrics.exposition` sets
    just before rendering (None: memory is off, nothing to export)."""

    def __init__(self) -> None:
        self.health: dict[str, Any] | None = None

    def collect(self) -> Iterator[Metric]:
        health = self.health
        if health is None:
            return
        yield from _store_gauges(health)
        waited = CounterMetricFamily(
            "mnemoproxy_records_waited_out",
            "Replies that waited past the read deadline for their turn to be stored (the "
            "store is behind).",
        )
        waited.add_metric([], health.get("records_waited_out", 0))
        yield waited
        distillations = CounterMetricFamily(
            "mnemoproxy_distillations",
            "Session distillations by outcome (fallback: distilled by the rules because the "
            "core model was capped for the day).", labels=["outcome"],
        )
        done = health.get("distillations", {})
        for outcome in dict.fromkeys([*DISTILL_OUTCOMES, *done]):
            distillations.add_metric([outcome], done.get(outcome, 0))
        yield distillations
        yield from _core_model(health.get("core_model", {}))


def _store_gauges(health: dict[str, Any]) -> Iterator[Metric]:
    families: dict[str, GaugeMetricFamily] = {}
    for field, name, label, text in _STORE_GAUGES:
        if name not in families:
            families[name] = GaugeMetricFamily(name, text, labels=[label[0]] if label else [])
        families[name].add_metric([label[1]] if label else [], health.get(field, 0))
    yield from families.values()


def _core_model(status: dict[str, Any]) -> Iterator[Metric]:
    tokens = CounterMetricFamily(
        "mnemoproxy_core_model_tokens",
        "Core-model tokens used since start-up, as the server reported them, by purpose "
        "(distill, relevance_gate) and type (prompt, completion).", labels=["purpose", "type"],
    )
    for purpose, parts in status.get("tokens", {}).items():
        for part, count in parts.items():
            tokens.add_metric([purpose, part], count)
    yield tokens
    refused = CounterMetricFamily(
        "mnemoproxy_core_model_refused_calls",
        "Core-model calls not sent because core_model_daily_tokens was reached (the rules "
        "or the heuristic stood in), by purpose.", labels=["purpose"],
    )
    for purpose, count in status.get("refused_calls", {}).items():
        refused.add_metric([purpose], count)
    yield refused
    yield GaugeMetricFamily("mnemoproxy_core_model_tokens_today",
                            "Core-model tokens used today (UTC).",
                            value=status.get("tokens_today", 0))
    yield GaugeMetricFamily("mnemoproxy_core_model_daily_tokens",
                            "The daily cap, core_model_daily_tokens (0: none).",
                            value=status.get("daily_tokens", 0))
    yield GaugeMetricFamily("mnemoproxy_core_model_capped",
                            "1 while today's core-model tokens have reached the cap.",
                            value=1 if status.get("capped") else 0)
