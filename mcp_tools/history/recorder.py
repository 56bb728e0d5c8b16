"""Model signals that write each tool's history: its row, model query, search sources, grants and rate overrides.

``pre_save`` reads the row as it was, ``post_save`` and ``post_delete`` write the difference as a
``ToolChange`` in the same transaction as the change (a rolled-back change leaves no entry), credited to
the actor of ``history.actor``. Within one ``recording`` block the changes of one tool update one entry.
QuerySet ``update()`` and bulk operations send no signals and are not recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db import models
from django.db.models.signals import post_delete, post_save, pre_delete, pre_save

from mcp_tools.history.actor import current
from mcp_tools.history.values import Changes, bounded, diff, merge, plain
from mcp_tools.models import GroupGrant, ModelQuery, RateLimitOverride, SearchSource, Tool, ToolChange, UserGrant

BEFORE = "_mcp_history_before"
ADDED, CHANGED, DELETED = ToolChange.Action.ADDED, ToolChange.Action.CHANGED, ToolChange.Action.DELETED
UNTRACKED = frozenset({"id", "tool", "created_at", "updated_at"})
# Values a new row's entry leaves out: fields left blank say nothing.
EMPTY: tuple[Any, ...] = (None, "", [], {})

# Tools being deleted, as (database, pk): the rows deleted with them are part of the tool's own entry.
_deleting: set[tuple[str, Any]] = set()


def _fields(model: type[models.Model]) -> list[models.Field[Any, Any]]:
    return [f for f in model._meta.concrete_fields if f.name not in UNTRACKED]


def _values(instance: models.Model, prefix: str = "") -> dict[str, Any]:
    return {f"{prefix}{f.name}": plain(f.value_from_object(instance)) for f in _fields(type(instance))}


def _related(instance: models.Model, name: str) -> str:
    """The label of a grant's user or group, or its id once that row is gone."""
    try:
        related = getattr(instance, name)
    except ObjectDoesNotExist:
        return f"#{getattr(instance, f'{name}_id')}"
    return str(related.get_username() if hasattr(related, "get_username") else related)


@dataclass(frozen=True)
class Tracked:
    """How a model's row reads in its tool's history: the fields it shows, and whether they follow update_fields."""

    entries: Callable[[Any], dict[str, Any]]
    by_field: bool = True
    related: tuple[str, ...] = ()


def _tool_values(tool: Tool) -> dict[str, Any]:
    values = _values(tool)
    if tool.schemas_generated:
        # Derived from the configuration recorded beside them; repeating them would bury the change.
        values.pop("input_schema", None)
        values.pop("output_schema", None)
    return values


TRACKED: dict[type[models.Model], Tracked] = {
    Tool: Tracked(_tool_values),
    ModelQuery: Tracked(lambda q: _values(q, "query.")),
    SearchSource: Tracked(lambda s: _values(s, f"source {s.model}.")),
    UserGrant: Tracked(lambda g: {f"user grant: {_related(g, 'user')}": "granted"}, False, ("user",)),
    GroupGrant: Tracked(lambda g: {f"group grant: {_related(g, 'group')}": "granted"}, False, ("group",)),
    RateLimitOverride: Tracked(lambda o: {f"rate for group: {_related(o, 'group')}": o.rate}, False, ("group",)),
}


def _tool_id(instance: models.Model) -> Any:
    return instance.pk if isinstance(instance, Tool) else getattr(instance, "tool_id", None)


def _tool_name(instance: models.Model, tool_id: Any, using: str) -> str:
    if isinstance(instance, Tool):
        return instance.name
    name = Tool._default_manager.using(using).filter(pk=tool_id).values_list("name", flat=True).first()
    return name or f"#{tool_id}"


def remember(
    sender: type[models.Model], instance: models.Model, raw: bool = False, using: str = "default", **kwargs: Any
) -> None:
    """pre_save: keep the row as it is in the database, to compare once saved."""
    before = None
    if not raw and instance.pk is not None:
        rows = sender._default_manager.using(using).filter(pk=instance.pk)
        related = TRACKED[sender].related
        # With no names, select_related() would follow every foreign key (and is deprecated from Django 6.1).
        before = (rows.select_related(*related) if related else rows).first()
    setattr(instance, BEFORE, before)


def saved(
    sender: type[models.Model],
    instance: models.Model,
    created: bool,
    raw: bool = False,
    using: str = "default",
    update_fields: Any = None,
    **kwargs: Any,
) -> None:
    if raw:
        return
    before = None if created else getattr(instance, BEFORE, None)
    setattr(instance, BEFORE, None)
    tracked = TRACKED[sender]
    after = tracked.entries(instance)
    old_tool, new_tool = (_tool_id(before) if before is not None else None), _tool_id(instance)
    old = tracked.entries(before) if before is not None else {}
    if update_fields is not None and tracked.by_field and before is not None:
        # Only the saved fields reach the database; the others on the instance may be stale.
        shown = set(update_fields)
        old = {key: value for key, value in old.items() if key.rsplit(".", 1)[-1] in shown}
        after = {key: value for key, value in after.items() if key.rsplit(".", 1)[-1] in shown}
    action = ADDED if created and isinstance(instance, Tool) else CHANGED
    if created:
        after = {key: value for key, value in after.items() if value not in EMPTY}
    if before is not None and old_tool != new_tool:
        _write(before, old_tool, using, CHANGED, diff(old, {}))
        old = {}
    _write(instance, new_tool, using, action, diff(old, after))


def marking(sender: type[models.Model], instance: models.Model, using: str = "default", **kwargs: Any) -> None:
    """pre_delete of a tool: the rows deleted with it need no entries of their own."""
    _deleting.add((using, instance.pk))


def deleted(sender: type[models.Model], instance: models.Model, using: str = "default", **kwargs: Any) -> None:
    tool_id = _tool_id(instance)
    if isinstance(instance, Tool):
        _deleting.discard((using, tool_id))
        _write(instance, tool_id, using, DELETED, diff(TRACKED[Tool].entries(instance), {}))
    elif (using, tool_id) not in _deleting:
        _write(instance, tool_id, using, CHANGED, diff(TRACKED[sender].entries(instance), {}))


def _write(instance: models.Model, tool_id: Any, using: str, action: str, changes: Changes) -> None:
    if tool_id is None or (action == CHANGED and not changes):
        return
    actor = current()
    name = _tool_name(instance, tool_id, using)
    link = None if action == DELETED else tool_id
    rows = ToolChange._default_manager.using(using)
    key = (using, tool_id)
    entry = rows.filter(pk=actor.entries[key]).first() if actor.group and key in actor.entries else None
    if entry is None:
        created = rows.create(
            tool_id=link,
            tool_name=name[:64],
            user_id=actor.user_id,
            username=actor.username[:150],
            source=actor.source,
            action=action,
            changes=bounded(changes),
        )
        if actor.group:
            actor.entries[key] = created.pk
        return
    merged = merge(entry.changes, changes)
    entry.action = DELETED if action == DELETED else entry.action
    if entry.action == CHANGED and not merged:
        entry.delete()
        del actor.entries[key]
        return
    entry.tool_id, entry.tool_name, entry.changes = link, name[:64], bounded(merged)
    entry.save(update_fields=["tool", "tool_name", "action", "changes"])


for _model in TRACKED:
    _label = _model._meta.model_name
    pre_save.connect(remember, sender=_model, dispatch_uid=f"mcp_tools.history.{_label}.before")
    post_save.connect(saved, sender=_model, dispatch_uid=f"mcp_tools.history.{_label}.saved")
    post_delete.connect(deleted, sender=_model, dispatch_uid=f"mcp_tools.history.{_label}.deleted")
pre_delete.connect(marking, sender=Tool, dispatch_uid="mcp_tools.history.tool.deleting")
