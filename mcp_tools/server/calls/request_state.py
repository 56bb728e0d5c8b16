"""The one gate a 2026-07-28 retry's ``requestState`` passes before anything reads it: it must be a state this
site signed, for a confirmation (:mod:`mcp_tools.access.confirmation_state`) or a tool's questions
(:mod:`mcp_tools.access.ask_state`). One that fails that integrity check is refused with -32602, its message
naming no reason. A genuine state that is expired, spent or another call's passes here and is answered by
asking again, as its step decides.
"""

from __future__ import annotations

from typing import Any

from django.core import signing

from mcp_tools.access import ask_state, confirmation_state
from mcp_tools.exceptions import InvalidParams

NOT_VALID = "requestState is not valid: make the call again without it."


def check(params: dict[str, Any]) -> None:
    """Raise InvalidParams unless the request carries no state, or one signed here (of any age)."""
    if "requestState" not in params:
        return
    text = params["requestState"]
    if not isinstance(text, str) or len(text) > ask_state.MAX_STATE_CHARS:
        raise InvalidParams(NOT_VALID)
    for salt in (confirmation_state.SALT, ask_state.SALT):
        try:
            signing.loads(text, salt=salt)
        except signing.BadSignature:
            continue
        except ValueError:  # signed, but not the JSON a state holds
            break
        return
    raise InvalidParams(NOT_VALID)
