"""The pages a user sees: the consent page of the authorization flow, and the applications they connected.

Both are for the signed-in user only, and are sent with the headers of ``mcp_tools.oauth.protections``:
never framed, no referrer to other sites.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.generic import TemplateView, View
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView
from oauthlib.oauth2.rfc6749.errors import InvalidRequestError

from mcp_tools.oauth.authorizations import authorizations_of, revoke
from mcp_tools.oauth.clients import destination, identify
from mcp_tools.oauth.protections import protected
from mcp_tools.oauth.signin import LOGOUT, SignInRequired, sign_in_again_url
from mcp_tools.tools.catalog import catalog
from mcp_tools.tools.entries import Entry

PLAIN_REFUSED = 'Unsupported "plain" code_challenge_method; use "S256".'  # the toolkit's own words


def visible_tools(user: Any) -> tuple[Entry, ...]:
    """The tools ``user`` may list: what a token issued for them reaches, as tools/list shows it."""
    return catalog.current().view(user).entries


@method_decorator(protected, name="dispatch")
class ConsentView(SignInRequired, AuthorizationView):
    """The authorization endpoint: asks the signed-in user whether the client may use their tools.

    The toolkit validates the request first; an unknown client or a redirect URI not registered for it is
    answered with the error page and never redirected.
    """

    template_name = "mcp_tools/oauth/authorize.html"

    def validate_authorization_request(self, request: HttpRequest) -> tuple[Any, dict[str, Any]]:
        """The toolkit's validation, and PKCE ``plain`` refused before the user is asked, not after they agreed
        (the toolkit refuses it only when it saves the grant)."""
        scopes, credentials = super().validate_authorization_request(request)
        if credentials.get("code_challenge_method") == "plain" and oauth2_settings.COMPLIANT_BCP_RFC9700_PKCE_METHOD:
            refusal = InvalidRequestError(PLAIN_REFUSED, state=credentials.get("state"))
            raise OAuthToolkitError(refusal, redirect_uri=credentials["redirect_uri"])
        return scopes, credentials

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        application = context.get("application")
        if application is not None and not context.get("error"):
            request = self.request
            context["client"] = identify(application)
            context["destination"] = destination(str(context.get("redirect_uri") or ""))
            context["tools"] = visible_tools(request.user)
            context["sign_out_url"] = reverse(LOGOUT)
            # Signed out, the user signs in again and comes back to this very request.
            context["sign_in_again_url"] = sign_in_again_url(request)
            context["connected_apps_url"] = reverse("mcp-connected-apps")
        return context


@method_decorator(protected, name="dispatch")
class ConnectedAppsView(SignInRequired, TemplateView):
    """The applications the signed-in user has authorized, each with a button that revokes it."""

    template_name = "mcp_tools/oauth/connected_apps.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["authorizations"] = authorizations_of(self.request.user)
        context["sign_out_url"] = reverse(LOGOUT)
        return context


@method_decorator(protected, name="dispatch")
class RevokeView(SignInRequired, View):
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
