"""Token introspection (RFC 7662), for the resource servers the owner names and nobody else.

Anyone may register a confidential client by DCR, so client authentication alone would let any of them learn
whose a token is. Only the confidential clients listed in ``OAUTH_INTROSPECTION_CLIENTS`` may ask (none by
default); every other caller, authenticated or not, gets the same ``401 invalid_client`` (RFC 7662 section
2.3, RFC 6749 section 5.2), so the answer tells nothing about which credentials are right. The token goes in
the POST body only: a query string ends up in logs. A token whose user is deactivated is inactive.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any
from urllib.parse import unquote_plus, urlencode

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.models import AbstractApplication, get_access_token_model
from oauth2_provider.oauth2_backends import get_oauthlib_core
from oauth2_provider.views import IntrospectTokenView
from oauthlib.common import Request

from mcp_tools.conf import mcp_settings

CHALLENGE = 'Basic realm="introspection"'
REFUSAL = {"error": "invalid_client", "error_description": "Client authentication failed."}


def introspectors() -> frozenset[str]:
    """The client IDs that may introspect tokens."""
    return frozenset(str(client_id) for client_id in mcp_settings.OAUTH_INTROSPECTION_CLIENTS)


@method_decorator(csrf_exempt, name="dispatch")  # resource servers call it with their client credentials
class IntrospectionView(View):
    http_method_names = ["post"]

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not may_introspect(request):
            refused = JsonResponse(REFUSAL, status=401)
            refused["WWW-Authenticate"] = CHALLENGE
            return refused
        token = request.POST.get("token")
        if token and _held_by_inactive_user(token):
            return JsonResponse({"active": False})
        return IntrospectTokenView.get_token_response(token)


def may_introspect(request: HttpRequest) -> bool:
    """Whether the request authenticates, with its client credentials, a client listed to introspect."""
    allowed = introspectors()
    claimed = _claimed_client_ids(request)
    if not claimed or not claimed <= allowed:
        # Refused before any secret is checked or client looked up (a client ID may be a URL to fetch).
        return False
    core = get_oauthlib_core()
    oauthlib_request = Request(
        request.build_absolute_uri(),
        request.method,
        urlencode(core.extract_body(request)),
        core.extract_headers(request),
    )
    if not core.server.request_validator.authenticate_client(oauthlib_request):
        return False
    client = oauthlib_request.client
    return client.client_id in allowed and client.client_type == AbstractApplication.CLIENT_CONFIDENTIAL


def _claimed_client_ids(request: HttpRequest) -> set[str]:
    """The client IDs the request names: in its Basic credentials (RFC 6749 section 2.3.1) and in its body."""
    claimed = {str(request.POST.get("client_id") or "")}
    scheme, _, credentials = request.headers.get("Authorization", "").strip().partition(" ")
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            decoded = ""
        claimed.add(unquote_plus(decoded.partition(":")[0]))
    return claimed - {""}


def _held_by_inactive_user(token: str) -> bool:
    checksum = hashlib.sha256(token.encode("utf-8")).hexdigest()
    found = get_access_token_model().objects.select_related("user").filter(token_checksum=checksum).first()
    return found is not None and found.user is not None and not found.user.is_active
