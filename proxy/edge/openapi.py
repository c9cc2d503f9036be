"""The OpenAPI schema at /schema/openapi.json: a struct's docstring is its schema's
description. Litestar describes a msgspec struct's fields but not the struct itself
(litestar-org/litestar#3997), and the docstrings of the request and answer models are
what a reader of the schema needs most.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# Litestar's own struct plugin, extended: it is not exported, and litestar is pinned <3.
from litestar._openapi.schema_generation.plugins import StructSchemaPlugin

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.openapi.spec import Schema
    from litestar.typing import FieldDefinition


class DescribedStructs(StructSchemaPlugin):
    """msgspec structs as Litestar describes them, with their docstrings."""

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        doc = field_definition.type_.__doc__  # None when the class has none of its own
        if doc and schema.description is None:
            schema.description = " ".join(doc.split())  # one paragraph, as written
        return schema
