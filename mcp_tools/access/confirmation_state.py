"""A person's yes carried by the client (2026-07-28's ``requestState``): signed, bound, expiring, spent once.

The server keeps nothing while the person thinks: the question's binding travels to the client signed
(``django.core.signing``, salted for this use alone) and comes back with the answer. It binds the yes to the
tool, the caller, their credential, the exact arguments and the state of the rows the write would touch,
and expires after ``CONFIRMATION_SECONDS``. Acting on it spends its nonce in the database, which every
worker process shares, so that a replayed answer runs nothing anywhere. A state that fails any of these
checks is answered alike, by asking again: the caller learns nothing of why.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone

from mcp_tools.conf import mcp_settings
from mcp_tools.models import SpentConfirmation

SALT = "mcp_tools.confirmation.request_state"
# A state is a few hundred characters; a longer one is nobody's and is not even unsigned.
MAX_STATE_CHARS = 4096


def digest(value: Any) -> str:
    """A short digest of a JSON-able value, the same for the same value in any process."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Binding:
    """What a yes is for: the tool, the caller, their credential, the arguments and the rows' state."""

    tool: str
    tool_id: int
    user: Any  # the user's primary key; None for an anonymous caller
    credential: str
    arguments: str  # digest of the arguments
    state: str  # digest of the rows the write would touch, as the person saw them


def credential_key(token: Any) -> str:
    """The credential a yes is bound to: a token by kind and key, or "" for a session login."""
    return f"{type(token).__name__}:{token.pk}" if token is not None else ""


def issue(binding: Binding) -> str:
    """The opaque ``requestState`` for a question with this binding."""
    return signing.dumps({**asdict(binding), "nonce": secrets.token_hex(12)}, salt=SALT, compress=True)


@dataclass(frozen=True)
class Opened:
    binding: Binding
    nonce: str


def open_state(text: Any) -> Opened | None:
    """The binding a ``requestState`` carries, or None for one that is forged, cut, expired or not a state."""
    if not isinstance(text, str) or len(text) > MAX_STATE_CHARS:
        return None
    try:
        value = signing.loads(text, salt=SALT, max_age=timedelta(seconds=float(mcp_settings.CONFIRMATION_SECONDS)))
        nonce = value.pop("nonce")
        binding = Binding(**value)
    except (signing.BadSignature, TypeError, KeyError, AttributeError, ValueError):
        return None
    return Opened(binding, nonce) if isinstance(nonce, str) else None


def spend(nonce: str) -> bool:
    """Mark a yes as acted on; False when it already was (a replay). Sync: it writes."""
    now = timezone.now()
    expires = now + timedelta(seconds=float(mcp_settings.CONFIRMATION_SECONDS))
    try:
        with transaction.atomic():
            SpentConfirmation.objects.filter(expires_at__lt=now).delete()
            SpentConfirmation.objects.create(nonce=nonce[:32], expires_at=expires)
    except IntegrityError:
        return False
    return True
