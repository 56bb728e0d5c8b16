"""What a tool tells clients about itself besides its schemas: its title and the hints derived from what it does.

A hint left unset on the row (null) is derived by the tool's kind; one the owner set wins. Registered callables
derive none: only their author knows what they do.
"""

from __future__ import annotations

from django.utils.text import capfirst

from mcp_tools.models import Tool
from mcp_tools.tools.kinds.registry import kinds


def derived(row: Tool) -> dict[str, bool]:
    """The hints that follow from what the tool does, as its kind says (none for an unknown kind)."""
    kind = kinds.find(row.kind)
    return kind.hints(row) if kind is not None else {}


def annotations_of(row: Tool) -> dict[str, bool]:
    """The hints a client sees: the derived ones, overridden by those set on the row."""
    return {**derived(row), **row.annotations}


def humanised(name: str) -> str:
    """A title made from a tool name: ``list_orders`` reads "List orders"."""
    words = " ".join(name.replace("_", " ").replace("-", " ").replace(".", " ").split())
    return str(capfirst(words))


def title(row: Tool) -> str:
    return row.title or humanised(row.name)
