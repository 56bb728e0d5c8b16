"""The pages a user sees: the consent page of the authorization flow, and the applications they connected.

Both are for the signed-in user only, and are sent with the headers of ``mcp_tools.pages.protections``:
never framed, no referrer to other sites.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views.generic import FormView, TemplateView, View
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error, InvalidRequestError

from mcp_tools.oauth.authorizations import authorizations_of, revoke
from mcp_tools.oauth.clients import destination, identify
from mcp_tools.oauth.consents import choose, consent_of
from mcp_tools.oauth.forms import ConsentForm, ReachForm
from mcp_tools.oauth.resources import INVALID_TARGET, Unserved, settle
from mcp_tools.oauth.signin import LOGOUT, SignInRequired, sign_in_again_url
from mcp_tools.pages.protections import protected
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
    #: The resources the token would be for, once the request is validated (shown on the page).
    resources: list[str] = []
    form_class = ConsentForm

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "user_tools": visible_tools(self.request.user)}

    def get_initial(self) -> dict[str, Any]:
        application = self.oauth2_data.get("application")
        previous = consent_of(self.request.user, application) if application is not None else None
        return {**super().get_initial(), **ConsentForm.initial_from(previous)}

    def form_valid(self, form: ConsentForm) -> HttpResponse:
        # The grant and the choice are written together: a code is never redeemed for a choice that was lost.
        self.choice = form
        with transaction.atomic():
            return super().form_valid(form)

    def form_invalid(self, form: ConsentForm) -> HttpResponse:
        """The page again with the choice's error, for the application the form names (the request is validated
        again when the user allows)."""
        client_id = str(form.data.get("client_id", ""))
        application = get_application_model().objects.filter(client_id=client_id).first()
        context: dict[str, Any] = {"form": form}
        if application is not None:
            context.update(application=application, redirect_uri=str(form.data.get("redirect_uri", "")))
        return self.render_to_response(self.get_context_data(**context))

    def create_authorization_response(
        self, request: HttpRequest, scopes: str, credentials: dict[str, Any], allow: bool
    ) -> tuple[str, Any, Any, int]:
        """The toolkit's grant, and with it the user's choice of tools for the application (on Allow only)."""
        created = super().create_authorization_response(request, scopes, credentials, allow)
        if allow:
            application = get_application_model().objects.get(client_id=credentials["client_id"])
            form = self.choice
            choose(request.user, application, form.cleaned_data["reach"], form.cleaned_data.get("tools") or [])
        return created

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
            form = context.get("form")
            context["tools"] = form.user_tools if isinstance(form, ConsentForm) else visible_tools(request.user)
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
        application = authorized_application(request.user, pk)
        if application is not None:
            revoke(application, users=[request.user.pk])
            name = identify(application).display_name
            messages.success(request, _("%(name)s can no longer use your tools.") % {"name": name}, fail_silently=True)
        return HttpResponseRedirect(reverse("mcp-connected-apps"))


def authorized_application(user: Any, pk: int) -> Any:
    """The application with id ``pk`` if ``user`` authorized it (and has not revoked it), else None."""
    return next((found.application for found in authorizations_of(user) if found.application.pk == pk), None)


@method_decorator(protected, name="dispatch")
class ToolsChoiceView(SignInRequired, FormView):
    """Changes which tools an application the signed-in user authorized may use; its sessions follow at once."""

    template_name = "mcp_tools/oauth/tools_choice.html"
    form_class = ReachForm

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        # Any id but one of the user's own applications is "not found", whether it exists or not.
        self.application = authorized_application(request.user, int(kwargs["pk"]))
        if self.application is None:
            raise Http404(_("No application you connected has this id."))
        return super().dispatch(request, *args, **kwargs)

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "user_tools": visible_tools(self.request.user)}

    def get_initial(self) -> dict[str, Any]:
        return ReachForm.initial_from(consent_of(self.request.user, self.application))

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["client"] = identify(self.application)
        context["connected_apps_url"] = reverse("mcp-connected-apps")
        return context

    def form_valid(self, form: ReachForm) -> HttpResponse:
        choose(self.request.user, self.application, form.cleaned_data["reach"], form.cleaned_data.get("tools") or [])
        name = identify(self.application).display_name
        messages.success(self.request, _("%(name)s now uses the tools you chose.") % {"name": name}, fail_silently=True)
        return HttpResponseRedirect(reverse("mcp-connected-apps"))
