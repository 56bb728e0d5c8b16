"""Calls waiting for a person's yes given on the site: what was asked, by whom, for which rows, and who decided."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Approval(models.Model):
    """One call waiting for a yes given on the site: asked for once, decided once, run at most once.

    Who decides is ``confirmer``: an approver (a member of ``approvers``, never the caller) in the admin, or the
    caller on the site's confirmation page (the fallback for clients that cannot ask their user). It binds to
    the tool, the caller, their credential and the exact arguments (``binding``), and to the rows as the
    person deciding saw them (``state``); a retry of the same call by the same caller finds it and runs once.
    """

    class Status(models.TextChoices):
        PENDING = "pending", _("Waiting for a decision")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")
        USED = "used", _("Approved and run")

    class Confirmer(models.TextChoices):
        APPROVER = "approver", _("An approver, in the admin")
        CALLER = "caller", _("The caller, on the confirmation page")

    tool = models.ForeignKey(
        "mcp_tools.Tool", null=True, on_delete=models.SET_NULL, related_name="approvals", verbose_name=_("tool")
    )
    tool_name = models.CharField(_("tool"), max_length=128)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.CASCADE,
        related_name="mcp_approval_requests",
        verbose_name=_("caller"),
    )
    binding = models.CharField(_("binding"), max_length=64, db_index=True, editable=False)
    arguments = models.JSONField(_("arguments"), default=dict, blank=True)
    question = models.TextField(_("what the call will do"))
    state = models.CharField(_("rows state"), max_length=64, blank=True, editable=False)
    approvers = models.ForeignKey(
        "auth.Group", null=True, on_delete=models.SET_NULL, related_name="+", verbose_name=_("approvers")
    )
    confirmer = models.CharField(
        _("confirmed by"), max_length=16, choices=Confirmer.choices, default=Confirmer.APPROVER, editable=False
    )
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("decided by"),
    )
    decided_at = models.DateTimeField(_("decided"), null=True, blank=True)
    created_at = models.DateTimeField(_("asked"), default=timezone.now, db_index=True)
    expires_at = models.DateTimeField(_("expires"), db_index=True)

    class Meta:
        ordering: ClassVar = ["-created_at"]
        verbose_name = _("approval")
        verbose_name_plural = _("approvals")
        permissions: ClassVar = [("approve_call", _("Can approve or reject tool calls"))]

    def __str__(self) -> str:
        return f"{self.tool_name} #{self.pk}"

    @property
    def expired(self) -> bool:
        return self.expires_at <= timezone.now()
