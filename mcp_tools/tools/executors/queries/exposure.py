"""What a saved model-query configuration names that tools may never expose: excluded models, secret fields.

The engine refuses such configurations outright (``build`` raises); this reads the same rows without
refusing, field by field, so that the system checks can say exactly what an existing tool reached for.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.core.exceptions import FieldDoesNotExist
from django.db import models

from mcp_tools.tools.executors.queries.config import LOOKUP_OPERATIONS
from mcp_tools.tools.executors.queries.fields import SEP, excluded, is_secret, model_label

PATH_LISTS = (
    "output_fields",
    "relations",
    "filters",
    "ordering_fields",
    "search_fields",
    "aggregate_fields",
    "group_by_fields",
    "writable_fields",
)


@dataclass
class Exposure:
    """Excluded models a configuration reaches, and its secret paths as (allow-list, path) pairs."""

    models: list[str] = field(default_factory=list)
    secrets: list[tuple[str, str]] = field(default_factory=list)


def exposure(row: Any) -> Exposure:
    """Everything ``row`` (a ModelQuery) names beyond the safety model; nothing for an unknown model."""
    found = Exposure()
    try:
        model = apps.get_model(str(row.model))
    except (LookupError, ValueError):
        return found
    if excluded(model):
        found.models.append(model_label(model))
    for allow_list, path in _named_paths(row):
        _inspect(model, allow_list, path, found)
    return found


def _named_paths(row: Any) -> Iterator[tuple[str, str]]:
    for allow_list in PATH_LISTS:
        for entry in getattr(row, allow_list, None) or ():
            yield allow_list, str(entry)
    if getattr(row, "operation", "") in LOOKUP_OPERATIONS:
        yield "lookup_field", str(getattr(row, "lookup_field", "") or "pk")
    if getattr(row, "scope_field", ""):
        yield "scope_field", str(row.scope_field)


def _inspect(model: type[models.Model], allow_list: str, path: str, found: Exposure) -> None:
    for prefix, reached, target in walk(model, path):
        if is_secret(reached):
            if (allow_list, prefix) not in found.secrets:
                found.secrets.append((allow_list, prefix))
            return
        if target is not None and excluded(target):
            if model_label(target) not in found.models:
                found.models.append(model_label(target))
            return


def walk(model: type[models.Model], path: str) -> Iterator[tuple[str, Any, type[models.Model] | None]]:
    """Each field ``path`` names, as (path so far, field, the model it leads to); stops at a lookup."""
    parts = path.split(SEP)
    current = model
    for index, part in enumerate(parts):
        try:
            reached: Any = current._meta.pk if part == "pk" else current._meta.get_field(part)
        except FieldDoesNotExist:
            return
        related = reached.related_model if reached.is_relation else None
        target = related if isinstance(related, type) and issubclass(related, models.Model) else None
        yield SEP.join(parts[: index + 1]), reached, target
        if target is None:
            return
        current = target
