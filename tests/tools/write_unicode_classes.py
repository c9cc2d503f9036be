"""Writes gate/tokens/unicode_classes.py: the Unicode general categories o200k_base splits text by.

    pip install unicodedata2==16.0.0 && python -m tests.tools.write_unicode_classes

tiktoken (and bpe-openai) split text with Rust's regex crate, whose tables are Unicode
16.0; Python 3.11's own unicodedata is 14.0, and the `regex` package follows the newest
Unicode, so both classify tens of thousands of recently assigned code points otherwise.
The tables are therefore written once from a Unicode 16.0 database and kept in the
repository; tests/gate/test_gate_tokens.py checks every code point against tiktoken. When tiktoken
moves to a newer Unicode, install the matching unicodedata2 and run this again.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import unicodedata2

UNICODE_VERSION = "16.0.0"
TARGET = Path(__file__).resolve().parents[2] / "gate" / "tokens" / "unicode_classes.py"

# The groups the o200k pattern's classes are unions of (see gate/tokens/o200k.py).
GROUPS = {
    "UPPER": ("Lu", "Lt"),
    "LOWER": ("Ll",),
    "OTHER_LETTER": ("Lm", "Lo"),
    "MARK": ("Mn", "Mc", "Me"),
    "NUMBER": ("Nd", "Nl", "No"),
}

HEADER = '''"""Code points of the Unicode {version} general categories that o200k_base's
pre-tokenizer pattern names (written by tests/tools/write_unicode_classes.py: do not edit).

Each constant lists inclusive ranges of hexadecimal code points, "first-last" or a lone
"point", separated by spaces.
"""

'''


def ranges(categories: tuple[str, ...]) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    for point in range(0x110000):
        if unicodedata2.category(chr(point)) not in categories:
            continue
        if found and found[-1][1] == point - 1:
            found[-1] = (found[-1][0], point)
        else:
            found.append((point, point))
    return found


def constant(name: str, categories: tuple[str, ...]) -> str:
    listed = " ".join(
        f"{first:X}" if first == last else f"{first:X}-{last:X}"
        for first, last in ranges(categories)
    )
    lines = textwrap.wrap(listed, width=92, break_on_hyphens=False)
    body = "\n".join(f'    "{line} "' for line in lines)
    return f"# {', '.join(categories)}\n{name} = (\n{body}\n)\n"


def main() -> None:
    if unicodedata2.unidata_version != UNICODE_VERSION:
        raise SystemExit(
            f"unicodedata2 has Unicode {unicodedata2.unidata_version}, not {UNICODE_VERSION}: "
            f"pip install unicodedata2=={UNICODE_VERSION}"
        )
    parts = [constant(name, categories) for name, categories in GROUPS.items()]
    TARGET.write_text(HEADER.format(version=UNICODE_VERSION) + "\n".join(parts))
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
