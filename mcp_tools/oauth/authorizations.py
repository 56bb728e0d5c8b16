"""What users have authorized: the applications holding their tokens or grants, and revoking them.

Read from the toolkit's own tables. An authorization starts with a grant, then lives on in a family of
refresh tokens (each refresh rotates the family's newest) and their access tokens; the family's first
refresh token, kept revoked after rotation, dates it. The tokens an application holds to manage its own
dynamic registration (RFC 7592) are not an authorization by any user and are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Max, Min, Q, QuerySet
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)
from oauth2_provider.settings import oauth2_settings

from mcp_tools.oauth.clients import ClientIdentity, identify
from mcp_tools.oauth.models import Consent


@dataclass
class Authorization:
    """One application a user authorized, as the connected-apps page lists it."""

    application: Any
    first_authorized: datetime | None = None
    last_authorized: datetime | None = None
    #: When the newest live access token expires (refreshing it, the client may go on past that).
    token_expires: datetime | None = None
    #: The tools the user let it use (None: all of theirs, as for applications authorized before choices).
    consent: Consent | None = None
    starts: list[datetime] = field(default_factory=list, repr=False)

    @property
    def client(self) -> ClientIdentity:
        return identify(self.application)


def held_access_tokens() -> QuerySet[Any]:
    """The access tokens users hold: all but the applications' own registration-management tokens."""
    return get_access_token_model().objects.exclude(scope=oauth2_settings.DCR_REGISTRATION_SCOPE)


def authorizations_of(user: Any) -> list[Authorization]:
    """The applications ``user`` has authorized and not revoked, by name."""
    now = timezone.now()
    found: dict[Any, Authorization] = {}
    live_access = held_access_tokens().filter(user=user, expires__gt=now)
    expiries = live_access.values("application").annotate(last=Max("expires")).values_list("application", "last")
    for application_id, expires in expiries:
        found.setdefault(application_id, Authorization(None)).token_expires = expires
    # Each authorization starts a refresh-token family, or issues an access token without one; a pending
    # grant is an authorization whose code the client has not redeemed yet.
    starts = [
        *_family_starts(user),
        *live_access.filter(source_refresh_token__isnull=True).values_list("application", "created"),
        *get_grant_model().objects.filter(user=user, expires__gt=now).values_list("application", "created"),
    ]
    for application_id, started in starts:
        found.setdefault(application_id, Authorization(None)).starts.append(started)
    found.pop(None, None)
    consents = Consent.objects.filter(user=user, application__in=list(found)).prefetch_related("tools")
    chosen = {consent.application_id: consent for consent in consents}
    for application in get_application_model().objects.filter(pk__in=list(found)):
        entry = found[application.pk]
        entry.application = application
        entry.consent = chosen.get(application.pk)
        entry.first_authorized = min(entry.starts, default=None)
        entry.last_authorized = max(entry.starts, default=None)
    listed = [entry for entry in found.values() if entry.application is not None]
    return sorted(listed, key=lambda entry: (entry.client.display_name.lower(), entry.application.pk))


def _family_starts(user: Any) -> list[tuple[Any, datetime]]:
    """(application id, first created) of each refresh-token family the user still holds a live member of."""
    refresh = get_refresh_token_model().objects.filter(user=user)
    live = refresh.filter(revoked__isnull=True)
    families = live.exclude(token_family__isnull=True).values("token_family")
    members = refresh.filter(Q(token_family__in=families) | Q(token_family__isnull=True, revoked__isnull=True))
    grouped = members.values("application", "token_family").annotate(since=Min("created"))
    return list(grouped.values_list("application", "since"))


def revoke(application: Any, users: Iterable[Any] | None = None) -> int:
    """Delete the access tokens, refresh tokens and grants of ``application`` (those of ``users`` only, when
    given); returns how many access tokens ended. Deleting access tokens ends the sessions opened with them."""
    rows: dict[str, Any] = {"application": application}
    if users is not None:
        rows["user__in"] = list(users)
    with transaction.atomic():
        get_grant_model().objects.filter(**rows).delete()
        get_refresh_token_model().objects.filter(**rows).delete()
        _, deleted = held_access_tokens().filter(**rows).delete()
    return deleted.get(get_access_token_model()._meta.label, 0)
