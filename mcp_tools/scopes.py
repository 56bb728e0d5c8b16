"""Registered row scopes: ``(user, queryset) -> queryset`` callables that model-query tools apply."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

Scope = Callable[[Any, Any], Any]
S = TypeVar("S", bound=Scope)

_scopes: dict[str, Scope] = {}


def query_scope(name: str) -> Callable[[S], S]:
    """Register a scope under ``name``, e.g. ``@query_scope("own_tenant")`` in an app's ``mcp_tools.py``."""

    def register(func: S) -> S:
        _scopes[name] = func
        return func

    return register


def get(name: str) -> Scope | None:
    return _scopes.get(name)


def choices() -> list[tuple[str, str]]:
    return [(name, f"{name} ({func.__module__}.{func.__qualname__})") for name, func in sorted(_scopes.items())]
