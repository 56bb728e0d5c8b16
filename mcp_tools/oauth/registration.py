"""Dynamic client registration (RFC 7591) and its updates (RFC 7592), with the caps every client-controlled
input gets here.

Registration is open (MCP clients register before any user is involved), so it is rate-limited per
address, its document is size-capped and its redirect URIs counted and checked (``redirect_uris``); an
update of a registration is held to the same document checks. The toolkit does the rest.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from django_ratelimit.core import is_ratelimited
from oauth2_provider.views import DynamicClientRegistrationManagementView, DynamicClientRegistrationView

from mcp_tools.access.cache_breaker import CacheUnavailable, breaker
from mcp_tools.conf import mcp_settings
from mcp_tools.oauth import redirect_uris
from mcp_tools.oauth.cors import CrossOrigin

MAX_DOCUMENT_BYTES = 16 * 1024


@method_decorator(csrf_exempt, name="dispatch")  # as the toolkit's view: registration takes no cookies
class RegistrationView(CrossOrigin, DynamicClientRegistrationView):
    http_method_names = ["post", "options"]

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        count = partial(
            is_ratelimited,
            request,
            group="mcp_tools.oauth.register",
            key="ip",
            rate=mcp_settings.OAUTH_REGISTRATION_RATE,
            increment=True,
        )
        try:
            limited = breaker.call(count)
        except CacheUnavailable as outage:
            # The cache is down: django-ratelimit's RATELIMIT_FAIL_OPEN says whether to register uncounted.
            if not getattr(settings, "RATELIMIT_FAIL_OPEN", False):
                refused = _refused("Registration is temporarily unavailable; try again later.", 503)
                refused["Retry-After"] = str(outage.retry_after)
                return refused
            limited = False
        if limited:
            return _refused("Too many registrations from this address; try again later.", 429)
        return document_refusal(request) or super().post(request, *args, **kwargs)


@method_decorator(csrf_exempt, name="dispatch")  # as the toolkit's view: its caller holds a bearer token
class RegistrationManagementView(DynamicClientRegistrationManagementView):
    """A client reading, updating or deleting its own registration (RFC 7592): an update is checked as a
    registration is."""

    def put(self, request: HttpRequest, client_id: str, *args: Any, **kwargs: Any) -> HttpResponse:
        # Checked before the token is: the refusal depends on the document alone and names no client.
        return document_refusal(request) or super().put(request, client_id, *args, **kwargs)


def document_refusal(request: HttpRequest) -> JsonResponse | None:
    """The answer refusing a registration document over the caps, or with redirect URIs refused; else None."""
    if len(request.body) > MAX_DOCUMENT_BYTES:
        return _refused(f"The registration document exceeds {MAX_DOCUMENT_BYTES} bytes.")
    try:
        document = json.loads(request.body)
    except ValueError:
        return None  # the toolkit answers malformed JSON itself
    found = redirect_uris.problem(document.get("redirect_uris") if isinstance(document, dict) else None)
    if found is None:
        return None
    return JsonResponse({"error": found.error, "error_description": found.description}, status=400)


def _refused(description: str, status: int = 400) -> JsonResponse:
    error = {400: "invalid_client_metadata", 503: "temporarily_unavailable"}.get(status, "slow_down")
    return JsonResponse({"error": error, "error_description": description}, status=status)
