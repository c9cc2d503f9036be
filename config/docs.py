"""The settings table as Markdown for docs/settings.md.

python -m mnemoproxy.config.docs                    print the table
python -m mnemoproxy.config.docs docs/settings.md   rewrite the table between the page's markers
"""

from __future__ import annotations

import sys
from pathlib import Path

from mnemoproxy.config.settings import ENV_PREFIX, SETTINGS_TABLE, describe_range

START, END = "<!-- settings:start -->", "<!-- settings:end -->"
DEFAULT_TARGET = Path(__file__).resolve().parent.parent / "docs" / "settings.md"


def settings_markdown() -> str:
    rows = [
        "| setting | env | default | range | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    for f in SETTINGS_TABLE:
        default = f.default if f.default != "" else "(empty)"
        if isinstance(default, bool):
            default = str(default).lower()
        rows.append(
            f"| `{f.name}` | `{ENV_PREFIX}{f.name.upper()}` | `{default}` | {describe_range(f)} "
            f"| {f.metadata['help']} |"
        )
    return "\n".join(rows)


def update_readme(path: Path = DEFAULT_TARGET) -> None:
    text = path.read_text(encoding="utf-8")
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    path.write_text(f"{head}{START}\n{settings_markdown()}\n{END}{tail}", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        update_readme(Path(sys.argv[1]))
    else:
        print(settings_markdown())
