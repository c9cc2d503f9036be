"""GET /metrics: the proxy's counters in Prometheus' text format, from what it already
counts (memory reads by outcome and the tokens they injected, the store's contents, turns
being stored), so that scraping costs the chat path nothing."""

from __future__ import annotations

from typing import Any

from litestar import Response, route
from litestar.di import NamedDependency

from mnemoproxy.proxy.services import Services

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# /health's store fields exported as gauges: (field, metric with its labels, help; a
# metric's help is given with its first series).
_STORE = (
    ("agents", "mnemoproxy_agents", "Agents memory holds."),
    ("transcript_messages", 'mnemoproxy_items{kind="messages"}', "Items in memory, by kind."),
    ("facts", 'mnemoproxy_items{kind="facts"}', ""),
    ("episodes", 'mnemoproxy_items{kind="episodes"}', ""),
    ("embedded_items", "mnemoproxy_embedded_items", "Items with a vector."),
    ("embedding_failures", "mnemoproxy_embedding_failures",
     "Items the embedder could not embed (found by their words only)."),
    ("pending_signals", 'mnemoproxy_turns_to_distil{state="pending"}',
     "Turns waiting for distillation, and dead-lettered ones."),
    ("dead_signals", 'mnemoproxy_turns_to_distil{state="dead"}', ""),
    ("records_in_flight", "mnemoproxy_records_in_flight",
     "Chat turns being stored after their reply went out."),
)


def render(reads: dict[str, int], store: dict[str, Any] | None) -> str:
    lines = [
        "# HELP mnemoproxy_memory_reads_total Chat requests with an agent, by what memory did.",
        "# TYPE mnemoproxy_memory_reads_total counter",
        *(f'mnemoproxy_memory_reads_total{{outcome="{name}"}} {reads[name]}'
          for name in ("injected", "not_needed", "deadline_missed", "failed")),
        "# HELP mnemoproxy_injected_tokens_total Tokens of memory added to upstream requests.",
        "# TYPE mnemoproxy_injected_tokens_total counter",
        f"mnemoproxy_injected_tokens_total {reads['injected_tokens']}",
    ]
    if store is not None:
        for field, series, text in _STORE:
            if text:
                metric = series.split("{", 1)[0]
                lines += [f"# HELP {metric} {text}", f"# TYPE {metric} gauge"]
            lines.append(f"{series} {store.get(field, 0)}")
        lines += ["# HELP mnemoproxy_records_waited_out_total Replies that waited past the read "
                  "deadline for their turn to be stored (the store is behind).",
                  "# TYPE mnemoproxy_records_waited_out_total counter",
                  f"mnemoproxy_records_waited_out_total {store.get('records_waited_out', 0)}"]
    return "\n".join(lines) + "\n"


@route("/metrics", http_method=["GET"], include_in_schema=False)
async def metrics(services: NamedDependency[Services]) -> Response[str]:
    store = await services.memory.health() if services.memory is not None else None
    return Response(render(services.reads.as_dict(), store), media_type=CONTENT_TYPE)
