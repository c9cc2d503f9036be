"""Documents into chunks: an agent's knowledge base, read along each document's structure.

A document is parsed into sections (a heading path and its paragraphs) and each section is
cut into chunks of about TARGET_TOKENS (never more than MAX_TOKENS), at paragraph
boundaries where it can, else at sentences, else at words; a chunk never spans two
sections, and each chunk after the first of a section repeats the last sentence of the one
before (OVERLAP_TOKENS at most) so a statement split across the cut is found whole in one.

    Markdown  sections by ATX (# ...) and setext (=== / ---) headings; fenced code kept whole
    HTML      sections by <h1>-<h6>, paragraphs by block elements (stdlib html.parser);
              scripts, styles and the <head> (but its <title>) are left out
    text      paragraphs by blank lines, no headings
    PDF       pages (pypdf), then paragraphs; each chunk knows its page

Sizes are estimated (about four characters a token): memory/ does not load the
tokenizer, and the planner counts the real tokens of what it shows.

A PDF is read within budgets, checked page by page so that reading stops at the first one
exceeded rather than after every page: MAX_PDF_PAGES pages; MAX_TEXT_CHARS characters of
text (more cannot fit in MAX_CHUNKS chunks); PARSE_SECONDS; and content to interpret of at
most CONTENT_PER_BYTE times the file's size (plus CONTENT_SLACK), judged before each
page is read. Pages may share one compressed content stream: a 15 KB file of 80 pages
each showing the same megabyte of text took minutes of CPU, and a few thousand such
pages fit in an upload. Ordinary PDFs hold far less content than 16 times their size.
"""

from __future__ import annotations

import io
import logging
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import PurePath
from typing import Any

from mnemoproxy.errors import InvalidArgument, TooLarge
from mnemoproxy.memory.text.sentences import sentences

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
TARGET_TOKENS = 220
MAX_TOKENS = 300
OVERLAP_TOKENS = 50
# A document of more chunks is refused (split it): about 600k tokens of text.
MAX_CHUNKS = 2000
# A PDF's budgets (see above).
MAX_PDF_PAGES = 2000
MAX_TEXT_CHARS = MAX_CHUNKS * MAX_TOKENS * CHARS_PER_TOKEN
PARSE_SECONDS = 30.0
CONTENT_PER_BYTE = 16
CONTENT_SLACK = 128 * 1024
# Form XObjects (content a page invokes by name) drawn per page's text extraction.
FORMS_PER_PAGE = 64
# Documents are read on threads of their own, this many at a time: the default pool is
# the read path's (SQLite, vectors, the plan), which uploads must not fill.
PARSE_THREADS = 2
MAX_TITLE_CHARS = 300
HEADING_SEPARATOR = " › "

MEDIA_TYPES: dict[str, str] = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
}
# The file names `mnemoproxy import-docs` picks up in a folder.
DOCUMENT_EXTENSIONS: tuple[str, ...] = tuple(MEDIA_TYPES)
SUPPORTED = ("text/plain", "text/markdown", "text/html", "application/pdf")
_ALIASES = {
    "text/x-markdown": "text/markdown",
    "application/xhtml+xml": "text/html",
    "application/x-pdf": "application/pdf",
}


@dataclass(frozen=True)
class Chunk:
    position: int
    heading: str  # the heading path, HEADING_SEPARATOR between levels ("" at the top)
    text: str
    page: int | None = None  # PDF: the page the chunk starts on (1-based)


@dataclass(frozen=True)
class ParsedDocument:
    title: str
    media_type: str
    chunks: list[Chunk]


@dataclass
class _Section:
    path: tuple[str, ...]
    page: int | None = None
    paragraphs: list[str] = field(default_factory=list)


def media_type_of(filename: str | None, declared: str | None = None) -> str:
    """The media type to parse a document as: the one declared when it is a supported one,
    else the file name's extension's; InvalidArgument naming what is supported otherwise."""
    kind = (declared or "").split(";", 1)[0].strip().lower()
    kind = _ALIASES.get(kind, kind)
    if kind in SUPPORTED:
        return kind
    suffix = PurePath(filename or "").suffix.lower()
    if suffix in MEDIA_TYPES:
        return MEDIA_TYPES[suffix]
    if not kind or kind in ("application/octet-stream", "text/x-unknown"):
        # A plain text file without a telling name is still plain text.
        return "text/plain"
    raise InvalidArgument(
        f"cannot read a document of type {kind!r}: send text/plain, text/markdown, text/html "
        "or application/pdf (or a file named .txt, .md, .html or .pdf)", param="media_type")


def parse_document(
    data: bytes | str,
    media_type: str,
    *,
    title: str | None = None,
    filename: str | None = None,
) -> ParsedDocument:
    """Parse and chunk a document. InvalidArgument for a file that cannot be read (a PDF that
    does not parse, text that is not UTF-8, nothing to store), TooLarge past MAX_CHUNKS."""
    name = filename or "the document"
    found_title: str | None = None
    if media_type == "application/pdf":
        raw = data.encode("utf-8") if isinstance(data, str) else data
        found_title, sections = _pdf_sections(raw, name)
    else:
        text = data if isinstance(data, str) else _decode(data, name)
        if media_type == "text/markdown":
            found_title, sections = _markdown_sections(text)
        elif media_type == "text/html":
            found_title, sections = _html_sections(text)
        else:
            sections = [_Section((), None, _paragraphs(text))]
    chunks = list(_chunks(sections))
    if not chunks:
        raise InvalidArgument(f"{name} holds no text to store", param="file")
    if len(chunks) > MAX_CHUNKS:
        raise TooLarge(
            f"{name} makes {len(chunks)} chunks, more than the {MAX_CHUNKS} one document may "
            "have: split it into several documents", param="file")
    chosen = (title or "").strip() or (found_title or "").strip() or (
        PurePath(filename).stem if filename else "") or _first_words(chunks[0].text)
    return ParsedDocument(" ".join(chosen.split())[:MAX_TITLE_CHARS], media_type, chunks)


def _decode(data: bytes, name: str) -> str:
    if b"\x00" in data[:8192] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InvalidArgument(f"{name} is not text (it holds NUL bytes): send text, Markdown, "
                              "HTML or PDF", param="file")
    try:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            return data.decode("utf-16")
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidArgument(f"{name} is not UTF-8 text: convert it to UTF-8 first",
                              param="file") from None


def _first_words(text: str, count: int = 8) -> str:
    words = text.split()
    return " ".join(words[:count]) + (" …" if len(words) > count else "")


# -- structure -----------------------------------------------------------------------------

_BLANK = re.compile(r"\n\s*\n")


def _paragraphs(text: str) -> list[str]:
    """Paragraphs at blank lines; each one's lines kept (lists stay lists)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [p.strip() for p in _BLANK.split(text) if p.strip()]


# The heading's text runs to the line's end; its closing #s are stripped in code (a
# pattern that matched them too would backtrack over a long run of spaces).
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+([^\n]*)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


_EMPHASIS = re.compile(r"[*_`]++")
# [text](link): a link's text holds no bracket and its target no parenthesis or space, so
# each scan stops at the next one.
_LINK = re.compile(r"\[([^\[\]]*+)\]\([^()\s]*+\)")


def _clean_heading(text: str) -> str:
    text = _LINK.sub(r"\1", _EMPHASIS.sub("", text))
    return " ".join(text.split())


def _markdown_sections(text: str) -> tuple[str | None, list[_Section]]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    sections = [_Section(())]
    stack: list[tuple[int, str]] = []
    title: str | None = None
    buffer: list[str] = []
    fence: str | None = None

    def flush() -> None:
        sections[-1].paragraphs.extend(_paragraphs("\n".join(buffer)))
        buffer.clear()

    def heading(level: int, name: str) -> None:
        nonlocal title
        flush()
        name = _clean_heading(name)
        if not name:
            return
        if level == 1 and title is None:
            title = name
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
        sections.append(_Section(tuple(n for _, n in stack)))

    for number, line in enumerate(lines):
        if fence is not None:
            buffer.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        opened = _FENCE.match(line)
        if opened:
            fence = opened.group(1)
            buffer.append(line)
            continue
        atx = _ATX.match(line)
        if atx:
            heading(len(atx.group(1)), atx.group(2).rstrip(" \t").rstrip("#").rstrip(" \t"))
            continue
        setext = _SETEXT.match(line)
        previous = buffer[-1] if buffer else ""
        if setext and previous.strip() and (number == 0 or lines[number - 1] == previous) and (
            len(buffer) == 1 or not buffer[-2].strip()
        ):
            buffer.pop()
            heading(1 if setext.group(1).startswith("=") else 2, previous)
            continue
        buffer.append(line)
    flush()
    return title, _without_title_section(sections, title)


def _without_title_section(sections: list[_Section], title: str | None) -> list[_Section]:
    """A document's sections; when its title is its one top heading, the title is not
    repeated at the head of every heading path."""
    tops = {s.path[0] for s in sections if s.path}
    if title is not None and tops == {title}:
        return [_Section(s.path[1:], s.page, s.paragraphs) for s in sections]
    return sections


_SKIPPED = frozenset({"script", "style", "noscript", "template", "head", "svg", "iframe"})
_BLOCKS = frozenset({
    "p", "div", "li", "ul", "ol", "br", "tr", "table", "pre", "blockquote", "section",
    "article", "header", "footer", "nav", "aside", "main", "dd", "dt", "dl", "figure",
    "figcaption", "hr", "form", "fieldset", "details", "summary", "address",
})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}


class _HtmlText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections = [_Section(())]
        self.stack: list[tuple[int, str]] = []
        self.title: str | None = None
        self.h1: str | None = None
        self._text: list[str] = []
        self._skipping: list[str] = []
        self._in_title = False
        self._title_text: list[str] = []
        self._heading: tuple[int, list[str]] | None = None
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if tag in _SKIPPED:
            self._skipping.append(tag)
            return
        if tag in _HEADINGS:
            self._break()
            self._heading = (_HEADINGS[tag], [])
        elif tag in _BLOCKS:
            self._break()
            if tag == "li":
                self._text.append("- ")
            if tag == "pre":
                self._pre += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._skipping:
            if tag == self._skipping[-1]:
                self._skipping.pop()
            return
        if tag in _HEADINGS and self._heading is not None:
            level, words = self._heading
            self._heading = None
            name = " ".join("".join(words).split())
            if name:
                if level == 1 and self.h1 is None:
                    self.h1 = name
                while self.stack and self.stack[-1][0] >= level:
                    self.stack.pop()
                self.stack.append((level, name))
                self.sections.append(_Section(tuple(n for _, n in self.stack)))
        elif tag in _BLOCKS:
            if tag == "pre":
                self._pre = max(0, self._pre - 1)
            self._break()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title_text.append(data)
            return
        if self._skipping:
            return
        if self._heading is not None:
            self._heading[1].append(data)
            return
        self._text.append(data if self._pre else " ".join(data.split("\n")))

    def _break(self) -> None:
        text = "".join(self._text)
        self._text.clear()
        text = text.strip() if self._pre else " ".join(text.split())
        if text and text != "-":
            self.sections[-1].paragraphs.append(text)

    def finish(self) -> tuple[str | None, list[_Section]]:
        self.close()
        self._break()
        title = " ".join("".join(self._title_text).split()) or None
        return title or self.h1, _without_title_section(self.sections, self.h1)


def _html_sections(text: str) -> tuple[str | None, list[_Section]]:
    parser = _HtmlText()
    parser.feed(_well_formed_markup(text))
    return parser.finish()


# Declarations the parser reads to a ">" (comments are taken out before it sees them).
_DECLARATION = re.compile(r"<!doctype\b", re.IGNORECASE)


def _well_formed_markup(text: str) -> str:
    """`text` with every tag the parser is given complete: a "<" that opens no tag ending
    before the next "<" (with its quotes closed) is written "&lt;", comments are left out
    (an unclosed one hides the rest, as in a browser), and other "<!" constructs are
    text. The standard library's parser rescans an unfinished tag to the end of the
    document for each one (CVE-2025-6069, "<a " * n): given only complete tags, it reads
    each once. One pass, each ">" looked for once."""
    out: list[str] = []
    end = len(text)
    at = 0
    next_close = -1  # the first ">" after the "<" at hand; `end` once there is none
    while at < end:
        lt = text.find("<", at)
        if lt == -1:
            out.append(text[at:])
            break
        out.append(text[at:lt])
        if text.startswith("<!--", lt):
            closed = text.find("-->", lt + 4)
            if closed == -1:
                break
            at = closed + 3
            continue
        if next_close != end and next_close <= lt:
            found = text.find(">", lt + 1)
            next_close = end if found == -1 else found
        tag = text[lt : next_close + 1] if next_close < end else ""
        if (not tag or "<" in tag[1:] or _open_quote(tag)
                or (tag.startswith("<!") and not _DECLARATION.match(tag))):
            out.append("&lt;")
            at = lt + 1
            continue
        out.append(tag)
        at = next_close + 1
    return "".join(out)


def _open_quote(tag: str) -> bool:
    """Whether a quote opened in `tag` is left open."""
    quote = ""
    for char in tag:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
    return bool(quote)


_BROKEN_WORD = re.compile(r"(\w)-\n(\w)")


def _pdf_sections(data: bytes, name: str) -> tuple[str | None, list[_Section]]:
    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import LimitReachedError

    content_budget = CONTENT_PER_BYTE * len(data) + CONTENT_SLACK
    too_large = f"{name} is too large a PDF to read"
    # pypdf's own limits, tightened to this file: no stream decompresses past the content
    # budget, and a page draws a bounded number of forms.
    try:
        with apply_configuration(zlib_maximum_output_length=content_budget,
                                 xform_maximum_invocations_per_extraction=FORMS_PER_PAGE):
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise InvalidArgument(
                    f"{name} is an encrypted PDF: send it without a password", param="file")
            if len(reader.pages) > MAX_PDF_PAGES:
                raise TooLarge(f"{too_large}: {len(reader.pages)} pages, more than the "
                               f"{MAX_PDF_PAGES} one document may have; split it",
                               param="file")
            metadata = reader.metadata
            title = _real_title(metadata.title if metadata is not None else None) or (
                _first_bookmark(reader))
            sections = []
            deadline = time.monotonic() + PARSE_SECONDS
            content = characters = 0
            for number, page in enumerate(reader.pages, start=1):
                content += _content_bytes(page)
                if content > content_budget:
                    raise TooLarge(
                        f"{too_large}: its pages hold far more content than a file of its "
                        "size does (pages sharing one compressed stream?); send its text "
                        "instead", param="file")
                if time.monotonic() > deadline:
                    raise TooLarge(f"{too_large} within {PARSE_SECONDS:g} seconds; split it",
                                   param="file")
                text = _page_text(page)
                characters += len(text)
                if characters > MAX_TEXT_CHARS:
                    raise TooLarge(f"{too_large}: more than {MAX_TEXT_CHARS} characters of "
                                   "text; split it", param="file")
                paragraphs = [" ".join(p.split()) for p in _paragraphs(text)]
                if paragraphs:
                    sections.append(_Section((), number, paragraphs))
    except (InvalidArgument, TooLarge):
        raise
    except LimitReachedError:
        raise TooLarge(f"{too_large}: a stream in it decompresses past what a file of its "
                       "size may hold", param="file") from None
    except Exception as exc:  # pypdf raises many kinds of error on a broken file
        log.info("PDF %s does not parse: %r", name, exc)
        raise InvalidArgument(
            f"{name} is not a PDF that can be read ({type(exc).__name__}: {exc})"[:500],
            param="file") from None
    if not sections:
        raise InvalidArgument(
            f"{name} holds no text that can be extracted (a scanned PDF needs OCR first)",
            param="file")
    return title, sections


# What PDF writers put in the title field when the author gave none: a browser's page
# ("about:blank"), a placeholder, or the name of the file it was made from.
_PLACEHOLDER_TITLES = frozenset({"about:blank", "untitled", "untitled document", "document",
                                 "title", "no title", "(anonymous)", "anonymous"})
_FILE_SUFFIXES = (".doc", ".docx", ".odt", ".rtf", ".pdf", ".tex", ".dvi", ".txt", ".md",
                  ".html", ".htm", ".ppt", ".pptx", ".xls", ".xlsx", ".indd", ".pages")


def _real_title(value: object) -> str | None:
    """A PDF's metadata title when it names the document, else None."""
    title = " ".join(str(value).split()) if value else ""
    lowered = title.lower()
    if (not title or lowered in _PLACEHOLDER_TITLES or lowered.endswith(_FILE_SUFFIXES)
            or lowered.startswith(("http://", "https://", "file:", "about:", "data:"))):
        return None
    return title


def _first_bookmark(reader: Any) -> str | None:
    """The title of a PDF's first bookmark (its first heading, where it has an outline)."""
    try:
        outline = reader.outline
    except Exception:  # a broken outline names nothing; the text is still read
        return None
    while isinstance(outline, list) and outline:
        outline = outline[0]
    return _real_title(getattr(outline, "title", None))


def _page_text(page: Any) -> str:
    """A page's text, words broken at a line's end ("know-\nledge") joined again."""
    return _BROKEN_WORD.sub(r"\1\2", page.extract_text() or "")


def _content_bytes(page: Any) -> int:
    """What reading a page's text interprets, judged before reading it: its content
    streams (decompressed), and the largest form XObject it names as often as it draws
    one (at most FORMS_PER_PAGE times)."""
    contents = page.get_contents()
    data = contents.get_data() if contents is not None else b""
    drawn = min(FORMS_PER_PAGE, data.count(b"Do"))
    resources = page.get("/Resources")
    forms = resources.get_object().get("/XObject") if drawn and resources is not None else None
    largest = 0
    if forms is not None:
        for form in forms.get_object().values():
            stream = form.get_object()
            if stream.get("/Subtype") == "/Form":
                largest = max(largest, len(stream.get_data()))
    return len(data) + largest * drawn


# -- chunks --------------------------------------------------------------------------------

def _tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def _pieces(paragraph: str) -> Iterator[str]:
    """A paragraph in pieces of at most MAX_TOKENS: whole when it fits, else its sentences,
    and a sentence too long alone by words."""
    if _tokens(paragraph) <= MAX_TOKENS:
        yield paragraph
        return
    for sentence in sentences(paragraph) or [paragraph]:
        if _tokens(sentence) <= MAX_TOKENS:
            yield sentence
            continue
        words: list[str] = []
        for word in sentence.split():
            if words and _tokens(" ".join([*words, word])) > TARGET_TOKENS:
                yield " ".join(words)
                words = []
            words.append(word[: MAX_TOKENS * CHARS_PER_TOKEN])
        if words:
            yield " ".join(words)


def _last_sentence(text: str) -> str:
    found = sentences(text)
    last = found[-1] if found else ""
    return last if _tokens(last) <= OVERLAP_TOKENS and last != text.strip() else ""


def _section_chunks(section: _Section) -> Iterator[str]:
    """The section's text in chunks of about TARGET_TOKENS, each after the first opening
    with the last sentence of the one before. Paragraphs are kept apart by a blank line,
    the pieces of a long one by a space."""
    current = ""
    size = 0
    for paragraph in section.paragraphs:
        for number, piece in enumerate(_pieces(paragraph)):
            cost = _tokens(piece) + 1
            if current and (size + cost > MAX_TOKENS or size >= TARGET_TOKENS):
                yield current
                current = _last_sentence(current)
                size = _tokens(current)
            joint = " " if number else "\n\n"
            current = f"{current}{joint}{piece}" if current else piece
            size += cost
    if current:
        yield current


def _chunks(sections: Iterable[_Section]) -> Iterator[Chunk]:
    position = 0
    for section in sections:
        heading = HEADING_SEPARATOR.join(section.path)
        for text in _section_chunks(section):
            yield Chunk(position, heading, text, section.page)
            position += 1
            if position > MAX_CHUNKS:  # enough to know it is too long
                return
