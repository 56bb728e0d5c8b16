"""What the app records about its own running: the audit trail of calls, the change counters and the
calls in flight that the admin shows."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from mcp_tools.models.tokens import AccessToken


class ChangeCounter(models.Model):
    """Counts committed changes, for processes that poll instead of hearing the channel layer."""

    name = models.CharField(primary_key=True, max_length=32)
    value = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = _("change counter")

    def __str__(self) -> str:
        return f"{self.name}: {self.value}"


class ToolCall(models.Model):
    """One audited tools/call: who, how, what, and how it ended."""

    class Outcome(models.TextChoices):
        OK = "ok", _("OK")
        ERROR = "error", _("Tool error")
        DENIED = "denied", _("Denied or unknown tool")
        RATE_LIMITED = "rate_limited", _("Rate limited")
        INVALID = "invalid", _("Invalid arguments")
        TIMEOUT = "timeout", _("Timed out")
        CANCELLED = "cancelled", _("Cancelled")
        ASKED = "asked", _("Confirmation asked")
        DECLINED = "declined", _("Declined by the person")
        UNCONFIRMED = "unconfirmed", _("Not confirmed")
        PENDING = "pending", _("Waiting for a confirmation")

    class Confirmation(models.TextChoices):
        NONE = "", _("Not asked")
        ELICITATION = "elicitation", _("The user, in the client (elicitation)")
        APPROVER = "approver", _("An approver, in the admin")
        PAGE = "page", _("The user, on the site's confirmation page")

    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("user"),
    )
    username = models.CharField(_("username"), max_length=150, blank=True)
    token = models.ForeignKey(
        AccessToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", verbose_name=_("token")
    )
    client = models.CharField(
        _("client"), max_length=255, blank=True, help_text=_("The OAuth client the call was made through, if any.")
    )
    transport = models.CharField(_("transport"), max_length=16)
    session_id = models.CharField(_("session"), max_length=64, blank=True)
    tool_name = models.CharField(_("tool"), max_length=128, db_index=True)
    arguments = models.JSONField(_("arguments"), default=dict, blank=True)
    outcome = models.CharField(_("outcome"), max_length=16, choices=Outcome.choices, db_index=True)
    message = models.TextField(_("message"), blank=True)
    duration_ms = models.FloatField(_("duration (ms)"), default=0)
    result_bytes = models.PositiveIntegerField(_("result size (bytes)"), default=0)
    confirmation = models.CharField(
        _("confirmed through"), max_length=16, choices=Confirmation.choices, default=Confirmation.NONE, blank=True
    )
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("confirmed by"),
    )

    class Meta:
        ordering: ClassVar = ["-created_at"]
        verbose_name = _("tool call")
        verbose_name_plural = _("tool calls")

    def __str__(self) -> str:
        return f"{self.tool_name} by {self.username or '-'} ({self.outcome})"


class SpentConfirmation(models.Model):
    """A person's yes that a call has acted on, kept until it would have expired: the same yes never runs twice."""

    nonce = models.CharField(_("nonce"), max_length=32, unique=True)
    expires_at = models.DateTimeField(_("expires"), db_index=True)

    class Meta:
        verbose_name = _("spent confirmation")
        verbose_name_plural = _("spent confirmations")

    def __str__(self) -> str:
        return self.nonce


class ToolChange(models.Model):
    """One recorded change of a tool's definition, configuration or grants: who, when, how and what."""

    class Action(models.TextChoices):
        ADDED = "added", _("Added")
        CHANGED = "changed", _("Changed")
        DELETED = "deleted", _("Deleted")

    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)
    tool = models.ForeignKey(
        "mcp_tools.Tool",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="changes",
        verbose_name=_("tool"),
    )
    tool_name = models.CharField(_("tool name"), max_length=64, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("user"),
    )
    username = models.CharField(_("username"), max_length=150, blank=True)
    source = models.CharField(
        _("source"), max_length=32, blank=True, help_text=_("Where the change was made: admin, import, mcp_sync, ...")
    )
    action = models.CharField(_("action"), max_length=16, choices=Action.choices)
    changes = models.JSONField(
        _("changes"), default=dict, blank=True, help_text=_("Each changed field with its old and new value.")
    )

    class Meta:
        ordering: ClassVar = ["-created_at", "-pk"]
        verbose_name = _("tool change")
        verbose_name_plural = _("tool changes")

    def __str__(self) -> str:
        return f"{self.tool_name} {self.action} by {self.username or '-'}"


class RunningCall(models.Model):
    """A call that has run for a while in one worker process, shown in the admin, which may cancel it.

    Rows are kept by the process that runs the call: written once the call is old enough to be worth
    showing, renewed while it runs (``seen_at``), deleted when it ends. A process that died leaves rows that
    stop being renewed; they are stale and pruned.
    """

    process = models.CharField(_("process"), max_length=64, db_index=True)
    key = models.CharField(_("call"), max_length=64)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("user"),
    )
    username = models.CharField(_("username"), max_length=150, blank=True)
    tool_name = models.CharField(_("tool"), max_length=128)
    transport = models.CharField(_("transport"), max_length=16, blank=True)
    session_id = models.CharField(_("session"), max_length=64, blank=True)
    started_at = models.DateTimeField(_("started"))
    seen_at = models.DateTimeField(_("last seen"), db_index=True)
    cancel_requested_at = models.DateTimeField(_("cancel requested"), null=True, blank=True)

    class Meta:
        ordering: ClassVar = ["started_at"]
        verbose_name = _("call in flight")
        verbose_name_plural = _("calls in flight")
        constraints: ClassVar = [models.UniqueConstraint(fields=["process", "key"], name="mcp_running_call_key")]
        permissions: ClassVar = [("cancel_runningcall", _("Can cancel calls in flight"))]

    def __str__(self) -> str:
        return f"{self.tool_name} by {self.username or '-'}"
