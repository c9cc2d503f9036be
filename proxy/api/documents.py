"""An agent's documents (its knowledge base): upload, list, read and delete.

`POST /agents/{agent_id}/documents` takes a document two ways:
- JSON `{title, text, media_type?}` (`media_type`: text/plain, the default, text/markdown
  or text/html);
- multipart/form-data with a `file` part (text, Markdown, HTML or PDF, told apart by the
  part's Content-Type or the file's name) and optional `title` and `media_type` fields.
proxy/edge/access.py lets multipart bodies through on this route alone (a browser form from
another site is still refused by the Origin check); proxy/api/uploads.py reads them (never
spooled to the system's temporary folder) and runs a few uploads per key at a time.

The document is cut into chunks along its structure (memory/write/documents.py), stored as the
agent's items and embedded before the answer: `POST /memory/search` with scope
`documents`, and the chat's memory block, find it at once. Every change goes to the
agent's processing log with the key that made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import msgspec
from litestar import Request, Response, route
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Operation, RequestBody, Schema
from litestar.params import PathParameter, QueryParameter

from mnemoproxy.errors import InvalidArgument
from mnemoproxy.proxy.api.models import (
    DocumentChunk,
    DocumentDeleted,
    DocumentDetail,
    DocumentPage,
    DocumentStored,
    DocumentView,
    page_cursor,
)
from mnemoproxy.proxy.api.uploads import read_form, spool_folder
from mnemoproxy.proxy.edge.access import record_change
from mnemoproxy.proxy.edge.errors import UnsupportedMediaType, error_responses
from mnemoproxy.proxy.edge.ids import MAX_ID_CHARS
from mnemoproxy.proxy.edge.json_body import require_shallow
from mnemoproxy.proxy.services import Services

PAGE_LIMIT = 500
MAX_ROW_ID = 2**63 - 1
MAX_TITLE_CHARS = 300
MULTIPART = "multipart/form-data"
JSON_TEXT_TYPES = ("text/plain", "text/markdown", "text/html")
AgentId = Annotated[str, PathParameter(max_length=MAX_ID_CHARS)]
DocumentId = Annotated[int, PathParameter(ge=1, le=MAX_ROW_ID)]
Limit = Annotated[int, QueryParameter(ge=1, le=PAGE_LIMIT)]
Cursor = Annotated[int, QueryParameter(ge=0, le=MAX_ROW_ID)]
ERRORS = error_responses(400, 401, 403, 404, 503)
BODY_ERRORS = error_responses(400, 401, 403, 408, 413, 415, 429, 503)


class DocumentText(msgspec.Struct, forbid_unknown_fields=True):
    """A document sent as text: Markdown and HTML are cut along their headings."""

    title: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TITLE_CHARS, pattern=r"\S")]
    text: Annotated[str, msgspec.Meta(min_length=1, pattern=r"\S")]
    media_type: str = "text/plain"


def _schema_of_text() -> Schema:
    return Schema(
        type=OpenAPIType.OBJECT, required=["title", "text"],
        properties={
            "title": Schema(type=OpenAPIType.STRING, max_length=MAX_TITLE_CHARS),
            "text": Schema(type=OpenAPIType.STRING),
            "media_type": Schema(type=OpenAPIType.STRING, enum=list(JSON_TEXT_TYPES),
                                 default="text/plain"),
        },
    )


@dataclass
class DocumentBody(Operation):
    """The upload route as the schema shows it: JSON text or a multipart file, read by the
    handler (Litestar's typed bodies take one media type)."""

    def __post_init__(self) -> None:
        self.request_body = RequestBody(
            required=True,
            description="a document: JSON {title, text, media_type?}, or a multipart form "
                        "with a `file` (text, Markdown, HTML or PDF) and optional `title` "
                        "and `media_type`",
            content={
                "application/json": OpenAPIMediaType(schema=_schema_of_text()),
                MULTIPART: OpenAPIMediaType(schema=Schema(
                    type=OpenAPIType.OBJECT, required=["file"],
                    properties={
                        "file": Schema(type=OpenAPIType.STRING, format="binary"),  # type: ignore[arg-type]
                        "title": Schema(type=OpenAPIType.STRING, max_length=MAX_TITLE_CHARS),
                        "media_type": Schema(type=OpenAPIType.STRING),
                    },
                )),
            },
        )



async def _from_json(request: Request[Any, Any, Any]) -> tuple[bytes | str, str, str, None]:
    raw = await request.body()
    require_shallow(raw)
    try:
        body = msgspec.json.decode(raw, type=DocumentText)
    except msgspec.ValidationError as exc:
        message = str(exc)
        field = message.rsplit("at `$.", 1)[-1].rstrip("`") if "at `$." in message else None
        missing = message.split("missing required field `", 1)
        if len(missing) == 2:
            field = missing[1].split("`", 1)[0]
        raise InvalidArgument(f"invalid document: {message}", param=field) from None
    except msgspec.DecodeError:
        raise InvalidArgument("the body is not valid JSON", param="body") from None
    if body.media_type not in JSON_TEXT_TYPES:
        raise InvalidArgument(
            f"media_type must be one of {', '.join(JSON_TEXT_TYPES)} (send a PDF as a "
            "multipart file)", param="media_type")
    return body.text, body.media_type, body.title, None


async def _from_form(request: Request[Any, Any, Any], spool: Path | None
                     ) -> tuple[bytes | str, str | None, str | None, str | None]:
    upload = await read_form(request, spool)
    if upload.data is None:
        raise InvalidArgument("send the document as a multipart part named 'file'",
                              param="file")
    title = upload.fields.get("title")
    media_type = upload.fields.get("media_type")
    if title is not None and len(title) > MAX_TITLE_CHARS:
        raise InvalidArgument(f"title is longer than {MAX_TITLE_CHARS} characters",
                              param="title")
    if not upload.data:
        raise InvalidArgument(f"{upload.filename or 'the file'} is empty", param="file")
    declared = media_type or upload.content_type
    return upload.data, declared, title, upload.filename


@route("/agents/{agent_id:str}/documents", http_method=["POST"], status_code=201,
       operation_class=DocumentBody, responses=BODY_ERRORS)
async def add_document(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services],
) -> Response[DocumentStored]:
    """Store a document in the agent's knowledge base (the agent is created if new): cut
    into chunks along its structure and embedded before the answer (201). The same bytes
    sent again are not stored twice (200, `unchanged`); a file of the same name with other
    content replaces the older one (201, `updated`)."""
    agent_id, memory = services.agent_memory(request, agent_id)
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    async with services.uploads.taken(request):
        if kind == MULTIPART:
            data, declared, title, filename = await _from_form(
                request, spool_folder(services.settings))
        elif kind == "application/json" or kind.endswith("+json"):
            data, declared, title, filename = await _from_json(request)
        else:
            raise UnsupportedMediaType(
                "send the document as JSON {title, text} or as a multipart/form-data file",
                param="Content-Type")
        stored, change = await memory.add_document(
            agent_id, data, media_type=declared, title=title, filename=filename)
    if change == "unchanged":
        return Response(DocumentStored(agent_id, DocumentView.of(stored), change),
                        status_code=200)
    await record_change(request, memory, agent_id)
    return Response(DocumentStored(agent_id, DocumentView.of(stored), change), status_code=201)


@route("/agents/{agent_id:str}/documents", http_method=["GET", "HEAD"], responses=ERRORS)
async def agent_documents(
    request: Request[Any, Any, Any], agent_id: AgentId, services: NamedDependency[Services],
    limit: Limit = 100, cursor: Cursor = 0,
) -> DocumentPage:
    """The agent's documents in the order they were stored, a page at a time: pass the
    answer's `next_cursor` as `cursor` for the next page (null: no more)."""
    agent_id, memory = services.agent_memory(request, agent_id)
    rows = await memory.documents(agent_id, limit=limit, after_id=cursor)
    return DocumentPage(agent_id, [DocumentView.of(d) for d in rows],
                        next_cursor=page_cursor([d.id for d in rows], limit))


@route("/agents/{agent_id:str}/documents/{document_id:int}", http_method=["GET", "HEAD"],
       responses=ERRORS)
async def agent_document(
    request: Request[Any, Any, Any], agent_id: AgentId, document_id: DocumentId,
    services: NamedDependency[Services],
) -> DocumentDetail:
    """One document with its chunks in order."""
    agent_id, memory = services.agent_memory(request, agent_id)
    document, chunks = await memory.document(agent_id, document_id)
    return DocumentDetail(agent_id, DocumentView.of(document),
                          [DocumentChunk.of(c) for c in chunks])


@route("/agents/{agent_id:str}/documents/{document_id:int}", http_method=["DELETE"],
       status_code=200, responses=ERRORS)
async def delete_document(
    request: Request[Any, Any, Any], agent_id: AgentId, document_id: DocumentId,
    services: NamedDependency[Services],
) -> DocumentDeleted:
    """Delete a document for good: its chunks, their search entries and vectors."""
    agent_id, memory = services.agent_memory(request, agent_id)
    chunks = await memory.delete_document(agent_id, document_id)
    await record_change(request, memory, agent_id)
    return DocumentDeleted(agent_id, document_id, deleted=True, chunks=chunks)


DOCUMENT_ROUTES = [add_document, agent_documents, agent_document, delete_document]
