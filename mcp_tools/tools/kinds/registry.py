"""Every kind of tool the site knows, by name: the built-in ones and those a site registers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TypeVar

from mcp_tools.models import GENERATED_KINDS
from mcp_tools.tools.kinds.base import CONFIGURATION_PARTS, ToolKind

K = TypeVar("K", bound=type[ToolKind])
KIND_NAME = re.compile(r"^[a-z][a-z0-9_]{0,49}$")


class UnknownKind(LookupError):
    """A tool names a kind nobody registered (an app removed from INSTALLED_APPS, a typo in a file)."""


class KindRegistry:
    """Kinds by name, in the order they were registered (the admin offers them in that order)."""

    def __init__(self) -> None:
        self._kinds: dict[str, ToolKind] = {}

    def register(self, kind_class: K) -> K:
        """Register a ``ToolKind`` subclass (usable as a class decorator). Registering the same class again is
        a no-op; another class under a taken name is refused."""
        name = kind_class.name
        if not KIND_NAME.match(name or ""):
            raise ValueError(f"{kind_class.__qualname__}.name must be 1-50 lowercase letters, digits or '_': {name!r}")
        unknown = set(kind_class.uses) - CONFIGURATION_PARTS
        if unknown or not set(kind_class.requires) <= set(kind_class.uses):
            raise ValueError(f"{kind_class.__qualname__}.uses/requires name unknown parts: {sorted(unknown)}")
        existing = self._kinds.get(name)
        if existing is not None:
            if _same_class(type(existing), kind_class):
                return kind_class
            raise ValueError(f"A tool kind is already registered as {name!r}: {type(existing).__qualname__}")
        self._kinds[name] = kind_class()
        if kind_class.generates_schemas:
            GENERATED_KINDS.add(name)
        return kind_class

    def unregister(self, name: str) -> None:
        self._kinds.pop(name, None)
        GENERATED_KINDS.discard(name)

    def get(self, name: str) -> ToolKind:
        try:
            return self._kinds[name]
        except KeyError:
            raise UnknownKind(f"No tool kind is registered as {name!r}") from None

    def find(self, name: str) -> ToolKind | None:
        return self._kinds.get(name)

    def __iter__(self) -> Iterator[ToolKind]:
        return iter(list(self._kinds.values()))

    def choices(self) -> list[tuple[str, str]]:
        return [(kind.name, str(kind.label or kind.name)) for kind in self._kinds.values()]


def _same_class(a: type, b: type) -> bool:
    # A module imported twice (autoreload, tests) defines an equal class that is not the same object.
    return a is b or (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


kinds = KindRegistry()
register_kind = kinds.register


def uses(kind_name: str, part: str) -> bool:
    """Whether the kind named ``kind_name`` keeps its configuration in ``part`` (see ``ToolKind.uses``)."""
    kind = kinds.find(kind_name)
    return kind is not None and part in kind.uses
