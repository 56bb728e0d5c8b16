"""Tools, their model-query configurations, grants and rate overrides."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.dispatch import Signal
from django.utils.translation import gettext_lazy as _

from mcp_tools.validators import validate_icons, validate_rate, validate_tool_name, validate_tool_schema

#: Sent by ``Tool.clean()`` and ``ModelQuery.clean()`` with ``instance``. The tools layer, which knows the
#: registered callables and the query engine, receives it: it raises ValidationError for what cannot run
#: and fills what derives from the implementation (a callable's schemas).
checking = Signal()

HINT_FIELDS = {
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}

DERIVE = _("Unknown: derived from what the tool does.")


#: Kinds whose schemas are generated from their configuration (a model, search sources, an API action), by name:
#: filled as kinds register (see ``mcp_tools.tools.kinds``), read here so that the layers below the tools know.
GENERATED_KINDS: set[str] = set()


def default_input_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "additionalProperties": False}


class Tool(models.Model):
    """A tool agents may list and call; its kind (``mcp_tools.tools.kinds``) runs it.

    ``Kind`` names the built-in kinds; a site may register more, so the column holds any registered kind's name.
    """

    class Kind(models.TextChoices):
        CALLABLE = "callable", _("Registered Python callable")
        MODEL_QUERY = "model_query", _("Model query")
        SEARCH = "search", _("Search over models (ChatGPT search)")
        FETCH = "fetch", _("Fetch a search result (ChatGPT fetch)")
        API_ACTION = "api_action", _("API action (Django REST framework)")
        ADMIN_ACTION = "admin_action", _("Admin action (the site's own ModelAdmin actions)")

    class Confirmation(models.TextChoices):
        """Who must say yes before a call runs. Blank: by what the tool does (see ``tools.confirmations``)."""

        DEFAULT = "", _("Default: the user confirms writes; reads run at once")
        NONE = "none", _("None: calls run at once")
        USER = "user", _("The user confirms each call")
        APPROVER = "approver", _("An approver confirms each call (a member of the approvers group, never the caller)")

    name = models.CharField(
        _("name"),
        max_length=64,
        unique=True,
        validators=[validate_tool_name],
        help_text=_("What agents call it: 1-64 characters of letters, digits, '_', '-' and '.'."),
    )
    title = models.CharField(
        _("title"), max_length=200, blank=True, help_text=_("What people read. Blank: made from the name.")
    )
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
    read_only_hint = models.BooleanField(_("read-only hint"), null=True, blank=True, help_text=DERIVE)
    destructive_hint = models.BooleanField(_("destructive hint"), null=True, blank=True, help_text=DERIVE)
    idempotent_hint = models.BooleanField(_("idempotent hint"), null=True, blank=True, help_text=DERIVE)
    open_world_hint = models.BooleanField(_("open-world hint"), null=True, blank=True, help_text=DERIVE)
    icons = models.JSONField(_("icons"), default=list, blank=True, validators=[validate_icons])
    enabled = models.BooleanField(_("enabled"), default=True, db_index=True)
    kind = models.CharField(
        _("kind"), max_length=50, default=Kind.CALLABLE, help_text=_("What runs the tool: one of the registered kinds.")
    )
    callable_name = models.CharField(
        _("registered callable"),
        max_length=200,
        blank=True,
        help_text=_("The key under which an app registered the function with @tool."),
    )
    api_action = models.CharField(
        _("API action"),
        max_length=255,
        blank=True,
        help_text=_("The routed ViewSet action this tool runs, as URL name and action: api:order-list.list."),
    )
    config = models.JSONField(
        _("configuration"),
        default=dict,
        blank=True,
        help_text=_("The configuration of kinds that keep theirs here (admin actions, a site's own kinds)."),
    )
    confirmation = models.CharField(
        _("confirmation"),
        max_length=16,
        choices=Confirmation.choices,
        default=Confirmation.DEFAULT,
        blank=True,
        help_text=_(
            "Whether a person must approve each call before it runs, after seeing what it will change."
            " Default: calls that write (creates, updates, deletes, unsafe API actions, admin actions, callables"
            " marked destructive) ask the user; reads run at once."
        ),
    )
    approvers = models.ForeignKey(
        "auth.Group",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("approvers"),
        help_text=_("Whose members approve the calls when an approver confirms them. The caller never approves."),
    )
    everyone = models.BooleanField(
        _("every authenticated user"),
        default=False,
        help_text=_("Grant the tool to every authenticated user, besides the users and groups below."),
    )
    rate_limit = models.CharField(
        _("rate limit"),
        max_length=32,
        blank=True,
        validators=[validate_rate],
        help_text=_('Calls per user, e.g. "30/m" or "1000/h". Blank: the site default.'),
    )
    timeout_seconds = models.PositiveIntegerField(
        _("timeout (seconds)"), null=True, blank=True, help_text=_("Blank: the site default.")
    )
    max_concurrent_calls = models.PositiveIntegerField(
        _("concurrent calls per user"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "At most this many calls of this tool run at once for one user, across all their sessions."
            " Blank: the site's MAX_CALLS_PER_USER, shared with the user's other tools."
        ),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        ordering: ClassVar = ["name"]
        verbose_name = _("tool")
        verbose_name_plural = _("tools")
        permissions: ClassVar = [("try_tool", _("Can try tools as another user"))]

    def __str__(self) -> str:
        return self.name

    @property
    def annotations(self) -> dict[str, bool]:
        """The hints set on the row; unset ones are derived from what the tool does (see tools.hints)."""
        hints = {wire: getattr(self, attr) for attr, wire in HINT_FIELDS.items()}
        return {wire: value for wire, value in hints.items() if value is not None}

    @property
    def schemas_generated(self) -> bool:
        """Whether the schemas derive from what the tool runs (see GENERATED_KINDS) rather than being edited."""
        return self.kind in GENERATED_KINDS

    def clean(self) -> None:
        super().clean()
        if self.confirmation == self.Confirmation.APPROVER and self.approvers_id is None:
            raise ValidationError({"approvers": _("Choose the group whose members approve the calls.")})
        if not self.input_schema:
            self.input_schema = default_input_schema()
        # The tool's kind checks its configuration (see tools.configuration).
        checking.send(sender=type(self), instance=self)


class ModelQuery(models.Model):
    """What a model-query tool may touch: the model, the operation and every allow-list."""

    class Operation(models.TextChoices):
        LIST = "list", _("List rows")
        GET = "get", _("Get one row")
        COUNT = "count", _("Count rows")
        AGGREGATE = "aggregate", _("Aggregate")
        CREATE = "create", _("Create a row")
        UPDATE = "update", _("Update a row")
        DELETE = "delete", _("Delete a row")

    tool = models.OneToOneField(Tool, on_delete=models.CASCADE, related_name="query", verbose_name=_("tool"))
    model = models.CharField(_("model"), max_length=200, help_text=_("app_label.ModelName"))
    operation = models.CharField(_("operation"), max_length=16, choices=Operation.choices, default=Operation.LIST)
    output_fields = models.JSONField(_("output fields"), default=list, blank=True)
    relations = models.JSONField(
        _("relations"), default=list, blank=True, help_text=_("Relation paths that filters and output may follow.")
    )
    filters = models.JSONField(
        _("filters"), default=list, blank=True, help_text=_('Allowed "field__lookup" pairs, e.g. "total__gte".')
    )
    ordering_fields = models.JSONField(_("ordering fields"), default=list, blank=True)
    search_fields = models.JSONField(_("search fields"), default=list, blank=True)
    aggregate_fields = models.JSONField(_("aggregate fields"), default=list, blank=True)
    aggregate_functions = models.JSONField(_("aggregate functions"), default=list, blank=True)
    group_by_fields = models.JSONField(_("group-by fields"), default=list, blank=True)
    writable_fields = models.JSONField(_("writable fields"), default=list, blank=True)
    lookup_field = models.CharField(
        _("lookup field"), max_length=100, default="pk", help_text=_("Unique field that get, update and delete use.")
    )
    default_limit = models.PositiveIntegerField(_("default limit"), default=20)
    max_limit = models.PositiveIntegerField(_("maximum limit"), default=100)
    scope_field = models.CharField(
        _("scope field"),
        max_length=200,
        blank=True,
        help_text=_(
            "Rows visible to the caller: a path that must equal the calling user, e.g. customer__account_manager."
        ),
    )
    scope = models.CharField(
        _("scope callable"), max_length=200, blank=True, help_text=_("A scope registered with @query_scope.")
    )
    serializer = models.CharField(
        _("DRF serializer"), max_length=300, blank=True, help_text=_("Dotted path of a serializer that shapes rows.")
    )

    class Meta:
        verbose_name = _("model query")
        verbose_name_plural = _("model queries")

    def __str__(self) -> str:
        return f"{self.operation} {self.model}"

    def clean(self) -> None:
        super().clean()
        checking.send(sender=type(self), instance=self)


class UserGrant(models.Model):
    """The tool may be listed and called by this user."""

    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="user_grants", verbose_name=_("tool"))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_tool_grants", verbose_name=_("user")
    )

    class Meta:
        verbose_name = _("user grant")
        verbose_name_plural = _("user grants")
        constraints: ClassVar = [models.UniqueConstraint(fields=["tool", "user"], name="mcp_tools_unique_user_grant")]

    def __str__(self) -> str:
        return f"{self.tool} → {self.user}"


class GroupGrant(models.Model):
    """The tool may be listed and called by every member of this group."""

    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="group_grants", verbose_name=_("tool"))
    group = models.ForeignKey(
        "auth.Group", on_delete=models.CASCADE, related_name="mcp_tool_grants", verbose_name=_("group")
    )

    class Meta:
        verbose_name = _("group grant")
        verbose_name_plural = _("group grants")
        constraints: ClassVar = [models.UniqueConstraint(fields=["tool", "group"], name="mcp_tools_unique_group_grant")]

    def __str__(self) -> str:
        return f"{self.tool} → {self.group}"


class RateLimitOverride(models.Model):
    """A group's own rate, for one tool or (without a tool) for every tool."""

    group = models.ForeignKey("auth.Group", on_delete=models.CASCADE, related_name="+", verbose_name=_("group"))
    tool = models.ForeignKey(
        Tool, null=True, blank=True, on_delete=models.CASCADE, related_name="rate_overrides", verbose_name=_("tool")
    )
    rate = models.CharField(_("rate"), max_length=32, validators=[validate_rate], help_text=_('e.g. "300/m"'))

    class Meta:
        verbose_name = _("rate-limit override")
        verbose_name_plural = _("rate-limit overrides")
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "tool"], name="mcp_tools_unique_rate_override"),
            models.UniqueConstraint(
                fields=["group"], condition=models.Q(tool__isnull=True), name="mcp_tools_unique_group_default_rate"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group}: {self.rate} ({self.tool or _('every tool')})"
