"""The admin's export action and import pages: upload a tools file, review the diff, apply it.

The reviewed document travels from the diff page to "Apply" signed (``django.core.signing``, bound to the
user and at most an hour old), so the page cannot be made to apply anything but what was shown. The signature
also holds the fingerprint of the plan reviewed: "Apply" writes only while importing the file would still do
exactly that (checked in the import's own transaction), and shows what it would do now otherwise; so a review
applies at most once.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext_lazy as _

from mcp_tools.models import Tool
from mcp_tools.tools.transfer.document import MAX_BYTES, Document, TransferError, dumps, guess_format, parse
from mcp_tools.tools.transfer.export import export, tools_queryset
from mcp_tools.tools.transfer.importer import ADDED, CHANGED, UNCHANGED, Change, Plan, run
from mcp_tools.tools.transfer.report import shown

SALT = "mcp_tools.admin.transfer"
MAX_AGE = 3600
# Beneath Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB by default), which caps the "Apply" form's body.
MAX_PAYLOAD = 2_000_000
#: The rows an import writes besides tools; it may add, change and delete each.
ROW_MODELS = ("modelquery", "searchsource", "usergrant", "groupgrant", "ratelimitoverride")
IMPORT_PERMISSIONS = (
    "mcp_tools.add_tool",
    "mcp_tools.change_tool",
    *(f"mcp_tools.{action}_{model}" for model in ROW_MODELS for action in ("add", "change", "delete")),
)


@admin.action(description=_("Export selected tools"), permissions=["view"])
def export_tools(model_admin: admin.ModelAdmin[Tool], request: HttpRequest, queryset: QuerySet[Tool]) -> HttpResponse:
    document = export(tools_queryset().filter(pk__in=queryset.values("pk")))
    response = HttpResponse(dumps(document), content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="mcp-tools.json"'
    return response


class ImportForm(forms.Form):
    file = forms.FileField(
        label=_("Tools file"), help_text=_("A JSON or YAML file written by Export selected tools or mcp_export.")
    )
    skip_missing = forms.BooleanField(
        label=_("Skip users and groups this site lacks"),
        required=False,
        help_text=_("Otherwise a grant or rate naming someone unknown here stops the import."),
    )
    prune = forms.BooleanField(
        label=_("Disable tools that are not in the file"),
        required=False,
        help_text=_("Also removes group default rates that the file does not set. Nothing is deleted otherwise."),
    )


def urls(model_admin: admin.ModelAdmin[Tool]) -> list[URLPattern]:
    view = model_admin.admin_site.admin_view(partial(import_view, model_admin))
    return [path("import/", view, name=f"{model_admin.opts.app_label}_{model_admin.opts.model_name}_import")]


def may_import(model_admin: admin.ModelAdmin[Tool], request: HttpRequest) -> bool:
    return (
        model_admin.has_add_permission(request)
        and model_admin.has_change_permission(request)
        and request.user.has_perms(IMPORT_PERMISSIONS)
    )


def import_view(model_admin: admin.ModelAdmin[Tool], request: HttpRequest) -> HttpResponse:
    if not may_import(model_admin, request):
        raise PermissionDenied
    if request.method == "POST" and "payload" in request.POST:
        return apply(model_admin, request)
    form = ImportForm(request.POST, request.FILES) if request.method == "POST" else ImportForm()
    if not form.is_valid():
        return page(model_admin, request, "import_form.html", form=form)
    upload = form.cleaned_data["file"]
    try:
        if upload.size > MAX_BYTES:
            raise TransferError([f"The file is {upload.size:,} bytes; at most {MAX_BYTES:,} bytes are accepted."])
        document = parse(upload.read(MAX_BYTES + 1), guess_format(upload.name or ""))
    except TransferError as exc:
        return page(model_admin, request, "import_form.html", form=form, problems=exc.messages)
    options = {"skip_missing": form.cleaned_data["skip_missing"], "prune": form.cleaned_data["prune"]}
    return review(model_admin, request, document, options)


def review(
    model_admin: admin.ModelAdmin[Tool], request: HttpRequest, document: Document, options: dict[str, bool]
) -> HttpResponse:
    """The diff page of a dry run, with the document signed for "Apply" together with what it showed."""
    plan = run(document, user=request.user, skip_missing=options["skip_missing"], prune=options["prune"])
    payload = sign(request, document, options, plan)
    return diff_page(model_admin, request, plan, payload, too_large=payload is None)


def apply(model_admin: admin.ModelAdmin[Tool], request: HttpRequest) -> HttpResponse:
    payload = request.POST["payload"]
    try:
        if len(payload) > MAX_PAYLOAD:
            raise signing.BadSignature
        signed = signing.loads(payload, salt=salt(request), max_age=MAX_AGE)
        document, options, reviewed = parse(signed["document"]), signed["options"], str(signed["review"])
    except (signing.BadSignature, TransferError, KeyError, TypeError):
        messages.error(request, _("The reviewed file could not be read back or is over an hour old; upload it again."))
        return HttpResponseRedirect(request.path)
    plan = run(document, user=request.user, apply=True, reviewed=reviewed, **options)
    if plan.stale:
        messages.warning(request, _("The tools changed since you reviewed this file. Review what it would do now."))
        return review(model_admin, request, document, options)
    if plan.errors:
        return diff_page(model_admin, request, plan, None)
    added, changed = len(plan.by_status(ADDED)), len(plan.by_status(CHANGED))
    text = _("Imported: %(added)d tool(s) added, %(changed)d changed.") % {"added": added, "changed": changed}
    model_admin.message_user(request, text, messages.SUCCESS)
    opts = model_admin.opts
    return HttpResponseRedirect(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))


def salt(request: HttpRequest) -> str:
    return f"{SALT}:{request.user.pk}"


def sign(request: HttpRequest, document: Document, options: dict[str, bool], plan: Plan) -> str | None:
    """The document, options and the plan reviewed, signed for the "Apply" form; None when too large to carry back."""
    reviewed = {"document": json.dumps(document.as_data()), "options": options, "review": plan.fingerprint()}
    payload = signing.dumps(reviewed, salt=salt(request), compress=True)
    return payload if len(payload) <= MAX_PAYLOAD else None


def diff_page(
    model_admin: admin.ModelAdmin[Tool], request: HttpRequest, plan: Plan, payload: str | None, too_large: bool = False
) -> Any:
    changed = [
        (tool.name, str(_("granted to")) if granted else str(_("no longer granted to")), who)
        for tool in plan.by_status(CHANGED)
        for granted, people in ((True, tool.granted), (False, tool.revoked))
        for who in people
    ]
    context = {
        "plan": plan,
        # Each added tool's settings as text, for the owner to read what the new tool exposes and to whom.
        "added": [
            replace(tool, settings=[Change(c.field, None, shown(c.new)) for c in tool.settings])
            for tool in plan.by_status(ADDED)
        ],
        "changes": [
            (tool.name, change.field, shown(change.old), shown(change.new))
            for tool in plan.by_status(CHANGED)
            for change in tool.changes
        ],
        "grant_changes": changed,
        "unchanged": [tool.name for tool in plan.by_status(UNCHANGED)],
        "kept": [name for name in plan.site_only if name not in plan.pruned],
        "rates": [(change.field, shown(change.old), shown(change.new)) for change in plan.rate_limits],
        "payload": payload if not plan.errors and not plan.applied and plan.has_changes else None,
        "too_large": too_large and not plan.errors,
    }
    return page(model_admin, request, "import_diff.html", **context)


def page(model_admin: admin.ModelAdmin[Tool], request: HttpRequest, template: str, **context: Any) -> Any:
    opts = model_admin.opts
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": opts,
        "app_label": opts.app_label,
        "title": _("Import tools"),
        "max_bytes": MAX_BYTES,
        **context,
    }
    return TemplateResponse(request, f"admin/{opts.app_label}/{opts.model_name}/{template}", context)
