"""Running an admitted call: its executor under the tool's time limit, with a context for progress and cancellation.

A failure the tool did not mean for the caller leaves here as :class:`~mcp_tools.exceptions.ToolCrashed`
(its cause attached, for the log), a time limit that passed as ``CallTimedOut``; the tool's own words
(``ToolError``), its invalid arguments and its unsendable values pass through as they are, and so do a lost
database connection and the ``input_required`` its questions end a 2026-07-28 run with (:mod:`.asking`).
:mod:`mcp_tools.protocol.errors` answers them all.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from mcp_tools.connections import connection_lost
from mcp_tools.exceptions import CallTimedOut, InputRequired, InvalidArguments, RowsChanged, ToolCrashed, ToolError
from mcp_tools.loops import Deadline
from mcp_tools.server.calls import asking
from mcp_tools.server.progress import ProgressSender
from mcp_tools.tools.content import CallResult, Unsendable
from mcp_tools.tools.context import CallCancelled, Context
from mcp_tools.tools.entries import Entry

if TYPE_CHECKING:
    from mcp_tools.server.calls.call import Call

# What the tool may raise for the boundary to answer as it is; anything else is a crash.
_PASSED_ON = (ToolError, InvalidArguments, Unsendable)


async def run_tool(
    call: Call, entry: Entry, arguments: dict[str, Any], seconds: float, confirmed_state: str | None = None
) -> CallResult:
    """What the tool returns for ``arguments`` within ``seconds``; ``confirmed_state``: the rows as the person
    who confirmed the call saw them (see ``ToolKind.changes``)."""
    progress = ProgressSender(call.session.emit, entry.name)
    ctx = context(call, entry, progress)
    ctx.confirmed_state = confirmed_state
    ctx.asker = asking.asker(call, entry, arguments)
    try:
        # A deadline on this task rather than wait_for's: no second task per call, and no timer either.
        with Deadline(seconds):
            return await execute(entry, arguments, ctx)
    except TimeoutError:
        ctx.cancel()
        raise CallTimedOut(seconds) from None
    except CallCancelled:
        # The tool saw its cancellation (ctx.check_cancelled()): the call ends as cancelled, unanswered.
        raise asyncio.CancelledError from None
    except (*_PASSED_ON, RowsChanged, InputRequired):
        raise
    except Exception as exc:
        if connection_lost(exc):
            raise
        raise ToolCrashed() from exc
    finally:
        # Answered from here on: progress from a thread or a task the tool left behind is not sent.
        progress.close()


async def execute(entry: Entry, arguments: dict[str, Any], ctx: Context) -> CallResult:
    """Where a call enters its tool: the entry's kind runs it."""
    return await entry.run(arguments, ctx)


def context(call: Call, entry: Entry, progress: ProgressSender) -> Context:
    """The tool's ``ctx``, also handed to the call (and its in-flight entry) so that cancelling reaches it."""
    meta = call.request.params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    ctx = Context(
        user=call.session.user,
        tool_name=entry.name,
        request_id=call.request.id,
        progress_token=token if isinstance(token, int | str) and not isinstance(token, bool) else None,
        progress=progress,
        transport=call.session.transport,
        session_id=call.session.session_id,
        credential=call.session.token,
    )
    call.ctx = ctx
    running = call.own_entry()
    if running is not None:
        running.ctx = ctx
    return ctx
