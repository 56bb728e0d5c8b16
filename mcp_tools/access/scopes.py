"""Row scopes: ``(user, queryset) -> queryset`` callables, chosen by name per tool or registered for models.

A scope registered for a model applies wherever tools read that model's rows: model-query tools over it or
through a relation to it, foreign keys that writes set, and registered callables through :func:`scoped`
(``ctx.queryset(Model)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.contrib.auth import get_permission_codename
from django.db import models

from mcp_tools.access.permissions import has_perms

Scope = Callable[[Any, Any], Any]
S = TypeVar("S", bound=Scope)
ModelRef = type[models.Model] | str

_scopes: dict[str, Scope] = {}
_model_scopes: dict[str, list[str]] = {}  # lower-case "app_label.modelname" -> scope names
_registrations = 0  # grows with every registration, so that what was narrowed before one is built again


def query_scope(name: str, *, model: ModelRef | Iterable[ModelRef] | None = None) -> Callable[[S], S]:
    """Register a scope under ``name``, e.g. ``@query_scope("own_tenant")`` in an app's ``mcp_tools.py``.

    ``model`` (a model, an ``"app_label.Model"`` label, or several) makes the scope apply to every read of
    those models' rows, besides the tools that choose it by name.
    """
    labels = _labels(model)

    def register(func: S) -> S:
        global _registrations
        _registrations += 1
        _scopes[name] = func
        for label in labels:
            names = _model_scopes.setdefault(label, [])
            if name not in names:
                names.append(name)
        return func

    return register


def _labels(model: ModelRef | Iterable[ModelRef] | None) -> tuple[str, ...]:
    if model is None:
        return ()
    items = [model] if isinstance(model, str | type) else list(model)
    return tuple(item.lower() if isinstance(item, str) else item._meta.label_lower for item in items)


def registrations() -> int:
    """How many registrations have been made: a scope narrowed before a later one may be out of date."""
    return _registrations


def get(name: str) -> Scope | None:
    return _scopes.get(name)


def choices() -> list[tuple[str, str]]:
    return [(name, f"{name} ({func.__module__}.{func.__qualname__})") for name, func in sorted(_scopes.items())]


def registered_labels() -> list[str]:
    """The model labels that scopes were registered for, as written (lower case)."""
    return sorted(_model_scopes)


def for_model(model: type[models.Model]) -> list[Scope]:
    """The scopes registered for ``model`` (or, for a proxy, for the model it stands for), in order."""
    labels = dict.fromkeys([model._meta.label_lower, _concrete(model)._meta.label_lower])
    return [_scopes[name] for label in labels for name in _model_scopes.get(label, ())]


def restrict(model: type[models.Model], user: Any, queryset: Any) -> Any:
    """``queryset`` narrowed by every scope registered for ``model``; each narrows further."""
    for scope in for_model(model):
        queryset = scope(user, queryset)
    return queryset


def may_view(user: Any, model: type[models.Model]) -> bool:
    opts = model._meta
    return has_perms(user, [f"{opts.app_label}.{get_permission_codename('view', opts)}"])


def scoped(model: type[models.Model], user: Any) -> Any:
    """The rows of ``model`` that ``user`` may see: its default manager's rows narrowed by every scope
    registered for the model, and no rows at all without the model's view permission.

    A callable that reads through this answers "not found" alike for a row that is missing and one the
    caller may not see: ``scoped(Order, ctx.user).filter(pk=order_id).first()``.
    """
    queryset = model._default_manager.all()
    if not may_view(user, model):
        return queryset.none()
    return restrict(model, user, queryset)


def _concrete(model: type[models.Model]) -> type[models.Model]:
    concrete = model._meta.concrete_model
    return concrete if concrete is not None else model
