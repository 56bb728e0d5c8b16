"""The toolkit's token and revocation endpoints, callable from browser-based clients (CORS), answering JSON."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider import views

from mcp_tools.oauth.cors import CrossOrigin


# Clients authenticate to these with their own credentials, never cookies, so CSRF does not apply (the
# toolkit exempts them too; overriding dispatch would drop its exemption, so it is restated).
@method_decorator(csrf_exempt, name="dispatch")
class TokenView(CrossOrigin, views.TokenView):
    http_method_names = ["post", "options"]

    def authorization_flow_token_response(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = super().authorization_flow_token_response(request, *args, **kwargs)
        # Refusals raised while tokens are saved (invalid_target, a replayed code) come without the headers
        # oauthlib gives the others; every answer here is JSON and never cached (RFC 6749 section 5).
        response["Content-Type"] = "application/json"
        response.setdefault("Cache-Control", "no-store")
        return response


@method_decorator(csrf_exempt, name="dispatch")
class RevokeTokenView(CrossOrigin, views.RevokeTokenView):
    http_method_names = ["post", "options"]
