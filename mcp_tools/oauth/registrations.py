"""Clients that registered themselves (DCR, CIMD) and that nobody uses any more: finding and deleting them.

Anyone may register a client, so their rows pile up. One is stale once it is older than the retention
period and holds no live access token, refresh token or ID token and no pending grant; its own
registration-management token (RFC 7592) keeps nothing alive. A CIMD client comes back by itself on its
next request; a DCR client registers again.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from oauth2_provider.models import (
    AbstractApplication,
    get_application_model,
    get_grant_model,
    get_id_token_model,
    get_refresh_token_model,
)

from mcp_tools.conf import mcp_settings
from mcp_tools.oauth.authorizations import held_access_tokens

Source = AbstractApplication.RegistrationSource
SELF_REGISTERED = (Source.DCR, Source.CIMD)


def retention_days() -> int:
    return int(mcp_settings.OAUTH_CLIENT_RETENTION_DAYS)


def stale(days: int | None = None, now: datetime | None = None) -> QuerySet[Any]:
    """The self-registered applications created more than ``days`` ago (the retention setting by default)
    that nothing keeps alive."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=retention_days() if days is None else days)
    candidates = get_application_model().objects.filter(registration_source__in=SELF_REGISTERED, created__lt=cutoff)
    return _unused(candidates, now)


def delete_stale(candidates: QuerySet[Any], days: int | None = None) -> list[Any]:
    """Delete those of ``candidates`` that are stale, checked again with their rows locked (a token issued
    meanwhile waits for the lock, or is seen); returns the applications deleted."""
    now = timezone.now()
    applications = get_application_model().objects
    with transaction.atomic():
        chosen = list(stale(days, now).filter(pk__in=candidates.values("pk")).values_list("pk", flat=True))
        # Lock first, then look again in a statement of its own, which sees what committed before the lock.
        list(applications.select_for_update().filter(pk__in=chosen).values_list("pk", flat=True))
        doomed = list(_unused(applications.filter(pk__in=chosen), now).order_by("pk"))
        applications.filter(pk__in=[application.pk for application in doomed]).delete()
    return doomed


def _unused(applications: QuerySet[Any], now: datetime) -> QuerySet[Any]:
    # Read from the token side (forward foreign keys): the reverse names differ on swapped models.
    live = (
        held_access_tokens().filter(expires__gt=now),
        get_id_token_model().objects.filter(expires__gt=now),
        get_grant_model().objects.filter(expires__gt=now),
        get_refresh_token_model().objects.filter(revoked__isnull=True),
    )
    for rows in live:
        applications = applications.exclude(pk__in=rows.filter(application__isnull=False).values("application"))
    return applications
