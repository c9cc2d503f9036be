"""Document uploads' own limits: how many one key runs at once, and where a multipart body
waits while it arrives.

- Each caller (a key, or the local user without keys) runs at most UPLOADS_PER_KEY
  uploads at once, from the first byte of the body to the stored document; one more gets
  429. The documents are then read on threads of memory's own (PARSE_THREADS), never on
  the pool the read path uses.
- A multipart body is read here rather than by the framework, which spools a file part
  over 1 MiB to the system's temporary folder, in clear. The file part stays in memory up
  to IN_MEMORY_BYTES and then goes to a file in data_dir/uploads (0700; unlinked as soon as
  it is made, so it ends with the upload, even if the process dies); with
  `encryption_key_file` it stays in memory whole (max_body_bytes bounds it), so no clear
  copy of an upload ever reaches the disk.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from litestar import Request
from multipart import MultipartSegment, ParserError, ParserLimitReached, PushMultipartParser

from mnemoproxy.config.settings import Settings
from mnemoproxy.errors import InvalidArgument, TooLarge
from mnemoproxy.proxy.edge.access import caller
from mnemoproxy.proxy.edge.errors import TooManyRequests

UPLOADS_PER_KEY = 2
SPOOL_FOLDER = "uploads"
IN_MEMORY_BYTES = 1024 * 1024
MAX_FIELD_CHARS = 10_000  # a form's text fields (title, media_type)
MAX_PARTS = 16


class UploadSlots:
    """Uploads in flight per caller; a caller is counted only while it has some."""

    def __init__(self, per_caller: int = UPLOADS_PER_KEY) -> None:
        self.per_caller = per_caller
        self._running: dict[str, int] = {}

    @asynccontextmanager
    async def taken(self, request: Request[Any, Any, Any]) -> AsyncIterator[None]:
        who = caller(request).name
        if self._running.get(who, 0) >= self.per_caller:
            raise TooManyRequests(
                f"this key has {self.per_caller} uploads under way already; wait for one to "
                "finish, then send the next", code="too_many_uploads")
        self._running[who] = self._running.get(who, 0) + 1
        try:
            yield
        finally:
            left = self._running[who] - 1
            if left:
                self._running[who] = left
            else:
                del self._running[who]


@dataclass
class Upload:
    """A multipart form's file part and text fields."""

    fields: dict[str, str] = field(default_factory=dict)
    filename: str | None = None
    content_type: str | None = None
    data: bytes | None = None


def spool_folder(settings: Settings) -> Path | None:
    """Where a large file part waits: data_dir/uploads, or nowhere (in memory) when memory
    is encrypted at rest."""
    return None if settings.encryption_key_file else Path(settings.data_dir) / SPOOL_FOLDER


async def read_form(request: Request[Any, Any, Any], spool: Path | None) -> Upload:
    """The multipart body's file part (named `file`) and its other fields, as it arrives."""
    _, options = request.content_type
    boundary = options.get("boundary")
    if not boundary:
        raise InvalidArgument("a multipart body needs a boundary in its Content-Type",
                              param="Content-Type")
    upload = Upload()
    part: MultipartSegment | None = None
    file: IO[bytes] | None = None  # the first file part's buffer, while it arrives
    text = bytearray()
    try:
        with PushMultipartParser(boundary.encode("latin-1"), max_segment_count=MAX_PARTS) as parser:
            async for chunk in request.stream():
                for event in parser.parse(chunk):
                    if isinstance(event, MultipartSegment):
                        part, text = event, bytearray()
                        if _is_file(part) and file is None and upload.data is None:
                            file = _spooled(spool)
                    elif event:  # a piece of the part's body
                        if part is not None and _is_file(part):
                            if file is not None:
                                file.write(event)
                        elif len(text) + len(event) > MAX_FIELD_CHARS * 4:
                            raise InvalidArgument("a form field is too long", param="body")
                        else:
                            text.extend(event)
                    elif part is not None:  # the part's end
                        if _is_file(part) and file is not None:
                            file.seek(0)
                            upload.data = file.read()
                            upload.filename = part.filename or None
                            upload.content_type = part.content_type
                            file.close()
                            file = None
                        elif not _is_file(part):
                            upload.fields[part.name] = text.decode(part.charset or "utf-8",
                                                                   "replace")
                        part = None
            if not parser.closed:
                raise InvalidArgument("the multipart body ended before its last part",
                                      param="body")
    except ParserLimitReached:
        raise TooLarge(f"a multipart body may hold at most {MAX_PARTS} parts",
                       param="body") from None
    except ParserError as exc:
        raise InvalidArgument(f"the multipart body is malformed ({exc})", param="body") from None
    finally:
        if file is not None:
            file.close()
    return upload


def _is_file(part: MultipartSegment) -> bool:
    return part.name == "file" and part.filename is not None


def _spooled(folder: Path | None) -> IO[bytes]:
    """A file part's buffer: in memory, rolled over to an unlinked file in `folder` past
    IN_MEMORY_BYTES; in memory throughout without a folder."""
    if folder is None:
        return io.BytesIO()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return tempfile.SpooledTemporaryFile(max_size=IN_MEMORY_BYTES, dir=str(folder))
