"""The credentials a caller connects with, of every kind: the site's own access tokens and OAuth tokens.

A credential says when it expires and which client holds it; each kind can be re-read by id, so that the
sessions opened with one end once it stops working (revoked, expired, or handed to another user). Kinds
other than the site's tokens register themselves (:func:`register_kind`) when their app is ready.
:func:`credentials_problem` says why a caller may be served no longer, in the words its transport passes on.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from mcp_tools.access import permissions
from mcp_tools.access.reach import Reach
from mcp_tools.models import AccessToken

#: Why a caller's connection ends, as its transport tells the client.
TOKEN_REVOKED = "The access token was revoked."
TOKEN_EXPIRED = "The access token expired."
USER_INACTIVE = "The user may no longer connect."

#: The kind of the site's own access tokens (``mcp_tools.models.AccessToken``).
SITE_TOKEN = "token"

Key = tuple[str, Any]  # (kind, id)


class Row(NamedTuple):
    """A credential as it is now: whose it is, when it expires, and how far into its user's tools it reaches."""

    user_id: Any
    expires_at: datetime | None
    reach: Reach | None = None


Rows = dict[Any, Row]  # id -> its row, for the ids that still exist
Loader = Callable[[set[Any]], Rows]


class Credential(Protocol):
    """What the server keeps of the credential a caller connected with."""

    credential_kind: str
    pk: Any
    expires_at: datetime | None

    @property
    def is_expired(self) -> bool: ...

    @property
    def client_label(self) -> str: ...


_loaders: dict[str, Loader] = {}


def register_kind(kind: str, loader: Loader) -> None:
    """Let sessions opened with credentials of ``kind`` be re-checked: ``loader(ids)`` reads them afresh."""
    _loaders[kind] = loader


def key(credential: Any) -> Key:
    return (kind_of(credential), credential.pk)


def identity(credential: Any) -> str:
    """Text naming this credential among those of every kind (two kinds may number their rows alike)."""
    kind, pk = key(credential)
    return f"{kind}:{pk}"


def kind_of(credential: Any) -> str:
    return str(getattr(credential, "credential_kind", SITE_TOKEN))


def rows(kind: str, ids: set[Any]) -> Rows:
    """The credentials of ``kind`` with these ids that still exist (sync; call through database_sync_to_async).

    A kind nobody registered reads as gone, so its sessions end rather than outlive their credential.
    """
    loader = _loaders.get(kind, _site_tokens if kind == SITE_TOKEN else None)
    return loader(ids) if loader is not None else {}


def audit_fields(credential: Any) -> dict[str, Any]:
    """The audit columns naming a call's credential: the site token it used, or the OAuth client."""
    if credential is None:
        return {"token_id": None, "client": ""}
    if kind_of(credential) == SITE_TOKEN:
        return {"token_id": credential.pk, "client": ""}
    return {"token_id": None, "client": str(getattr(credential, "client_label", ""))[:255]}


def credentials_problem(user: Any, token: Any) -> str | None:
    """Why ``user`` holding ``token`` may not be served at this moment, or None."""
    if token is not None and token.is_expired:
        return TOKEN_EXPIRED
    if not permissions.may_connect(user):
        return USER_INACTIVE
    return None


def _site_tokens(ids: set[Any]) -> Rows:
    found = AccessToken.objects.filter(pk__in=ids).values_list("pk", "user_id", "expires_at")
    return {pk: Row(user_id, expires) for pk, user_id, expires in found}
