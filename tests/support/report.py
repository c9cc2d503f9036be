"""Benchmark figures (the dicts `main()` returns) as Markdown tables, for
docs/results/benchmarks.md, and as JSON for the tests that run a benchmark as a script.

A list of flat dicts is one table, a column per key; a dict's plain values are a
figure/value table, and each nested value gets its own bold caption and tables; a dict
whose values are all flat dicts with the same keys (one row per name) is one table with a
name column.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

# When set, a benchmark run as a script also writes its figures there, as JSON.
FIGURES_FILE_ENV = "MNEMO_BENCH_FIGURES_FILE"


def publish(text: str, results_file: Path) -> None:
    """Print a benchmark's plain-text table and keep it in tests/benchmarks/results/."""
    print(text)
    results_file.parent.mkdir(exist_ok=True)
    results_file.write_text(text + "\n", encoding="utf-8")


def _is_flat(value: Any) -> bool:
    return isinstance(value, dict) and not any(isinstance(v, dict | list) for v in value.values())


def cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        size = abs(value)
        if size >= 100:
            return f"{value:,.0f}"
        return f"{value:.2f}" if size >= 0.1 else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {cell(v)}" for k, v in value.items())
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(rows: list[dict[str, Any]]) -> list[str]:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c, "")) for c in columns) + " |" for row in rows]
    return lines


def markdown(figures: Any) -> list[str]:
    """Markdown lines for one benchmark's figures."""
    if isinstance(figures, list) and figures and all(isinstance(r, dict) for r in figures):
        return table(figures)
    if not isinstance(figures, dict):
        return [cell(figures)]
    if not figures:
        return ["(no figures)"]
    rows = list(figures.values())
    if all(_is_flat(row) and row.keys() == rows[0].keys() for row in rows):
        if all(name in row.values() for name, row in figures.items()):
            return table(rows)  # the rows already carry their names
        return table([{"name": name, **row} for name, row in figures.items()])
    plain = {k: v for k, v in figures.items() if not isinstance(v, dict | list)}
    lines = table([{"figure": k, "value": v} for k, v in plain.items()]) if plain else []
    for name, value in figures.items():
        if name not in plain:
            lines += ["", f"**{name}**", "", *markdown(value)]
    return lines


def run_as_script(main: Callable[[], Any]) -> None:
    """Run a benchmark's `main` as `python -m` does; its figures also go to the file
    $MNEMO_BENCH_FIGURES_FILE names, as JSON, when it is set."""
    figures = main()
    path = os.environ.get(FIGURES_FILE_ENV)
    if path:
        Path(path).write_text(json.dumps(figures, default=str), encoding="utf-8")
