"""Where the OAuth pages send people to sign in and out: the package's own sign-in page, or the site's.

``MCP_TOOLS["OAUTH_LOGIN_URL"]`` names the site's sign-in (a URL or URL name, as ``LOGIN_URL``: SSO,
allauth, its own login view); unset, people sign in on ``oauth/login/`` with the site's users and
passwords. Signing out is always the package's ``oauth/logout/``: it ends the Django session whichever page
opened it, then sends the browser on to sign in again.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.mixins import LoginRequiredMixin
from django.contrib.auth.views import LoginView, LogoutView, redirect_to_login
from django.http import Http404, HttpRequest, HttpResponseBase
from django.shortcuts import resolve_url
from django.urls import reverse
from django.utils.decorators import method_decorator

from mcp_tools.conf import mcp_settings
from mcp_tools.pages.protections import protected

LOGIN = "mcp-oauth-login"
LOGOUT = "mcp-oauth-logout"


def login_url() -> str:
    """The sign-in page of the consent flow, as a path or an absolute URL."""
    return str(resolve_url(mcp_settings.OAUTH_LOGIN_URL or LOGIN))


def serves_login() -> bool:
    """Whether the package's own sign-in page is the consent flow's (and so is served at all)."""
    return login_url() == reverse(LOGIN)


def sign_in_again_url(request: HttpRequest) -> str:
    """The sign-in page, with this very request to come back to once signed in (as someone else, perhaps)."""
    login = login_url()
    host = urlsplit(login).netloc
    # A sign-in on another host needs the whole URL to come back to; on this one, the path will do.
    back = request.build_absolute_uri() if host and host != request.get_host() else request.get_full_path()
    return str(redirect_to_login(back, login)["Location"])


class SignInRequired(LoginRequiredMixin):
    """Sends a signed-out visitor to the consent flow's sign-in page, to come back here afterwards."""

    def get_login_url(self) -> str:
        return login_url()


@method_decorator(protected, name="dispatch")
class SignInView(LoginView):
    """Django's login on the OAuth pages' look (``mcp_tools/oauth/login.html``); without a ``next`` it
    leads to the connected-apps page. Absent (404) where the site names a sign-in of its own, so that a site
    on SSO gains no password form."""

    template_name = "mcp_tools/oauth/login.html"

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not serves_login():
            raise Http404
        return super().dispatch(request, *args, **kwargs)

    def get_default_redirect_url(self) -> str:
        return reverse("mcp-connected-apps")


@method_decorator(protected, name="dispatch")
class SignOutView(LogoutView):
    """Django's logout (POST with the CSRF token), then on to ``next`` or the consent flow's sign-in page."""

    def get_default_redirect_url(self) -> str:
        return login_url()

    def get_success_url_allowed_hosts(self, *args: Any, **kwargs: Any) -> set[str]:
        # A sign-in on another host (SSO) may be where "Not you?" leads, with the request to come back to.
        host = urlsplit(login_url()).netloc
        return {*super().get_success_url_allowed_hosts(*args, **kwargs), *([host] if host else [])}
