"""A call's audit row: who called which tool through what, with which arguments, how it ended, its cost."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mcp_tools.access import credentials
from mcp_tools.access.audit import audit_log
from mcp_tools.access.audit_arguments import stored_arguments
from mcp_tools.conf import mcp_settings
from mcp_tools.tools.entries import Entry

if TYPE_CHECKING:
    from mcp_tools.server.calls.call import Call


async def record(call: Call) -> None:
    """Write the call's row (unless auditing is off, or the call is one of a flood already recorded)."""
    if not mcp_settings.AUDIT or not call.recorded:
        return
    session = call.session
    user = session.user
    authenticated = getattr(user, "is_authenticated", False)
    credential = credentials.audit_fields(session.token)
    if session.audit_client:
        credential["client"] = session.audit_client[:255]
    await audit_log().record(
        user_id=user.pk if authenticated else None,
        username=user.get_username() if authenticated else "",
        **credential,
        transport=session.transport,
        session_id=session.session_id,
        tool_name=str(call.name)[:128],
        arguments=await stored_arguments(call.arguments or {}, parameter_names(call.entry)),
        outcome=call.outcome,
        message=call.message[:2000],
        duration_ms=(time.perf_counter() - call.started) * 1000,
        result_bytes=call.result_bytes,
        **confirmed(call),
    )


def confirmed(call: Call) -> dict[str, Any]:
    """Who said yes to the call and how; nothing for a call nobody confirmed."""
    if call.confirmed is None:
        return {}
    by = call.confirmed.by
    return {
        "confirmation": call.confirmed.how,
        "confirmed_by_id": by.pk if getattr(by, "is_authenticated", False) else None,
    }


def parameter_names(entry: Entry | None) -> frozenset[str]:
    """The argument names a tool declares, which the audit trail keeps first when it must cut."""
    if entry is None:
        return frozenset()
    if entry.argument_names is not None:
        return entry.argument_names
    properties = entry.spec.input_schema.get("properties")
    return frozenset(properties) if isinstance(properties, dict) else frozenset()
