"""The pages a user sees: the consent page of the authorization flow, and the applications they connected.

Both are for the signed-in user only and may never be framed: a consent page or a revoke button inside
another site's frame can be clicked through (clickjacking).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.urls import NoReverseMatch, reverse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.generic import TemplateView, View
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error, InvalidRequestError

from mcp_tools.oauth.authorizations import authorizations_of, revoke
from mcp_tools.oauth.clients import destination, identify
from mcp_tools.oauth.resources import INVALID_TARGET, Unserved, settle
from mcp_tools.tools.catalog import catalog
from mcp_tools.tools.entries import Entry

Handler = Callable[..., HttpResponseBase]
PLAIN_REFUSED = 'Unsupported "plain" code_challenge_method; use "S256".'  # the toolkit's own words


def unframed(view: Handler) -> Handler:
    """Forbid every frame: ``X-Frame-Options`` for older browsers, CSP ``frame-ancestors`` for the rest."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(*args, **kwargs)
        response["X-Frame-Options"] = "DENY"
        response["Content-Security-Policy"] = "frame-ancestors 'none'"
        return response

    return wrapped


def visible_tools(user: Any) -> tuple[Entry, ...]:
    """The tools ``user`` may list: what a token issued for them reaches, as tools/list shows it."""
    return catalog.current().view(user).entries


def sign_out_url(request: HttpRequest) -> str | None:
    """Where "not you?" signs the user out; None when the site has no ``logout`` URL."""
    try:
        return reverse("logout")
    except NoReverseMatch:
        return None


@method_decorator(unframed, name="dispatch")
class ConsentView(AuthorizationView):
    """The authorization endpoint: asks the signed-in user whether the client may use their tools.

    The toolkit validates the request first; an unknown client or a redirect URI not registered for it is
    answered with the error page and never redirected.
    """

    template_name = "mcp_tools/oauth/authorize.html"
    #: The resources the token would be for, once the request is validated (shown on the page).
    resources: list[str] = []

    def validate_authorization_request(self, request: HttpRequest) -> tuple[Any, dict[str, Any]]:
        """The toolkit's validation; then, before the user is asked rather than after they agreed, PKCE
        ``plain`` refused (the toolkit refuses it only when it saves the grant) and a resource this server
        issues no tokens for refused ``invalid_target`` (RFC 8707)."""
        scopes, credentials = super().validate_authorization_request(request)
        state = credentials.get("state")
        if credentials.get("code_challenge_method") == "plain" and oauth2_settings.COMPLIANT_BCP_RFC9700_PKCE_METHOD:
            refusal = InvalidRequestError(PLAIN_REFUSED, state=state)
            raise OAuthToolkitError(refusal, redirect_uri=credentials["redirect_uri"])
        try:
            self.resources = settle(request.GET.getlist("resource"), request)
        except Unserved as unserved:
            refusal = CustomOAuth2Error(INVALID_TARGET, str(unserved), state=state)
            raise OAuthToolkitError(refusal, redirect_uri=credentials["redirect_uri"]) from None
        return scopes, credentials

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        application = context.get("application")
        if application is not None and not context.get("error"):
            request = self.request
            context["client"] = identify(application)
            context["destination"] = destination(str(context.get("redirect_uri") or ""))
            context["resources"] = getattr(self, "resources", [])
            context["tools"] = visible_tools(request.user)
            context["sign_out_url"] = sign_out_url(request)
            # Signed out, the user signs in again and comes back to this very request.
            login = resolve_url(self.get_login_url())
            context["sign_in_again_url"] = redirect_to_login(request.get_full_path(), login)["Location"]
            context["connected_apps_url"] = reverse("mcp-connected-apps")
        return context


@method_decorator(unframed, name="dispatch")
class ConnectedAppsView(LoginRequiredMixin, TemplateView):
    """The applications the signed-in user has authorized, each with a button that revokes it."""

    template_name = "mcp_tools/oauth/connected_apps.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["authorizations"] = authorizations_of(self.request.user)
        context["sign_out_url"] = sign_out_url(self.request)
        return context


@method_decorator(unframed, name="dispatch")
class RevokeView(LoginRequiredMixin, View):
    """Ends the signed-in user's authorization of one application: its tokens and grants for them go."""

    http_method_names = ["post"]

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        # Only an application the user authorized is named back: the answer for any other id is the same
        # redirect, so the button cannot be used to learn which application ids exist.
        application = next((a.application for a in authorizations_of(request.user) if a.application.pk == pk), None)
        if application is not None:
            revoke(application, users=[request.user.pk])
            name = identify(application).display_name
            messages.success(request, _("%(name)s can no longer use your tools.") % {"name": name}, fail_silently=True)
        return HttpResponseRedirect(reverse("mcp-connected-apps"))
