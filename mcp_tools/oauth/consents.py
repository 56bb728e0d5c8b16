"""Which tools each user let each application use (the ``Consent`` rows), as reaches every call obeys.

The consent page and the connected-apps page record a choice with :func:`choose`; OAuth credentials read it
as a :class:`~mcp_tools.access.reach.Reach` when they are resolved and whenever their sessions are
re-checked, so a changed choice binds open sessions as a revoked token does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from mcp_tools.access.reach import Reach
from mcp_tools.oauth.models import Consent

Pair = tuple[Any, Any]  # (user id, application id)


def reach(consent: Consent | None, tool_ids: Iterable[int] = ()) -> Reach | None:
    """The reach a consent grants (None: all the user's tools, also for applications without a consent)."""
    if consent is None or consent.reach == Consent.Reach.ALL:
        return None
    if consent.reach == Consent.Reach.READ_ONLY:
        return Reach(read_only=True)
    return Reach.chosen(tool_ids)


def reaches(pairs: Iterable[Pair]) -> dict[Pair, Reach | None]:
    """The reach of each (user id, application id) pair, in two queries whatever their number."""
    wanted = set(pairs)
    found: dict[Pair, Reach | None] = dict.fromkeys(wanted)
    if not wanted:
        return found
    users, applications = {user for user, _ in wanted}, {application for _, application in wanted}
    consents = Consent.objects.filter(user_id__in=users, application_id__in=applications)
    chosen: dict[int, set[int]] = {}
    through = Consent.tools.through.objects.filter(consent__in=consents.filter(reach=Consent.Reach.CHOSEN))
    for consent_id, tool_id in through.values_list("consent_id", "tool_id"):
        chosen.setdefault(consent_id, set()).add(tool_id)
    for consent in consents:
        pair = (consent.user_id, consent.application_id)
        if pair in wanted:
            found[pair] = reach(consent, chosen.get(consent.pk, ()))
    return found


def consent_of(user: Any, application: Any) -> Consent | None:
    return Consent.objects.filter(user=user, application=application).prefetch_related("tools").first()


def choose(user: Any, application: Any, chosen: str, tools: Iterable[Any] = ()) -> Consent:
    """Record that ``user`` lets ``application`` use ``chosen`` (a ``Consent.Reach``), with ``tools`` when chosen
    one by one; the application's open sessions see the change at once here, within the freshness bound
    elsewhere."""
    with transaction.atomic():
        consent, _ = Consent.objects.select_for_update().get_or_create(user=user, application=application)
        consent.reach = chosen
        consent.save()
        consent.tools.set(list(tools) if chosen == Consent.Reach.CHOSEN else [])
    return consent
