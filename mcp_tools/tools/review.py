"""What a call waiting for a person's yes would change if it ran now: for the pages where people decide it.

The question was put when the call was made; by the time a person opens the approval, the rows may have
changed. These pages work the changes out again, as the caller, and bind the yes to the rows as shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from mcp_tools.loops import in_own_loop
from mcp_tools.models import Approval
from mcp_tools.tools import confirmations
from mcp_tools.tools.context import Context
from mcp_tools.tools.entries import Entry, entry_from_row


@dataclass(frozen=True)
class Current:
    """What the call would change if it ran now, as its caller; ``problem`` when it could not run at all."""

    question: str = ""
    state: str = ""
    problem: str = ""


def now_of(approval: Approval) -> Current:
    """What ``approval``'s call would change if it ran now (sync: for views); nothing once its tool is gone."""
    if approval.tool is None:
        return Current(problem=_("The tool was deleted."))
    return in_own_loop(current, entry_from_row(approval.tool), approval.user, approval.arguments)


async def current(entry: Entry, user: Any, arguments: dict[str, Any]) -> Current:
    ctx = Context(user=user, tool_name=entry.name)
    try:
        changes = await entry.changes(arguments, ctx)
    except Exception as exc:  # the call would fail now (a row gone, a permission lost): the person is told
        return Current(problem=str(exc) or type(exc).__name__)
    question = confirmations.question(entry.spec.title or entry.name, arguments, entry.spec.input_schema, changes)
    return Current(question.message, changes.state)
