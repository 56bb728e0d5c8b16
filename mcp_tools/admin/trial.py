"""The tool admin's "Try it" and "What clients see" pages.

A trial is a real ``tools/call``: it goes through ``Server.receive`` on an in-process session of the chosen
user (and token), so the caller's view of the catalog, the rate limit, the concurrency limit, argument
validation, the timeout, the output checks and the audit row are those every client meets. The session's
transport is ``admin`` and its audit rows name the admin who ran the trial as the client.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django import forms
from django.contrib.admin import ModelAdmin
from django.contrib.auth import get_permission_codename, get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from mcp_tools import __version__
from mcp_tools.access.audit import audit_log
from mcp_tools.admin.audience import audience, may_see
from mcp_tools.admin.schema_forms import ArgumentsForm
from mcp_tools.conf import mcp_settings
from mcp_tools.loops import in_own_loop
from mcp_tools.models import AccessToken, Tool
from mcp_tools.notify.hub import hub
from mcp_tools.protocol import jsonrpc
from mcp_tools.protocol import versions as v
from mcp_tools.server.calls.confirmation import INPUT_KEY
from mcp_tools.server.dispatch import server
from mcp_tools.server.listing import definition_json
from mcp_tools.server.session import Session
from mcp_tools.tools.confirmations import CONFIRM_FIELD
from mcp_tools.tools.entries import entry_from_row

TRANSPORT = "admin"
PERMISSION = "mcp_tools.try_tool"
#: The arguments an admin may send at most, below MAX_MESSAGE_BYTES where that is larger.
MAX_ARGUMENT_BYTES = 262_144
#: Past this many active users the user is typed (by username) rather than chosen from a list.
MAX_USER_CHOICES = 1000
REQUEST_ID = 1


def may_try(user: Any) -> bool:
    """Active staff holding ``mcp_tools.try_tool`` (superusers hold every permission)."""
    return bool(user.is_active and user.is_staff and user.has_perm(PERMISSION))


def argument_cap() -> int:
    return min(int(mcp_settings.MAX_MESSAGE_BYTES), MAX_ARGUMENT_BYTES)


def client_label(admin: Any) -> str:
    return (_("admin trial by %(username)s") % {"username": admin.get_username()})[:255]


# Running a request as a client would -----------------------------------------------------------------


async def exchange(user: Any, token: Any, client: str, message: dict[str, Any]) -> dict[str, Any] | None:
    """Send one JSON-RPC request on a session of ``user`` holding ``token``; its response as the client reads it."""
    # As for a stateless HTTP request: changes made in other processes bind before anything is looked at.
    await hub().ensure_fresh()
    emitted: list[Any] = []
    session = Session(transport=TRANSPORT, user=user, token=token, emit=emitted.append)
    session.audit_client = client
    await server.receive(session, json.dumps(message))
    running = [inflight.task for inflight in session.in_flight.values()]
    await asyncio.gather(*running, return_exceptions=True)
    await audit_log().flush()
    for sent in emitted:
        # Progress notifications carry a method; the response carries the request's id.
        if isinstance(sent, dict) and "method" not in sent and sent.get("id") == message.get("id"):
            decoded: dict[str, Any] = json.loads(jsonrpc.encode(sent))
            return decoded
    return None


def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request of the latest revision, whose ``_meta`` says who the client is and that it can ask its user."""
    meta = {
        v.PROTOCOL_VERSION_META: str(v.LATEST.wire),
        # It asks the admin trying it when a call needs a person's yes (the question shows on the page).
        v.CLIENT_CAPABILITIES_META: {"elicitation": {"form": {}}},
        v.CLIENT_INFO_META: {"name": "django-admin", "version": __version__},
    }
    return {"jsonrpc": "2.0", "id": REQUEST_ID, "method": method, "params": {**params, "_meta": meta}}


def ask(user: Any, token: Any, client: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one request made as ``user`` (sync: for views, commands and tests)."""
    return in_own_loop(exchange, user, token, client, request(method, params))


@dataclass
class Outcome:
    """What a trial answered, as the client got it, and how long it took."""

    response: dict[str, Any] | None
    milliseconds: float

    @property
    def error(self) -> dict[str, Any] | None:
        if self.response is None:
            return {"code": None, "message": _("No response.")}
        error = self.response.get("error")
        return error if isinstance(error, dict) else None

    @property
    def result(self) -> dict[str, Any]:
        result = (self.response or {}).get("result")
        return result if isinstance(result, dict) else {}

    @property
    def is_error(self) -> bool:
        return bool(self.result.get("isError"))

    @property
    def question(self) -> str:
        """What the call asks a person before it runs (the admin, here), or "" when it ran."""
        if self.result.get("resultType") != "input_required":
            return ""
        requests = self.result.get("inputRequests")
        asked = requests.get(INPUT_KEY) if isinstance(requests, dict) else None
        params = asked.get("params") if isinstance(asked, dict) else None
        return str(params.get("message", "")) if isinstance(params, dict) else ""

    @property
    def request_state(self) -> str:
        return str(self.result.get("requestState") or "")

    @property
    def texts(self) -> list[str]:
        content = self.result.get("content")
        blocks = content if isinstance(content, list) else []
        return [str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"]

    @property
    def other_blocks(self) -> list[str]:
        content = self.result.get("content")
        blocks = content if isinstance(content, list) else []
        return [pretty(b) for b in blocks if not (isinstance(b, dict) and b.get("type") == "text")]

    @property
    def has_structured(self) -> bool:
        return "structuredContent" in self.result

    @cached_property
    def structured(self) -> str:
        return pretty(self.result.get("structuredContent"))

    @cached_property
    def error_data(self) -> str:
        error = self.error or {}
        return pretty(error["data"]) if "data" in error else ""

    @cached_property
    def raw(self) -> str:
        return pretty(self.response)


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def try_tool(
    tool: Tool, user: Any, token: Any, arguments: dict[str, Any], admin: Any, confirmed_state: str = ""
) -> Outcome:
    """Call the tool as ``user``; ``confirmed_state``: the admin said yes to the question that state came with."""
    started = time.perf_counter()
    params: dict[str, Any] = {"name": tool.name, "arguments": arguments}
    if confirmed_state:
        params["inputResponses"] = {INPUT_KEY: {"action": "accept", "content": {CONFIRM_FIELD: True}}}
        params["requestState"] = confirmed_state
    response = ask(user, token, client_label(admin), "tools/call", params)
    return Outcome(response, (time.perf_counter() - started) * 1000)


# The forms ------------------------------------------------------------------------------------------


class CallerForm(forms.Form):
    """Who the call is made as: an active user and, optionally, one of their access tokens."""

    user = forms.ModelChoiceField(
        queryset=get_user_model()._default_manager.none(),
        label=gettext_lazy("Try as user"),
        empty_label=gettext_lazy("Choose a user"),
    )
    token = forms.ModelChoiceField(
        queryset=AccessToken.objects.none(),
        required=False,
        label=gettext_lazy("Access token"),
        empty_label=gettext_lazy("None: the user's own credentials"),
        help_text=gettext_lazy(
            "A call made with a token is counted against its rate limit too, and refused once it has expired."
        ),
    )

    def __init__(self, *args: Any, admin: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        model = get_user_model()
        users = model._default_manager.filter(is_active=True)
        if not admin.is_superuser:
            # Trying as a superuser would lend an admin a superuser's reach.
            users = users.filter(is_superuser=False)
        field = self.fields["user"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = users.order_by(model.USERNAME_FIELD)
        field.to_field_name = model.USERNAME_FIELD
        field.error_messages["invalid_choice"] = _(
            "Choose an active user. Only a superuser may try a tool as a superuser."
        )
        if users.count() > MAX_USER_CHOICES:
            field.widget = forms.TextInput(attrs={"placeholder": _("username")})
        field.widget.attrs["id"] = "id_user"
        self.chosen = self.chosen_user()
        token = self.fields["token"]
        assert isinstance(token, forms.ModelChoiceField)
        if self.chosen is not None:
            token.queryset = AccessToken.objects.filter(user=self.chosen).filter(
                Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())
            )

    def chosen_user(self) -> Any:
        """The user named in the form's data (or initial value), if the form may choose them."""
        name = self.data.get("user") if self.is_bound else self.initial.get("user")
        if not name or not isinstance(name, str):
            return None
        field = self.fields["user"]
        assert isinstance(field, forms.ModelChoiceField) and field.queryset is not None
        return field.queryset.filter(**{get_user_model().USERNAME_FIELD: name}).first()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        user, token = cleaned.get("user"), cleaned.get("token")
        if token is not None and user is not None and token.user_id != user.pk:
            self.add_error("token", _("The token must be one of the user's own."))
        return cleaned


# The views ------------------------------------------------------------------------------------------


def urls(model_admin: ModelAdmin[Tool]) -> list[URLPattern]:
    """The pages' URLs, for ToolAdmin.get_urls."""
    wrap = model_admin.admin_site.admin_view
    prefix = f"{Tool._meta.app_label}_{Tool._meta.model_name}"
    return [
        path(
            "<path:object_id>/try/",
            wrap(lambda request, object_id: try_view(model_admin, request, object_id)),
            name=f"{prefix}_try",
        ),
        path(
            "<path:object_id>/clients/",
            wrap(lambda request, object_id: clients_view(model_admin, request, object_id)),
            name=f"{prefix}_clients",
        ),
    ]


def tool_or_404(model_admin: ModelAdmin[Tool], request: HttpRequest, object_id: str) -> Tool:
    """The tool, for an admin who may view it (refused before the lookup, so that no ID is confirmed)."""
    if not model_admin.has_view_or_change_permission(request):
        raise PermissionDenied
    tool = model_admin.get_object(request, object_id)
    if tool is None:
        raise Http404(_("No tool with this ID."))
    if not model_admin.has_view_or_change_permission(request, tool):
        raise PermissionDenied
    return tool


def page(model_admin: ModelAdmin[Tool], request: HttpRequest, tool: Tool, title: str, **context: Any) -> dict[str, Any]:
    return {
        **model_admin.admin_site.each_context(request),
        "opts": Tool._meta,
        "original": tool,
        "title": title,
        "subtitle": str(tool),
        "may_try": may_try(request.user),
        **context,
    }


def try_view(model_admin: ModelAdmin[Tool], request: HttpRequest, object_id: str) -> HttpResponse:
    if not may_try(request.user):
        raise PermissionDenied
    tool = tool_or_404(model_admin, request, object_id)
    input_schema = entry_from_row(tool).spec.input_schema
    outcome = None
    if request.method == "POST":
        caller = CallerForm(request.POST, admin=request.user)
        arguments = ArgumentsForm(request.POST, input_schema=input_schema, max_bytes=argument_cap())
        if caller.is_valid() and arguments.is_valid():
            user, token = caller.cleaned_data["user"], caller.cleaned_data["token"]
            # The yes binds to the question's state, which the server checks; a forged one just asks again.
            state = request.POST.get("request_state", "") if "_confirm" in request.POST else ""
            outcome = try_tool(tool, user, token, arguments.cleaned_data["arguments"], request.user, state[:4096])
    else:
        caller = CallerForm(initial={"user": request.GET.get("user")}, admin=request.user)
        arguments = ArgumentsForm(input_schema=input_schema, max_bytes=argument_cap())
    chosen = caller.chosen
    context = page(
        model_admin,
        request,
        tool,
        _("Try %(tool)s") % {"tool": tool.name},
        caller=caller,
        arguments=arguments,
        chosen=chosen,
        chosen_sees_it=may_see(chosen, tool) if chosen is not None else None,
        outcome=outcome,
        max_bytes=argument_cap(),
        revision=str(v.LATEST.wire),
    )
    return TemplateResponse(request, "admin/mcp_tools/tool/try.html", context)


def may_see_users(user: Any) -> bool:
    opts = get_user_model()._meta
    return bool(user.has_perm(f"{opts.app_label}.{get_permission_codename('view', opts)}"))


def clients_view(model_admin: ModelAdmin[Tool], request: HttpRequest, object_id: str) -> HttpResponse:
    tool = tool_or_404(model_admin, request, object_id)
    shows_users = may_see_users(request.user)
    context = page(
        model_admin,
        request,
        tool,
        _("What clients see of %(tool)s") % {"tool": tool.name},
        definitions=definitions(tool),
        audience=audience(tool) if shows_users else None,
    )
    return TemplateResponse(request, "admin/mcp_tools/tool/clients.html", context)


def definitions(tool: Tool) -> list[tuple[list[str], str]]:
    """The tool's tools/list entry per protocol revision, newest first, revisions with the same entry together."""
    entry = entry_from_row(tool)
    grouped: dict[str, list[str]] = {}
    for revision in sorted((*v.LEGACY, *v.MODERN), reverse=True):
        text = pretty(json.loads(definition_json(entry, revision)))
        grouped.setdefault(text, []).append(revision_label(revision))
    return [(revisions, text) for text, revisions in grouped.items()]


def revision_label(revision: v.Revision) -> str:
    """How the page names a revision: its date, or the number the earliest draft used instead."""
    if isinstance(revision.wire, str):
        return revision.wire
    return str(_("%(wire)s (the earliest draft's number)") % {"wire": revision.wire})
