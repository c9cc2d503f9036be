"""A minimal PDF written by hand, for tests: one line of text per entry of each page's list
(Helvetica, no compression; an empty entry makes a blank line, i.e. a new paragraph), with
an optional title in its metadata. pypdf's writer adds pages but not text; a hand-written
file keeps the tests free of a PDF generator.

`page_bomb` makes a hostile one: many pages sharing one compressed content stream, each
page a long text, the whole file some fifteen kilobytes."""

from __future__ import annotations

import zlib

FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
PAGE = (b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
        b"/Resources << /Font << /F1 %d 0 R >> >> >>")


def _escaped(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content(lines: list[str]) -> bytes:
    operations = ["BT /F1 11 Tf 14 TL 50 760 Td"]
    operations += [f"({_escaped(line)}) Tj T*" for line in lines]
    operations.append("ET")
    return "\n".join(operations).encode("latin-1")


def page_bomb(pages: int = 80, lines: int = 20_000) -> bytes:
    """A PDF of `pages` pages that all show one Flate-compressed content stream of `lines`
    lines: about 15 KB, and the same long text to extract from every page."""
    stream = zlib.compress(_content(["All work and no play makes a dull PDF."] * lines), 9)
    content = b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (
        len(stream), stream)
    return make_pdf([[]] * pages, shared_content=content)


def make_pdf(pages: list[list[str]], title: str | None = None,
             bookmark: str | None = None, *, shared_content: bytes | None = None,
             padding: int = 0) -> bytes:
    """The PDF's bytes; `bookmark` adds an outline of one entry (to the first page),
    `shared_content` is one content stream object every page shows, `padding` a comment of
    that many bytes (a large file of little text)."""
    objects: list[bytes] = [b"", b""]  # the catalog and the page tree, filled in last
    catalog, tree = 1, 2
    objects.append(FONT)
    font = len(objects)
    shared = None
    if shared_content is not None:
        objects.append(shared_content)
        shared = len(objects)
    kids: list[int] = []
    for lines in pages:
        if shared is None:
            stream = _content(lines)
            objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        objects.append(PAGE % (tree, shared or len(objects), font))
        kids.append(len(objects))
    outline = b""
    if bookmark:
        objects.append(b"")  # the outline's root, filled in once its entry has a number
        root = len(objects)
        objects.append(b"<< /Title (%s) /Parent %d 0 R /Dest [%d 0 R /Fit] >>"
                       % (_escaped(bookmark).encode("latin-1"), root, kids[0]))
        objects[root - 1] = (b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count 1 >>"
                             % (len(objects), len(objects)))
        outline = b" /Outlines %d 0 R" % root
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R%s >>" % (tree, outline)
    references = b" ".join(b"%d 0 R" % kid for kid in kids)
    objects[tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (references, len(kids))
    info = None
    if title:
        objects.append(b"<< /Title (%s) >>" % _escaped(title).encode("latin-1"))
        info = len(objects)
    out = bytearray(b"%PDF-1.4\n")
    if padding:
        out += b"%" + b"x" * padding + b"\n"
    offsets: list[int] = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if info is not None:
        trailer += b" /Info %d 0 R" % info
    out += b"trailer\n%s >>\nstartxref\n%d\n%%%%EOF\n" % (trailer, xref)
    return bytes(out)
