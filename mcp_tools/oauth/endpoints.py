"""The toolkit's token and revocation endpoints, callable from browser-based clients (CORS)."""

from __future__ import annotations

from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider import views

from mcp_tools.oauth.cors import CrossOrigin


# Clients authenticate to these with their own credentials, never cookies, so CSRF does not apply (the
# toolkit exempts them too; overriding dispatch would drop its exemption, so it is restated).
@method_decorator(csrf_exempt, name="dispatch")
class TokenView(CrossOrigin, views.TokenView):
    http_method_names = ["post", "options"]


@method_decorator(csrf_exempt, name="dispatch")
class RevokeTokenView(CrossOrigin, views.RevokeTokenView):
    http_method_names = ["post", "options"]
