"""django-oauth-toolkit's request validator with this site's rules (``OAUTH2_VALIDATOR_CLASS``).

On top of the toolkit's own checks: codes and tokens are bound only to resources this site serves (the MCP
endpoint when a client names none); a code redeemed twice is refused and what it first issued is revoked;
a deactivated user's code or refresh token mints nothing.
"""

from __future__ import annotations

from typing import Any

from django.db import router, transaction
from oauth2_provider.models import get_access_token_model, get_grant_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.common import Request
from oauthlib.oauth2.rfc6749 import errors

from mcp_tools.oauth import redemptions
from mcp_tools.oauth.resources import INVALID_TARGET, OAuthlibConnection, Unserved, named, settle


class MCPOAuth2Validator(OAuth2Validator):
    def save_authorization_code(
        self, client_id: str, code: dict[str, Any], request: Request, *args: Any, **kwargs: Any
    ) -> None:
        """Bind the code to the resources it may be redeemed for, checked again: the consent form's hidden
        ``resource`` field comes back from the browser."""
        request.resource = self._settled(named(getattr(request, "resource", None)), request)
        super().save_authorization_code(client_id, code, request, *args, **kwargs)

    def validate_code(
        self, client_id: str, code: str, client: Any, request: Request, *args: Any, **kwargs: Any
    ) -> bool:
        if not super().validate_code(client_id, code, client, request, *args, **kwargs):
            redemptions.revoke_replayed(code)
            return False
        return bool(request.user.is_active)

    def validate_refresh_token(
        self, refresh_token: str, client: Any, request: Request, *args: Any, **kwargs: Any
    ) -> bool:
        valid = super().validate_refresh_token(refresh_token, client, request, *args, **kwargs)
        return bool(valid and request.user.is_active)

    def save_bearer_token(self, token: dict[str, Any], request: Request, *args: Any, **kwargs: Any) -> Any:
        """Check the resources the tokens will carry (whatever the grant), save them, and record the code they
        were redeemed for."""
        asked = named(_body_values(request, "resource") or getattr(request, "resource", None))
        request.resource = self._settled(asked or self._inherited(request), request)
        try:
            with transaction.atomic(using=router.db_for_write(get_access_token_model())):
                saved = super().save_bearer_token(token, request, *args, **kwargs)
                if request.grant_type == "authorization_code":
                    redemptions.remember(request.code, request.client, token)
        except redemptions.AlreadyRedeemed:
            redemptions.revoke_replayed(request.code)
            raise errors.InvalidGrantError(request=request) from None
        return saved

    def _settled(self, requested: list[str], request: Request) -> list[str]:
        try:
            return settle(requested, OAuthlibConnection(request))
        except Unserved as refusal:
            raise errors.CustomOAuth2Error(INVALID_TARGET, str(refusal), request=request) from None

    def _inherited(self, request: Request) -> list[str]:
        """The resources the code or refresh token being redeemed is bound to (none for other grants)."""
        if request.grant_type == "authorization_code":
            grant = get_grant_model().objects.filter(code=request.code, application=request.client).first()
            return list(grant.resource or []) if grant is not None else []
        refresh = getattr(request, "refresh_token_instance", None)
        return list(refresh.resource or []) if request.grant_type == "refresh_token" and refresh is not None else []


def _body_values(request: Request, name: str) -> list[str]:
    # RFC 8707 lets the parameter repeat; oauthlib keeps only its last value.
    return [value for key, value in request.decoded_body or [] if key == name]
