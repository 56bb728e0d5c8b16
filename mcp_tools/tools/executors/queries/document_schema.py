"""The input and output schemas of the ChatGPT pair, with the argument and result shapes ChatGPT documents."""

from __future__ import annotations

from typing import Any

from mcp_tools.models import Tool
from mcp_tools.tools.executors.queries.documents import ID_SEP, MAX_ID, MAX_QUERY
from mcp_tools.tools.executors.queries.sources import Sources

TEXT = {"type": "string"}
RESULT = {
    "type": "object",
    "properties": {"id": TEXT, "title": TEXT, "url": TEXT},
    "required": ["id", "title", "url"],
    "additionalProperties": False,
}
DOCUMENT = {
    "type": "object",
    "properties": {
        "id": TEXT,
        "title": TEXT,
        "text": TEXT,
        "url": TEXT,
        "metadata": {"type": "object", "additionalProperties": TEXT},
    },
    "required": ["id", "title", "text", "url"],
    "additionalProperties": False,
}


def input_schema(sources: Sources) -> dict[str, Any]:
    if sources.kind == Tool.Kind.SEARCH:
        names = ", ".join(str(s.model._meta.verbose_name_plural) for s in sources.sources if s.query.search)
        argument = {
            "type": "string",
            "maxLength": MAX_QUERY,
            "description": f"Words to look for in {names}; a result contains every word, ignoring case.",
        }
        return _object({"query": argument})
    example = f"{sources.sources[0].label}{ID_SEP}1"
    argument = {"type": "string", "maxLength": MAX_ID, "description": f'An id that search returned, e.g. "{example}".'}
    return _object({"id": argument})


def output_schema(sources: Sources) -> dict[str, Any]:
    if sources.kind == Tool.Kind.SEARCH:
        results = {"results": {"type": "array", "items": RESULT}}
        return {"type": "object", "properties": results, "required": ["results"], "additionalProperties": False}
    return DOCUMENT


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
