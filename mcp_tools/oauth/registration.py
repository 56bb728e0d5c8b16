"""Dynamic client registration (RFC 7591) with the caps every client-controlled input gets here.

Registration is open (MCP clients register before any user is involved), so it is rate-limited per
address, its document is size-capped and its redirect URIs counted; the toolkit does the rest.
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
from oauth2_provider.views import DynamicClientRegistrationView

from mcp_tools.access.cache_breaker import CacheUnavailable, breaker
from mcp_tools.conf import mcp_settings
from mcp_tools.oauth.cors import CrossOrigin

MAX_DOCUMENT_BYTES = 16 * 1024
MAX_REDIRECT_URIS = 10


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
        if len(request.body) > MAX_DOCUMENT_BYTES:
            return _refused(f"The registration document exceeds {MAX_DOCUMENT_BYTES} bytes.")
        problem = _redirect_uri_problem(request.body)
        if problem:
            return _refused(problem)
        return super().post(request, *args, **kwargs)


def _redirect_uri_problem(body: bytes) -> str:
    try:
        document = json.loads(body)
    except ValueError:
        return ""  # the toolkit answers malformed JSON itself
    uris = document.get("redirect_uris") if isinstance(document, dict) else None
    if isinstance(uris, list) and len(uris) > MAX_REDIRECT_URIS:
        return f"At most {MAX_REDIRECT_URIS} redirect URIs may be registered."
    return ""


def _refused(description: str, status: int = 400) -> JsonResponse:
    error = {400: "invalid_client_metadata", 503: "temporarily_unavailable"}.get(status, "slow_down")
    return JsonResponse({"error": error, "error_description": description}, status=status)
