"""An admin-action tool's configuration (``Tool.config``) and what a call needs of it.

The configuration names the action (``"action": "shop.order:mark_shipped"``), the filters a call may select rows
by (``"filters": ["status__exact", "id__in"]``, as a model-query tool allows them, under the same exposure rules),
optional search fields, scope field and scope, and ``max_rows``, the most rows one call may act on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_permission_codename

from mcp_tools.conf import mcp_settings
from mcp_tools.models import ModelQuery
from mcp_tools.tools.executors.admin_actions.offered import KEY_SEP, OfferedAction, find
from mcp_tools.tools.executors.queries.config import QuerySpec, build, config_errors
from mcp_tools.tools.executors.queries.fields import SEP, FieldPathError
from mcp_tools.tools.executors.queries.schema import input_schema

DEFAULT_MAX_ROWS = 100
STANDARD_PERMISSIONS = ("add", "change", "delete", "view")
#: The keys a configuration may hold, and their types.
CONFIG_KEYS: dict[str, type | tuple[type, ...]] = {
    "action": str,
    "filters": list,
    "search_fields": list,
    "scope_field": str,
    "scope": str,
    "max_rows": int,
}


class ConfigProblem(ValueError):
    """A configuration that cannot run; the message says what to change."""


@dataclass(frozen=True)
class AdminActionSpec:
    tool_name: str
    action: OfferedAction
    selection: QuerySpec  # the rows a call may select, as a count query over the same model
    max_rows: int

    @property
    def input_schema(self) -> dict[str, Any]:
        schema = input_schema(self.selection)
        schema["description"] = (
            f"Selects the {self.action.model._meta.verbose_name_plural} to {self.action.description.lower()}"
            f" (at most {self.max_rows} per call)."
        )
        return schema

    @property
    def output_schema(self) -> dict[str, Any]:
        message = {
            "type": "object",
            "properties": {"level": {"type": "string"}, "message": {"type": "string"}},
            "required": ["level", "message"],
        }
        return {
            "type": "object",
            "properties": {"rows": {"type": "integer"}, "messages": {"type": "array", "items": message}},
            "required": ["rows", "messages"],
        }

    def permissions(self) -> tuple[str, ...]:
        """What a caller needs before the tool is offered: the selection's view permissions, and the standard
        permissions the action declares (the admin asks for any one of them; so does ``run``, of every kind)."""
        opts = self.action.model._meta
        declared = [p for p in self.action.allowed_permissions if p in STANDARD_PERMISSIONS]
        # The admin offers an action with several declared permissions to a user holding any one; only one
        # declared permission can be required up front, the rest is the ModelAdmin's own check at each call.
        needed = {f"{opts.app_label}.{get_permission_codename(declared[0], opts)}"} if len(declared) == 1 else set()
        return tuple(sorted(needed | set(self.selection.permissions())))


def build_spec(config: Any, tool_name: str) -> AdminActionSpec:
    """The spec of a configuration; ConfigProblem says what does not fit."""
    if not isinstance(config, dict):
        raise ConfigProblem("The configuration must be an object.")
    for key, value in config.items():
        expected = CONFIG_KEYS.get(key)
        if expected is None:
            raise ConfigProblem(f"Unknown configuration key {key!r}; the keys are {', '.join(CONFIG_KEYS)}.")
        if not isinstance(value, expected) or isinstance(value, bool):
            raise ConfigProblem(f"{key!r} has the wrong type.")
    key = str(config.get("action", ""))
    action = find(key) if KEY_SEP in key else None
    if action is None:
        raise ConfigProblem(f"The site's admin offers no action {key!r}.")
    if not action.usable:
        raise ConfigProblem(f"The action {key!r} cannot run as a tool: {action.problem}.")
    max_rows = int(config.get("max_rows", DEFAULT_MAX_ROWS))
    if not 1 <= max_rows <= int(mcp_settings.ROW_CAP):
        raise ConfigProblem(f"max_rows must be between 1 and the site's ROW_CAP ({mcp_settings.ROW_CAP}).")
    row = selection_row(action, config)
    errors = config_errors(row)
    if errors:
        raise ConfigProblem(" ".join(str(message) for messages in errors.values() for message in messages))
    try:
        selection = build(row, tool_name)
    except FieldPathError as exc:
        raise ConfigProblem(str(exc)) from None
    return AdminActionSpec(tool_name, action, selection, max_rows)


def selection_row(action: OfferedAction, config: dict[str, Any]) -> ModelQuery:
    """The rows a call may select, as an unsaved count query: the same allow-lists and exposure rules, crossing
    the relations its filters and search fields name."""
    filters = [str(f) for f in config.get("filters", [])]
    search_fields = [str(f) for f in config.get("search_fields", [])]
    return ModelQuery(
        model=action.model._meta.label,
        operation=ModelQuery.Operation.COUNT,
        relations=crossed([f.rpartition(SEP)[0] for f in filters] + search_fields),
        filters=filters,
        search_fields=search_fields,
        scope_field=str(config.get("scope_field", "")),
        scope=str(config.get("scope", "")),
    )


def crossed(paths: list[str]) -> list[str]:
    """The relations the field paths cross: ``customer__name`` crosses ``customer``."""
    found: set[str] = set()
    for path in paths:
        parts = path.split(SEP)[:-1]
        found.update(SEP.join(parts[: i + 1]) for i in range(len(parts)))
    return sorted(found)
