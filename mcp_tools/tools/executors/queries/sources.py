"""A search or fetch tool's sources, each resolved as a model query so that one safety model covers them all.

Each source becomes an unsaved list query over its model: the title and text fields are its output, the
search fields its search, the relations those the paths cross. ``build`` then refuses excluded models and
secret fields, and the query's permissions and scope are those of any model-query tool over the same fields.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import models

from mcp_tools.conf import mcp_settings
from mcp_tools.models import ModelQuery, SearchSource, Tool
from mcp_tools.tools.executors.queries.config import QuerySpec, build
from mcp_tools.tools.executors.queries.fields import SEP, FieldPathError, ResolvedField

Link = SearchSource.Link


@dataclass(frozen=True)
class Source:
    """One model a search or fetch tool reads, resolved."""

    label: str  # "app_label.model_name", the first part of every id
    query: QuerySpec
    title: ResolvedField | None
    text: tuple[ResolvedField, ...]
    link: str

    @property
    def model(self) -> type[models.Model]:
        return self.query.model


@dataclass(frozen=True)
class Sources:
    """Every source of one search or fetch tool."""

    tool_name: str
    kind: Tool.Kind
    sources: tuple[Source, ...]

    def find(self, label: str) -> Source | None:
        return next((source for source in self.sources if source.label == label), None)

    def permissions(self) -> tuple[str, ...]:
        """View on every model a source reads, as a model-query tool over the same fields needs."""
        return tuple(sorted({perm for source in self.sources for perm in source.query.permissions()}))


def as_query(row: SearchSource) -> ModelQuery:
    """The unsaved list query a source reads through: its fields as output, search fields as search."""
    paths = [p for p in (row.title_field, *(row.text_fields or ())) if p]
    crossed = {prefix for path in (*paths, *(row.search_fields or ())) for prefix in _prefixes(str(path))}
    limit = int(row.max_results)
    return ModelQuery(
        model=row.model,
        operation=ModelQuery.Operation.LIST,
        output_fields=list(dict.fromkeys(paths)),
        relations=sorted(crossed),
        search_fields=list(row.search_fields or ()),
        default_limit=limit,
        max_limit=limit,
        scope=row.scope,
    )


def _prefixes(path: str) -> list[str]:
    parts = path.split(SEP)
    return [SEP.join(parts[:i]) for i in range(1, len(parts))]


def build_source(row: SearchSource, tool_name: str) -> Source:
    """Resolve one source; FieldPathError names the first problem."""
    query = build(as_query(row), tool_name)
    by_path = {resolved.path: resolved for resolved in query.output}
    return Source(
        label=query.model._meta.label_lower,
        query=query,
        title=by_path.get(row.title_field) if row.title_field else None,
        text=tuple(by_path[str(path)] for path in row.text_fields or ()),
        link=row.link,
    )


def build_sources(rows: Iterable[SearchSource], tool_name: str, kind: Tool.Kind) -> Sources:
    """Resolve every source of a tool; FieldPathError when there is none or one does not fit."""
    sources = tuple(build_source(row, tool_name) for row in rows)
    if not sources:
        raise FieldPathError(f"Tool {tool_name!r} has no search sources.")
    return Sources(tool_name, kind, sources)


def source_errors(row: SearchSource) -> dict[str, list[str]]:
    """Problems with a source row, for ``clean()``."""
    tool = getattr(row, "tool", None)
    try:
        source = build_source(row, getattr(tool, "name", "") or "")
    except FieldPathError as exc:
        return {"__all__": [str(exc)]}
    problems: dict[str, list[str]] = {}
    kind = getattr(tool, "kind", None)
    if kind == Tool.Kind.SEARCH and not source.query.search:
        problems["search_fields"] = ["Choose the text fields a search looks in."]
    if kind == Tool.Kind.FETCH and not source.text:
        problems["text_fields"] = ["Choose the fields whose text fetch returns."]
    if not 1 <= int(row.max_results) <= int(mcp_settings.ROW_CAP):
        problems["max_results"] = [f"Choose between 1 and {mcp_settings.ROW_CAP} (ROW_CAP)."]
    if row.link == Link.PAGE and not hasattr(source.model, "get_absolute_url"):
        name = source.model._meta.label
        problems["link"] = [f"{name} has no get_absolute_url(): choose its admin change page, or add the method."]
    return problems
