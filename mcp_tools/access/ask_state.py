"""The answers a tool's questions got in earlier rounds of a 2026-07-28 call, carried by the client: signed,
bound, expiring and capped.

The server keeps nothing between rounds: each ``input_required`` carries, signed (``django.core.signing``,
salted for this use alone), the answers given so far, each round with a digest of the questions it answered,
and the call they belong to: a confirmation's :class:`~.confirmation_state.Binding` (tool, caller, credential,
arguments), its rows' state left empty. It expires after ``CONFIRMATION_SECONDS``.
A state that is forged, cut, expired, oversized or another call's opens as nothing, and the tool's questions
are asked again from the first: the caller learns nothing of why. A confirmation given earlier in the same call
rides along (``Carried``); such a state is good for one round only (its nonce is spent, as a confirmation's is).
"""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from django.core import signing

from mcp_tools.access.confirmation_state import Binding
from mcp_tools.conf import mcp_settings

SALT = "mcp_tools.asks.request_state"
# Answers ride in the state, each capped (mcp_tools.tools.asks.MAX_ANSWER_CHARS); so does the whole.
MAX_STATE_CHARS = 32_768


@dataclass(frozen=True)
class Round:
    """The answers one round of questions got, and a digest of those questions."""

    asked: str
    answers: dict[str, Any]


@dataclass(frozen=True)
class Carried:
    """A person's yes to the call, given in an earlier round: the rows' state they saw, and how they said it."""

    state: str
    how: str


@dataclass(frozen=True)
class AskState:
    rounds: tuple[Round, ...]
    confirmed: Carried | None
    nonce: str


def issue(binding: Binding, rounds: list[Round], confirmed: Carried | None) -> str | None:
    """The opaque ``requestState`` carrying ``rounds``; None when it would exceed ``MAX_STATE_CHARS``."""
    value = {
        "binding": asdict(binding),
        "rounds": [[one.asked, one.answers] for one in rounds],
        "confirmed": asdict(confirmed) if confirmed is not None else None,
        "nonce": secrets.token_hex(12),
    }
    text = signing.dumps(value, salt=SALT, compress=True)
    return text if len(text) <= MAX_STATE_CHARS else None


def open_state(text: Any, binding: Binding) -> AskState | None:
    """What a ``requestState`` carries for the call ``binding`` names; None for any other, or no state at all."""
    if not isinstance(text, str) or len(text) > MAX_STATE_CHARS:
        return None
    max_age = timedelta(seconds=float(mcp_settings.CONFIRMATION_SECONDS))
    try:
        value = signing.loads(text, salt=SALT, max_age=max_age)
        if Binding(**value["binding"]) != binding or not isinstance(value["nonce"], str):
            return None
        rounds = tuple(Round(asked, dict(answers)) for asked, answers in value["rounds"])
        confirmed = Carried(**value["confirmed"]) if value["confirmed"] is not None else None
    except (signing.BadSignature, TypeError, KeyError, AttributeError, ValueError):
        return None
    return AskState(rounds, confirmed, value["nonce"])
