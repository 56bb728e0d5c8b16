"""Who is making the changes being saved now, and from where: ``recording(user=..., source=...)``.

Outside any ``recording`` block changes are made by code: source ``"code"``, no user. Within one block,
the changes of one tool are gathered into one history entry (an admin save of a tool and its inlines).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

CODE = "code"


@dataclass
class Actor:
    """The user and source that changes are credited to, and the entries this block wrote, per tool."""

    user: Any = None
    source: str = CODE
    entries: dict[tuple[str, Any], int] = field(default_factory=dict)
    group: bool = True

    @property
    def username(self) -> str:
        if self.user is None or not getattr(self.user, "is_authenticated", False):
            return ""
        return str(self.user.get_username())

    @property
    def user_id(self) -> Any:
        return self.user.pk if self.username else None


_current: ContextVar[Actor | None] = ContextVar("mcp_tools_history_actor", default=None)


def current() -> Actor:
    """The actor of the innermost ``recording`` block, or code with no user."""
    return _current.get() or Actor(group=False)


@contextmanager
def recording(user: Any = None, source: str = CODE, *, group: bool = True) -> Iterator[Actor]:
    """Credit the tool changes saved inside the block to ``user`` and ``source``.

    With ``group`` (the default) the changes of one tool inside the block make one entry; without it,
    each save makes its own.
    """
    actor = Actor(user=user, source=source[:32], group=group)
    reset = _current.set(actor)
    try:
        yield actor
    finally:
        _current.reset(reset)
