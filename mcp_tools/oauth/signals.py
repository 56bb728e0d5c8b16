"""An OAuth token revoked, rotated away or expired early ends the sessions opened with it, in every process."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save
from oauth2_provider.models import get_access_token_model

from mcp_tools.access.authentication import forget_tokens
from mcp_tools.notify import counters
from mcp_tools.notify.events import schedule_token_changed
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
