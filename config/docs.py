"""The settings table as Markdown, for README.md (`python -m config.docs`)."""

from __future__ import annotations

from config.settings import ENV_PREFIX, SETTINGS_TABLE, describe_range


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


if __name__ == "__main__":
    print(settings_markdown())
