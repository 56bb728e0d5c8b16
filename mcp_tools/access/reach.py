"""How far a credential reaches into its user's tools: all of them, the read-only ones, or a chosen few.

A user's grants and permissions say which tools the user may use; a credential may be narrowed further by
its holder's choice (an OAuth application the user allowed only some tools). The narrowing never widens:
a tool outside a credential's reach is, to that credential, exactly an unknown tool.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reach:
    """The tools a credential may list and call among those its user may: read-only ones, chosen ones, or both."""

    read_only: bool = False
    #: The ids of the chosen tools; None when the credential is not narrowed to a chosen set.
    tool_ids: frozenset[int] | None = None

    @classmethod
    def chosen(cls, tool_ids: Iterable[int]) -> Reach:
        return cls(tool_ids=frozenset(tool_ids))

    def allows(self, entry: Any) -> bool:
        """Whether a catalog entry (its ``id`` and ``spec.annotations``) lies within this reach."""
        if self.tool_ids is not None and entry.id not in self.tool_ids:
            return False
        return not self.read_only or entry.spec.annotations.get("readOnlyHint") is True


def reach_of(credential: Any) -> Reach | None:
    """The reach of the credential a caller connected with (None: all of its user's tools)."""
    return getattr(credential, "reach", None)
