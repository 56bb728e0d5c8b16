"""An OAuth token revoked, rotated away or expired early ends the sessions opened with it, in every process; a
changed consent narrows or widens them."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import m2m_changed, post_delete, post_save
from oauth2_provider.models import get_access_token_model

from mcp_tools.access.authentication import forget_tokens
from mcp_tools.notify import counters
from mcp_tools.notify.events import schedule_token_changed
from mcp_tools.oauth.models import Consent
from mcp_tools.oauth.tokens import OAUTH

AccessToken = get_access_token_model()


def token_changed(instance: Any, using: str, created: bool = False, **kwargs: Any) -> None:
    # As for the site's own tokens (mcp_tools.notify.signals): new requests stop at once, open sessions
    # at once through the group or within the freshness bound through the counter.
    forget_tokens()
    if created:
        return
    counters.bump(counters.TOKENS, using)
    schedule_token_changed(instance.pk, using, kind=OAUTH)


post_save.connect(token_changed, sender=AccessToken, dispatch_uid="mcp_tools.oauth.token_saved")
post_delete.connect(token_changed, sender=AccessToken, dispatch_uid="mcp_tools.oauth.token_deleted")


def consent_changed(instance: Consent, using: str, **kwargs: Any) -> None:
    # The tokens the application holds for this user reach other tools now: their sessions look again.
    forget_tokens()
    counters.bump(counters.TOKENS, using)
    held = AccessToken.objects.using(using).filter(user_id=instance.user_id, application_id=instance.application_id)
    for pk in held.values_list("pk", flat=True):
        schedule_token_changed(pk, using, kind=OAUTH)


def consent_tools_changed(instance: Consent, action: str, using: str, **kwargs: Any) -> None:
    if action in ("post_add", "post_remove", "post_clear"):
        consent_changed(instance, using)


post_save.connect(consent_changed, sender=Consent, dispatch_uid="mcp_tools.oauth.consent_saved")
post_delete.connect(consent_changed, sender=Consent, dispatch_uid="mcp_tools.oauth.consent_deleted")
m2m_changed.connect(consent_tools_changed, sender=Consent.tools.through, dispatch_uid="mcp_tools.oauth.consent_tools")
