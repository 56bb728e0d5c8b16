"""Tools and access tokens."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from mcp_tools.validators import validate_icons, validate_tool_name, validate_tool_schema

HINT_FIELDS = {
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}


def default_input_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "additionalProperties": False}


class Tool(models.Model):
    """A tool agents may list and call; its implementation is a registered callable or a model query."""

    class Kind(models.TextChoices):
        CALLABLE = "callable", _("Registered Python callable")
        MODEL_QUERY = "model_query", _("Model query")

    name = models.CharField(
        _("name"),
        max_length=64,
        unique=True,
        validators=[validate_tool_name],
        help_text=_("What agents call it: 1-64 characters of letters, digits, '_', '-' and '.'."),
    )
    title = models.CharField(_("title"), max_length=200, blank=True)
    description = models.TextField(_("description"), blank=True)
    input_schema = models.JSONField(
        _("input schema"),
        default=default_input_schema,
        blank=True,
        validators=[validate_tool_schema],
        help_text=_('JSON Schema of the arguments; root "type": "object".'),
    )
    output_schema = models.JSONField(
        _("output schema"),
        null=True,
        blank=True,
        validators=[validate_tool_schema],
        help_text=_('Optional JSON Schema of the structured result; root "type": "object".'),
    )
    read_only_hint = models.BooleanField(_("read-only hint"), null=True, blank=True)
    destructive_hint = models.BooleanField(_("destructive hint"), null=True, blank=True)
    idempotent_hint = models.BooleanField(_("idempotent hint"), null=True, blank=True)
    open_world_hint = models.BooleanField(_("open-world hint"), null=True, blank=True)
    icons = models.JSONField(_("icons"), default=list, blank=True, validators=[validate_icons])
    enabled = models.BooleanField(_("enabled"), default=True, db_index=True)
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices, default=Kind.CALLABLE)
    callable_name = models.CharField(
        _("registered callable"),
        max_length=200,
        blank=True,
        help_text=_("The key under which an app registered the function with @tool."),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        ordering: ClassVar = ["name"]
        verbose_name = _("tool")
        verbose_name_plural = _("tools")

    def __str__(self) -> str:
        return self.name

    @property
    def annotations(self) -> dict[str, bool]:
        hints = {wire: getattr(self, attr) for attr, wire in HINT_FIELDS.items()}
        return {wire: value for wire, value in hints.items() if value is not None}

    def clean(self) -> None:
        super().clean()
        if self.kind == self.Kind.CALLABLE:
            self._clean_callable()

    def _clean_callable(self) -> None:
        from mcp_tools.registry import registry

        if not self.callable_name:
            raise ValidationError({"callable_name": _("Choose the registered callable this tool runs.")})
        registered = registry.get(self.callable_name)
        if registered is None:
            raise ValidationError(
                {"callable_name": _("No callable is registered as %(name)s.") % {"name": self.callable_name}}
            )
        if not self.input_schema or self.input_schema == default_input_schema():
            self.input_schema = registered.input_schema
        if self.output_schema is None and registered.output_schema is not None:
            self.output_schema = registered.output_schema


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def new_token_secret() -> str:
    return AccessToken.PREFIX + secrets.token_urlsafe(32)


class AccessTokenManager(models.Manager["AccessToken"]):
    def issue(self, user: Any, *, name: str = "", days: int | None = None) -> tuple[AccessToken, str]:
        """Create a token; returns the row and the only copy of the secret."""
        raw = new_token_secret()
        expires = timezone.now() + timedelta(days=days) if days else None
        token = self.create(user=user, name=name, digest=hash_token(raw), hint=raw[:12], expires_at=expires)
        return token, raw


class AccessToken(models.Model):
    """A bearer token for MCP clients; only its SHA-256 digest is stored."""

    PREFIX = "mcp_"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_tokens", verbose_name=_("user")
    )
    name = models.CharField(_("name"), max_length=100, blank=True)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    hint = models.CharField(_("starts with"), max_length=16, editable=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    expires_at = models.DateTimeField(_("expires"), null=True, blank=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True, editable=False)

    objects = AccessTokenManager()

    class Meta:
        ordering: ClassVar = ["-created_at"]
        verbose_name = _("access token")
        verbose_name_plural = _("access tokens")

    def __str__(self) -> str:
        return f"{self.hint}… ({self.user})"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


class ClientSession(models.Model):
    """A legacy Streamable HTTP session, so that any worker process can serve it."""

    id = models.CharField(primary_key=True, max_length=64, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="mcp_sessions",
        verbose_name=_("user"),
    )
    revision = models.CharField(_("protocol revision"), max_length=20)
    client_capabilities = models.JSONField(_("client capabilities"), default=dict, blank=True)
    client_info = models.JSONField(_("client"), default=dict, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    last_seen_at = models.DateTimeField(_("last seen"), auto_now_add=True, db_index=True)
    ended_at = models.DateTimeField(_("ended"), null=True, blank=True)

    class Meta:
        ordering: ClassVar = ["-created_at"]
        verbose_name = _("client session")
        verbose_name_plural = _("client sessions")

    def __str__(self) -> str:
        name = self.client_info.get("name") if isinstance(self.client_info, dict) else None
        return f"{name or 'client'} ({self.revision})"


class ChangeCounter(models.Model):
    """Counts committed changes, for processes that poll instead of hearing the channel layer."""

    name = models.CharField(primary_key=True, max_length=32)
    value = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = _("change counter")

    def __str__(self) -> str:
        return f"{self.name}: {self.value}"
