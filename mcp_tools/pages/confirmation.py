"""The page where a person confirms their own call, when the client they called from could not ask them.

A site that sets ``CONFIRMATION_FALLBACK = "page"`` sends such a call here
(:mod:`mcp_tools.server.calls.confirmation`): the person signs in as the caller, reads what the call would change
now, and confirms or declines it with one CSRF-protected click; the same call, made again by the same client, then
runs once on the rows as shown. The page is the caller's alone: anyone else, signed in or not, finds nothing (404),
as for an unknown id.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.mixins import LoginRequiredMixin
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.views import View
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect

from mcp_tools.access import approvals
from mcp_tools.conf import mcp_settings
from mcp_tools.models import Approval
from mcp_tools.pages.protections import protected
from mcp_tools.tools.review import Current, now_of

Status = Approval.Status
OAUTH_SIGN_IN = "mcp-oauth-login"


def sign_in_url() -> str:
    """Where a signed-out person is sent: the OAuth pages' sign-in (``OAUTH_LOGIN_URL``, or the OAuth app's own
    page where it is served), else the site's ``LOGIN_URL``."""
    if mcp_settings.OAUTH_LOGIN_URL:
        return str(resolve_url(mcp_settings.OAUTH_LOGIN_URL))
    try:
        return reverse(OAUTH_SIGN_IN)
    except NoReverseMatch:
        return str(resolve_url(settings.LOGIN_URL))


@method_decorator([protected, never_cache, csrf_protect], name="dispatch")
class ConfirmCallView(LoginRequiredMixin, View):
    """GET shows the call and what it would change now; POST confirms (``_confirm``) or declines it."""

    template_name = "mcp_tools/confirm.html"
    http_method_names = ["get", "post"]

    def get_login_url(self) -> str:
        return sign_in_url()

    def get(self, request: HttpRequest, pk: int) -> HttpResponse:
        return self.page(request, self.own(request, pk))

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        approval = self.own(request, pk)
        if not approvals.may_confirm_own(request.user, approval):
            return self.page(request, approval, notice=_("This call cannot be decided any more."))
        confirm = "_confirm" in request.POST
        shown = str(request.POST.get("state", ""))[:64]
        if confirm:
            now = now_of(approval)
            if now.problem or not now.question:
                return self.page(request, approval, now=now)
            if now.state != shown:
                notice = _("The rows changed while you looked: this is what the call would do now.")
                return self.page(request, approval, now=now, notice=notice)
        if approvals.decide(request.user, approval.pk, approve=confirm, state=shown) is None:
            return self.page(request, approval, notice=_("This call cannot be decided any more."))
        # Post, redirect, get: reloading the page shows the decision and sends nothing again.
        return HttpResponseRedirect(request.path)

    def own(self, request: HttpRequest, pk: int) -> Approval:
        """The signed-in person's own call waiting for them: anything else is not found."""
        caller: Any = request.user  # signed in: LoginRequiredMixin sent anyone else away
        approval = (
            Approval.objects.select_related("tool", "user")
            .filter(pk=pk, confirmer=Approval.Confirmer.CALLER, user=caller)
            .first()
        )
        if approval is None:
            raise Http404(_("No such call waits for your confirmation."))
        return approval

    def page(
        self, request: HttpRequest, approval: Approval, *, now: Current | None = None, notice: str = ""
    ) -> HttpResponse:
        may_decide = approvals.may_confirm_own(request.user, approval)
        if may_decide and now is None:
            now = now_of(approval)
        context: dict[str, Any] = {
            "approval": approval,
            "may_decide": may_decide,
            "now": now,
            "rows_changed": now is not None and bool(now.question) and now.state != approval.state,
            "expired": approval.status == Status.PENDING and approval.expired,
            "notice": notice,
        }
        return TemplateResponse(request, self.template_name, context)
