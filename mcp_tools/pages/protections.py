"""The headers every page a person sees (the OAuth flow, the confirmation page) is sent with, whatever the
site's middleware sets.

No frame may show the pages (a consent, revoke or confirm button inside another site's frame can be clicked
through). The browser sends no ``Referer`` to other sites, so the authorization request's query (client,
state, redirect URI) never reaches the client's redirect URI or any link, yet keeps sending ``Origin`` on the
pages' own form posts, which Django's CSRF check needs: ``no-referrer`` would make it ``Origin: null``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpResponseBase

Handler = Callable[..., HttpResponseBase]
REFERRER_POLICY = "same-origin"
PAGE_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    # Set before SecurityMiddleware, which only fills in a Referrer-Policy the response lacks.
    "Referrer-Policy": REFERRER_POLICY,
}


def protected(view: Handler) -> Handler:
    """Send ``view``'s responses with ``PAGE_HEADERS``: never framed, no referrer to other sites."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(*args, **kwargs)
        for name, value in PAGE_HEADERS.items():
            response[name] = value
        return response

    return wrapped
