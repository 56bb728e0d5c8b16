"""Registered Python callables: the ``@tool`` decorator, lookup and autodiscovery."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from django.utils.module_loading import autodiscover_modules

from mcp_tools.tools import signatures
from mcp_tools.tools.context import Context
from mcp_tools.validators import TOOL_NAME_RE

F = TypeVar("F", bound=Callable[..., Any])
CONTEXT_PARAMETER = "ctx"
CONFIRM_CHOICES = ("", "none", "user")


@dataclass(frozen=True)
class RegisteredTool:
    """A function registered with ``@tool`` and what its signature says about it."""

    key: str
    func: Callable[..., Any]
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wraps_result: bool
    annotations: dict[str, bool] = field(default_factory=dict)
    is_async: bool = False
    takes_context: bool = False
    requires: dict[str, Any] = field(default_factory=dict)
    confirm: str = ""  # who confirms its calls when the tool row leaves it blank: "", "none" or "user"

    @property
    def label(self) -> str:
        return f"{self.key} ({self.func.__module__}.{self.func.__qualname__})"


class Registry:
    """Every callable registered with ``@tool``, by key."""

    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}

    def register(self, registered: RegisteredTool) -> None:
        existing = self._tools.get(registered.key)
        if existing is not None and existing.func is not registered.func:
            same = (existing.func.__module__, existing.func.__qualname__)
            if same != (registered.func.__module__, registered.func.__qualname__):
                raise ValueError(f"A tool is already registered as {registered.key!r}: {existing.label}")
        self._tools[registered.key] = registered

    def unregister(self, key: str) -> None:
        self._tools.pop(key, None)

    def get(self, key: str) -> RegisteredTool | None:
        return self._tools.get(key)

    def all(self) -> list[RegisteredTool]:
        return sorted(self._tools.values(), key=lambda t: t.key)

    def choices(self) -> list[tuple[str, str]]:
        return [(t.key, t.label) for t in self.all()]

    def autodiscover(self) -> None:
        autodiscover_modules("mcp_tools")


registry = Registry()


def build(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    title: str = "",
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    annotations: dict[str, bool] | None = None,
    requires: dict[str, Any] | None = None,
    confirm: str = "",
) -> RegisteredTool:
    """Describe ``func`` as a tool: schemas from its signature unless given.

    ``requires`` names client capabilities the tool needs (``{"sampling": {}}``); 2026-07-28 clients
    that do not declare them get -32021. ``confirm`` says who confirms its calls unless the tool's row says:
    ``"user"`` (the person at the client says yes first) or ``"none"``; "": the user when its
    ``annotations`` say it writes (``readOnlyHint: False`` or ``destructiveHint: True``).
    """
    key = func.__name__ if name is None else name
    if not TOOL_NAME_RE.match(key):
        raise ValueError(f"Tool name {key!r} must be 1-64 characters of [A-Za-z0-9_.-]")
    if confirm not in CONFIRM_CHOICES:
        raise ValueError(f"confirm must be one of {', '.join(map(repr, CONFIRM_CHOICES))}, not {confirm!r}")
    parameters = inspect.signature(func).parameters
    takes_context = CONTEXT_PARAMETER in parameters
    summary, _ = signatures.parse_docstring(func.__doc__)
    derived_output, wraps = signatures.output_schema(func)
    return RegisteredTool(
        key=key,
        func=func,
        title=title,
        description=summary if description is None else description,
        input_schema=input_schema or signatures.input_schema(func, skip=(CONTEXT_PARAMETER,)),
        output_schema=output_schema if output_schema is not None else derived_output,
        wraps_result=wraps and output_schema is None,
        annotations=dict(annotations or {}),
        is_async=inspect.iscoroutinefunction(func),
        takes_context=takes_context,
        requires=dict(requires or {}),
        confirm=confirm,
    )


@overload
def tool(func: F) -> F: ...
@overload
def tool(
    *,
    name: str | None = None,
    title: str = "",
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    annotations: dict[str, bool] | None = None,
    requires: dict[str, Any] | None = None,
    confirm: str = "",
) -> Callable[[F], F]: ...


def tool(func: F | None = None, **options: Any) -> F | Callable[[F], F]:
    """Register a function as a tool implementation; ``mcp_sync`` creates its Tool row."""

    def decorate(f: F) -> F:
        registry.register(build(f, **options))
        return f

    return decorate(func) if func is not None else decorate


__all__ = ["Context", "RegisteredTool", "Registry", "registry", "tool"]
