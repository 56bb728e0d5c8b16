"""Rows as predictable JSON (see :mod:`mcp_tools.tools.encoding`), relations as their keys; rows shaped by a
DRF serializer, and which dotted paths may name one."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db import models
from django.utils.module_loading import import_string

from mcp_tools.tools.encoding import plain


def row(values: dict[str, Any]) -> dict[str, Any]:
    return {key: plain(item, lenient=True) for key, item in values.items()}


def serializer_problem(path: str, model: type[models.Model] | None = None) -> str | None:
    """Why ``path`` may not shape a query's rows, or None.

    It must name a DRF serializer class in a module of an installed app (checked before anything is
    imported, so that a configuration never makes the server import an arbitrary module) and, when the
    serializer names its model, the query's ``model``.
    """
    module = path.rpartition(".")[0]
    if not module or apps.get_containing_app_config(module) is None:
        return f"{path} is not in a module of an installed app."
    try:
        from rest_framework.serializers import BaseSerializer  # an optional extra
    except ImportError:
        return "A serializer needs Django REST framework installed."
    try:
        found = import_string(path)
    except ImportError:
        return f"Cannot import {path}."
    if not (isinstance(found, type) and issubclass(found, BaseSerializer)):
        return f"{path} is not a Django REST framework serializer."
    named = getattr(getattr(found, "Meta", None), "model", None)
    if model is not None and named is not None and named is not model:
        return f"{path} serializes {named._meta.label}, not {model._meta.label}."
    return None


def with_serializer(path: str, instances: Any, model: type[models.Model] | None = None) -> list[dict[str, Any]]:
    """Rows shaped by a DRF serializer named by dotted path (refused, as a row saved unchecked may hold any path)."""
    problem = serializer_problem(path, model)
    if problem is not None:
        raise LookupError(problem)
    serializer_class = import_string(path)
    return [row(dict(data)) for data in serializer_class(instances, many=True).data]
