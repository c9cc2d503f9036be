"""What the user says apart from what they hand over: the instruction and its payload.

"Fix the grammar: 'Yesterday me and my brother goes to the market'" speaks of a brother
and yesterday only inside the sentence to correct; "Here is an email from a client: ...
Write a polite reply" speaks in the client's first person. Such material (quoted text, a
block introduced by a colon, a labelled input, a list to classify, code) is something to
work on, not the user speaking about themselves: the gate reads its cues in the
instruction alone.

Every rule here reads the text once, left to right, with bounded lookups (no pattern can
backtrack across lines), so a pasted megabyte costs a linear pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from mnemoproxy.gate.relevance.cues import FIRST_PERSON, word_set

# Quotation marks of the common scripts, opening -> closing.
_QUOTES = {'"': '"', "“": "”", "„": "“", "«": "»", "「": "」", "『": "』", "‘": "’", "‹": "›"}
_OPENING = re.compile("[" + re.escape("".join(_QUOTES)) + "]")
# A quote shorter than this is a phrase the user is naming ("what does 'ikigai' mean?").
MIN_QUOTED_CHARS = 25
# A line that introduces material: ends with a colon (any script's), or is a label such
# as "Email:" / "Text:" followed by the material on the same line.
_INTRO_END = re.compile(r"[:：]\s*$")
_LABEL = re.compile(r"^\s*[^\W\d_][^\s:：]{0,24}(?:\s[^\s:：]{1,24})?\s*[:：]\s+\S")
# Labels under which users put their own words, not material ("Question: did I ...?").
OWN_LABELS = frozenset({
    "question", "q", "note", "notes", "context", "background", "edit", "update", "ps", "fyi",
    "btw", "me", "user", "request", "task", "goal", "my question", "reminder",
})
# Words of an instruction that hands over what follows its colon on the same line
# ("Summarize this abstract: In this paper we ..."): a task verb, or a pointer at it.
HANDING_OVER = word_set(
    """this these following below here here's heres above text sentence paragraph passage
    abstract email e-mail message review tweet article story poem code snippet translate
    summarize summarise rewrite correct fix proofread classify label paraphrase shorten
    improve edit analyze analyse explain reply respond"""
)
_WORD = re.compile(r"[\w'’;-]+")
# Words by which an instruction in a paragraph of its own points at material in another.
POINTERS = word_set(
    "this these following below above here here's heres here’s tl;dr tldr attached pasted")
# An instruction that speaks of no one's own things points at material in another
# paragraph by naming it: "the given product", "the provided topic", "the article".
GIVEN = word_set("given provided")
MATERIAL = word_set(
    """text sentence sentences paragraph passage abstract email e-mail message review tweet
    article story poem code snippet essay letter document response reply chat conversation
    dialogue dialog transcript post excerpt input statement quote lyrics""")
# Words that name the quotation after them as language to work on ("the sentence "I am
# here""); a quoted word or phrase is more often a name asked about.
NAMED_MATERIAL = word_set(
    "sentence sentences text paragraph passage line lines clause statement headline caption")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
# A same-line colon hands material over when the material is at least this long.
MIN_INLINE_PAYLOAD_CHARS = 30
_LIST_ITEM = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*•]|\([a-z0-9]\))\s+\S")
_FENCE = "```"
# The last paragraph after the material is the instruction again when it is this short
# ("Write a polite reply.", "Which of these are positive?").
MAX_CLOSING_CHARS = 300


@dataclass(frozen=True)
class Request:
    """A message split into the user's own words and the material they hand over."""

    instruction: str
    payload: str

    @property
    def has_payload(self) -> bool:
        return bool(self.payload.strip())


def split_request(text: str) -> Request:
    """The instruction (the user's own words) and the payload (material to work on)."""
    first, rest = _opening_on_material(text)
    if rest:
        opening = _split_lines(first)
        return Request(opening.instruction, "\n\n".join(filter(None, [opening.payload, rest])))
    request = _split_lines(text)
    if not request.has_payload:
        return _by_paragraphs(text) or _by_pointing_sentence(text) or request
    return request


def _opening_on_material(text: str) -> tuple[str, str]:
    """(the first paragraph, the rest) of a message that opens on the material it acts on
    ("Rephrase this article ...", "Summarize the following ..."): the paragraphs after are
    the material, however much of it runs on into the first; ("", "") otherwise."""
    parts = _PARAGRAPH_BREAK.split(text.strip(), maxsplit=1)
    if len(parts) < 2:
        return "", ""
    words = [w.lower() for w in _WORD.findall(parts[0][:MAX_POINTING_CHARS])]
    if _acts_on(words) and (words[1] not in POINTED_OBJECTS
                            or (len(words) > 2 and words[2] in MATERIAL)):
        return parts[0], parts[1]
    return "", ""


def _split_lines(text: str) -> Request:
    """The line-by-line reading: quotations, blocks a colon introduces, labelled input,
    lists after a colon, code fences."""
    own: list[str] = []
    material: list[str] = []
    lines = text.split("\n")
    # From each line on: characters left, and whether a blank line is still to come.
    left = [0] * (len(lines) + 1)
    blank_after = [False] * (len(lines) + 1)
    for number in range(len(lines) - 1, -1, -1):
        left[number] = left[number + 1] + len(lines[number]) + 1
        blank_after[number] = blank_after[number + 1] or not lines[number].strip()
    in_fence = False
    in_block = False  # inside material a colon introduced
    introduced = False  # the user's latest own line ended with a colon
    for number, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(_FENCE):
            in_fence = not in_fence
            material.append(line)
            continue
        if in_fence:
            material.append(line)
            continue
        if in_block:
            closing = (number > 0 and not lines[number - 1].strip() and bool(stripped)
                       and left[number] <= MAX_CLOSING_CHARS and not blank_after[number + 1]
                       and not _LIST_ITEM.match(line) and stripped[:1] not in _QUOTES)
            if not closing:
                material.append(line)
                continue
            in_block = False
        if introduced and _LIST_ITEM.match(line):
            material.append(line)
            continue
        handed = _handed_over(line, bool(own) or number + 1 < len(lines))
        if handed is not None:
            own.append(handed[0])
            material.append(handed[1])
            introduced = False
            continue
        said, quoted = _without_quotes(line)
        said, single = _without_single_quotes(said)
        quoted.extend(single)
        said, foreign = _without_foreign_runs(said)
        own.append(said)
        material.extend(quoted)
        material.extend(foreign)
        if stripped:
            introduced = bool(_INTRO_END.search(said))
            in_block = introduced and number + 1 < len(lines)
    instruction = "\n".join(own).strip()
    if not instruction:  # all of it handed over: its first line is what there is to read
        instruction = text.strip().split("\n", 1)[0]
    return Request(instruction, "\n".join(material).strip())


def _by_paragraphs(text: str) -> Request | None:
    """Material in paragraphs of its own: a short first or last paragraph that points at
    the rest ("tl;dr this please", "Is each of the following a question?") is the
    instruction, and a paragraph that is one quotation is material wherever it stands."""
    paragraphs = [p.strip() for p in _PARAGRAPH_BREAK.split(text) if p.strip()]
    if len(paragraphs) < 2:
        return None
    quoted = [_is_quotation(p) for p in paragraphs]
    for at in (0, len(paragraphs) - 1):
        candidate = paragraphs[at]
        if len(candidate) <= MAX_CLOSING_CHARS and not quoted[at] and _points_at_material(
            [w.lower() for w in _WORD.findall(candidate)]
        ):
            rest = [p for n, p in enumerate(paragraphs) if n != at]
            return Request(candidate, "\n\n".join(rest))
    if any(quoted):
        own = [p for p, q in zip(paragraphs, quoted, strict=True) if not q]
        material = [p for p, q in zip(paragraphs, quoted, strict=True) if q]
        return Request("\n\n".join(own), "\n\n".join(material))
    return None


# An opening sentence this short that acts on "this" is an instruction ("turn this into
# bullet points.") and what follows it, in the same paragraph, its material.
MAX_POINTING_CHARS = 100
_SENTENCE_END = re.compile(r"[.!?]\s")
POINTED_OBJECTS = word_set("this these")
NOT_ACTING = word_set("is are was were does do did can could would will should has have had")


def _by_pointing_sentence(text: str) -> Request | None:
    """Material after an opening sentence that does something to it ("Summarize this.
    Last week our team ..."): the sentence is the instruction, the rest the payload."""
    stripped = text.strip()
    end = _SENTENCE_END.search(stripped, 0, MAX_POINTING_CHARS + 1)
    if end is None:
        return None
    head, rest = stripped[: end.end()].strip(), stripped[end.end():].strip()
    words = [w.lower() for w in _WORD.findall(head)]
    if (not _acts_on(words) or FIRST_PERSON.intersection(words)
            or len(rest) < MIN_INLINE_PAYLOAD_CHARS):
        return None
    return Request(head, rest)


def _acts_on(words: list[str]) -> bool:
    """Whether the words open by doing something to "this" or "the following"."""
    return (len(words) >= 2 and words[0] not in NOT_ACTING and words[0] not in FIRST_PERSON
            and (words[1] in POINTED_OBJECTS or words[1:3] == ["the", "following"]))


def _points_at_material(words: list[str]) -> bool:
    if POINTERS.intersection(words):
        return True
    if FIRST_PERSON.intersection(words):  # "the article I wrote": the user's own things
        return False
    return bool(GIVEN.intersection(words)) or any(
        word == "the" and following in MATERIAL for word, following in pairwise(words))


# How far before a quotation the word that names it is looked for.
NAMING_REACH = 30


def _named_material(line: str, opening: int) -> bool:
    """Whether the quotation opening at `opening` is named as material by the word before
    it ("the sentence "I am here"", "the line 'we lost'"): however short, a sentence to
    work on, not the user's own words."""
    words = _WORD.findall(line[max(0, opening - NAMING_REACH) : opening])
    return bool(words) and words[-1].lower() in NAMED_MATERIAL


def _is_quotation(paragraph: str) -> bool:
    closing = _QUOTES.get(paragraph[:1])
    return closing is not None and paragraph.endswith(closing) and len(paragraph) > 2


def _handed_over(line: str, instruction_elsewhere: bool) -> tuple[str, str] | None:
    """(the user's words, the material) of a line that hands material over after a colon:
    a label of material ("Email: ...", with the instruction on another line), or an
    instruction that points at what follows ("Summarize this abstract: ...")."""
    colons = [at for at in (line.find(":"), line.find("：")) if at >= 0]
    if not colons:
        return None
    cut = min(colons)
    head, rest = line[: cut + 1], line[cut + 1 :]
    words = [w.lower() for w in _WORD.findall(head)]
    if not words or len(rest.strip()) < 1:
        return None
    if _LABEL.match(line) and instruction_elsewhere and " ".join(words) not in OWN_LABELS:
        return head, rest
    if len(words) <= 12 and len(rest.strip()) >= MIN_INLINE_PAYLOAD_CHARS and (
        HANDING_OVER.intersection(words) or _enumerates(rest)
    ):
        return head, rest
    return None


# Items listed after a colon ("rank these: The Velvet Forks, Neon Lullaby, Dust & Static")
# are things to work on when there are this many, each a few words.
MIN_LISTED = 3
MAX_ITEM_WORDS = 5


def _enumerates(text: str) -> bool:
    items = text.strip().rstrip(".!").split(",")  # a question at its end is the user's
    return len(items) >= MIN_LISTED and all(
        0 < len(item.split()) <= MAX_ITEM_WORDS and not any(m in item for m in ".?!")
        for item in items)


# A straight single quote opens a quotation where no letter is before it and one follows,
# and closes it where a letter or punctuation is before it and no letter follows: the
# apostrophes of "don't" and "the kids' toys" neither open one nor, unopened, close one.
# Single quotes mostly name titles ('The Seven Husbands of Evelyn Hugo'): only a sentence,
# its closing punctuation inside the quote, is material.
_SINGLE_OPENING = re.compile(r"(?<![\w'])'(?=[^\s'])")
_SINGLE_CLOSING = re.compile(r"(?<=[^\s'])'(?!\w)")
SENTENCE_ENDS = frozenset(".?!…")


def _without_single_quotes(line: str) -> tuple[str, list[str]]:
    """`line` with its quoted sentences in straight single quotes cut out ("tell my
    landlord: 'The hot water has not worked since Tuesday.'"), and those sentences."""
    if "'" not in line:
        return line, []
    closings = [m.start() for m in _SINGLE_CLOSING.finditer(line)]
    said: list[str] = []
    quoted: list[str] = []
    kept_from = 0
    next_closing = 0  # index into `closings`: every pass moves forward only
    for opening in _SINGLE_OPENING.finditer(line):
        position = opening.start()
        if position < kept_from:
            continue
        while next_closing < len(closings) and closings[next_closing] <= position:
            next_closing += 1
        if next_closing == len(closings):
            break
        end = closings[next_closing]
        if not _named_material(line, position) and (
                end - position - 1 < MIN_QUOTED_CHARS or line[end - 1] not in SENTENCE_ENDS):
            continue
        said.append(line[kept_from:position])
        said.append(" … ")
        quoted.append(line[position + 1 : end])
        kept_from = end + 1
    said.append(line[kept_from:])
    return "".join(said), quoted


# A run of another script in a line written in the Latin one ("How do you say 我的狗 in
# English?", "translate this: 今日は…"): material to work on.
_FOREIGN_RUN = re.compile(
    r"[\u0400-\u04ff\u0370-\u03ff\u0600-\u06ff\u0590-\u05ff\u0e00-\u0e7f\u0900-\u097f"
    r"\u3040-\u30ff\u4e00-\u9fff\u3400-\u4dbf\uac00-\ud7af\u3000-\u303f\uff00-\uffef]"
    r"[^a-zA-Z]*"
)
_LATIN_LETTER = re.compile(r"[a-zA-Z]")
# Letters of another script make a run worth setting aside from this many on.
MIN_FOREIGN_CHARS = 2


def _without_foreign_runs(line: str) -> tuple[str, list[str]]:
    """A Latin-script line without its runs of other scripts, and those runs."""
    runs = [m for m in _FOREIGN_RUN.finditer(line) if len(m.group().strip()) >= MIN_FOREIGN_CHARS]
    if not runs:
        return line, []
    foreign = sum(len(m.group()) for m in runs)
    if sum(1 for _ in _LATIN_LETTER.finditer(line)) <= foreign:  # written in the other script
        return line, []
    said, kept_from = [], 0
    for run in runs:
        said.append(line[kept_from : run.start()])
        said.append(" … ")
        kept_from = run.end()
    said.append(line[kept_from:])
    return "".join(said), [run.group() for run in runs]


# A quotation whose words are capitalised, but for these, is a title ("What did "Harry
# Potter and the Philosopher's Stone" mean to him?"): a name, not material. Titles are
# short: longer quotations are not checked, which keeps a line of many openings linear.
TITLE_SMALL_WORDS = word_set(
    "a an the and or but nor of in on at to for from by with as vs via into over upon per")
MAX_TITLE_CHARS = 120
_TITLE_WORD = re.compile(r"[^\W\d_][\w'’-]*")


def _is_title(quoted: str) -> bool:
    quoted = quoted.strip()
    if len(quoted) > MAX_TITLE_CHARS or not quoted or quoted[-1] in SENTENCE_ENDS:
        return False
    words = _TITLE_WORD.findall(quoted)
    return (len(words) >= 2 and words[0][0].isupper() and not quoted.isupper()
            and all(w[0].isupper() for w in words if w.lower() not in TITLE_SMALL_WORDS))


def _without_quotes(line: str) -> tuple[str, list[str]]:
    """`line` with its long quotations, titles aside, cut out, and those quotations."""
    said: list[str] = []
    quoted: list[str] = []
    # Where each closing mark is next found (-1: nowhere further): looked up again only
    # once passed, so a line of unclosed quotes is still read in one pass.
    next_close: dict[str, int] = {}
    kept_from = 0  # the start of the stretch of `line` not yet copied
    resume = 0  # openings before this lie inside a quotation already cut out
    for opening in _OPENING.finditer(line):
        position = opening.start()
        if position < resume:
            continue
        closing = _QUOTES[opening.group()]
        end = next_close.get(closing, -2)
        if end != -1 and end <= position:
            end = line.find(closing, position + 1)
            next_close[closing] = end
        if end == -1 or _is_title(line[position + 1 : end]) or (
                end - position - 1 < MIN_QUOTED_CHARS and not _named_material(line, position)):
            continue
        said.append(line[kept_from:position])
        said.append(" … ")
        quoted.append(line[position + 1 : end])
        kept_from = resume = end + 1
    said.append(line[kept_from:])
    return "".join(said), quoted
