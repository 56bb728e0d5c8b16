"""The ChatGPT pair: ``search`` finds rows of its sources by text, ``fetch`` returns one by the id search gave.

Both read through the sources' model queries (``in_scope``), so that a row the caller may not see and a row
that does not exist read alike: search leaves it out, fetch answers "No document" for either.
"""

from __future__ import annotations

from typing import Any

from django.db import router
from django.db.models import Q, QuerySet

from mcp_tools.exceptions import InvalidArguments, ToolError
from mcp_tools.models import Tool
from mcp_tools.tools.executors.queries import links, serialize
from mcp_tools.tools.executors.queries.arguments import INTEGER_RANGE, NUL, convert
from mcp_tools.tools.executors.queries.call import in_scope
from mcp_tools.tools.executors.queries.operations import contains, guarded
from mcp_tools.tools.executors.queries.sources import Source, Sources

MAX_QUERY = 200
MAX_ID = 300
MAX_TERMS = 8
ID_SEP = ":"


def run(sources: Sources, arguments: dict[str, Any], user: Any) -> dict[str, Any]:
    """Run a search or fetch tool whose arguments passed its input schema."""
    if sources.kind == Tool.Kind.SEARCH:
        return {"results": search(sources, str(arguments["query"]), user)}
    return fetch(sources, str(arguments["id"]), user)


def search(sources: Sources, query: str, user: Any) -> list[dict[str, Any]]:
    """Rows whose search fields contain every word of ``query`` (ignoring case), source by source, by key."""
    terms = query[:MAX_QUERY].replace(NUL, " ").split()[:MAX_TERMS]
    if not terms:
        return []
    found: list[dict[str, Any]] = []
    for source in sources.sources:
        if not source.query.search:
            continue
        matching = Q()
        for term in terms:
            matching &= contains(source.query.search, term)
        found += [_result(document) for document in _read(source, user, matching, source.query.max_limit)]
    return found


def fetch(sources: Sources, document_id: str, user: Any) -> dict[str, Any]:
    """The document ``document_id`` names; an id the caller may not read is as unknown as a made-up one."""
    source, pk = _parse(sources, document_id)
    documents = _read(source, user, Q(pk=pk), 1) if source is not None else []
    if not documents:
        raise ToolError(f"No document with id {document_id[:MAX_ID]!r}.")
    return documents[0]


def _parse(sources: Sources, document_id: str) -> tuple[Source | None, Any]:
    label, sep, raw = document_id[:MAX_ID].partition(ID_SEP)
    source = sources.find(label) if sep and raw else None
    if source is None:
        return None, None
    try:
        pk = convert(source.model._meta.pk, raw)
    except InvalidArguments:
        return None, None
    if isinstance(pk, int) and pk not in INTEGER_RANGE:
        return None, None
    return source, pk


def _read(source: Source, user: Any, condition: Q, limit: int) -> list[dict[str, Any]]:
    alias = router.db_for_read(source.model)
    with guarded(alias):
        queryset: QuerySet[Any] = in_scope(source.query, user, alias).filter(condition).order_by("pk")
        rows = [serialize.row(r) for r in queryset.values("pk", *(f.path for f in source.query.output))[:limit]]
        instances = _instances(source, queryset, rows)
        return [_document(source, row, instances.get(row["pk"])) for row in rows]


def _instances(source: Source, queryset: QuerySet[Any], rows: list[dict[str, Any]]) -> dict[Any, Any]:
    """The model instances ``get_absolute_url`` needs, by the serialised key of each row."""
    if not rows or not links.needs_instances(source.link):
        return {}
    found = queryset.in_bulk([row["pk"] for row in rows])
    return {serialize.row({"pk": pk})["pk"]: instance for pk, instance in found.items()}


def _document(source: Source, row: dict[str, Any], instance: Any) -> dict[str, Any]:
    pk = row["pk"]
    meta = source.model._meta
    title = row.get(source.title.path) if source.title is not None else None
    lines = [
        f"{_label(field.path, field.field)}: {row[field.path]}"
        for field in source.text
        if row[field.path] not in (None, "")
    ]
    return {
        "id": f"{source.label}{ID_SEP}{pk}",
        "title": str(title) if title not in (None, "") else f"{str(meta.verbose_name).capitalize()} {pk}",
        "text": "\n".join(lines),
        "url": links.url(source.link, source.model, pk, instance),
        "metadata": {"model": meta.label},
    }


def _result(document: dict[str, Any]) -> dict[str, Any]:
    return {key: document[key] for key in ("id", "title", "url")}


def _label(path: str, field: Any) -> str:
    prefix = path.rpartition("__")[0].replace("__", " ").replace("_", " ")
    name = f"{prefix} {field.verbose_name}" if prefix else str(field.verbose_name)
    return name[:1].upper() + name[1:]
