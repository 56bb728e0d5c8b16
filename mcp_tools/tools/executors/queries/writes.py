"""Create, update and delete: scope, references and cascades checked before anything is written, and errors
that name nothing the caller may not see."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.contrib.auth import get_permission_codename
from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.db.models import ProtectedError, QuerySet, RestrictedError
from django.db.models.deletion import Collector

from mcp_tools.access import scopes
from mcp_tools.access.confirmation_state import digest
from mcp_tools.exceptions import RowsChanged, ToolError
from mcp_tools.models import ModelQuery
from mcp_tools.tools.confirmations import Changes, shown
from mcp_tools.tools.executors.queries.call import QueryCall, Result, one, rows
from mcp_tools.tools.executors.queries.config import QuerySpec
from mcp_tools.tools.executors.queries.fields import SEP

NOT_SAVED = "Not saved: the row could not be saved."
LEAVES_SCOPE = "Not saved: the row would leave the rows you may change."


def run_create(call: QueryCall) -> Result:
    spec = call.spec
    _check_references(call)
    instance = spec.model(**{_attname(spec, name): value for name, value in call.plan.values.items()})
    if spec.scope_field:
        setattr(instance, spec.scope_field, call.user)
    _save(call, instance)
    return _saved(call, instance)


def run_update(call: QueryCall) -> Result:
    spec, plan = call.spec, call.plan
    if not plan.values:
        raise ToolError(f"Give at least one field to change: {', '.join(f.name for f in spec.writable)}.")
    instance = one(call, call.queryset.select_for_update())
    _check_state(call, _row_state(call, instance))
    _check_references(call)
    for name, value in plan.values.items():
        setattr(instance, _attname(spec, name), value)
    _save(call, instance)
    return _saved(call, instance)


def run_delete(call: QueryCall) -> Result:
    """Delete the row as Django's admin would: only if the caller may delete everything it takes with it."""
    collector = _collect(call, one(call, call.queryset))
    _check_state(call, _deletion_state(collector))
    _total, deleted = collector.delete()
    return {"results": [], "count": 1, "deleted": {label: n for label, n in sorted(deleted.items()) if n}}


def _collect(call: QueryCall, instance: Any) -> Collector:
    """What deleting ``instance`` takes with it, once the caller may delete all of it."""
    collector = Collector(using=call.queryset.db, origin=instance)
    try:
        collector.collect([instance])
    except ProtectedError as exc:
        raise ToolError(_protected(call.user, exc.protected_objects)) from None
    except RestrictedError as exc:
        raise ToolError(_protected(call.user, exc.restricted_objects)) from None
    _check_cascade(call.user, _collected(collector))
    return collector


# What a confirmed write would change, and the state it must find ------------------------------------


def changes(call: QueryCall) -> Changes:
    """What the call would write, worked out without writing: the lines a person confirms, and the state of
    the rows it touches, which the write itself must find unchanged."""
    spec, values = call.spec, call.plan.values
    name = str(spec.model._meta.verbose_name)
    if spec.operation == ModelQuery.Operation.CREATE:
        return Changes(tuple(f"new {name}: {field} = {shown(value)}" for field, value in values.items()))
    if spec.operation == ModelQuery.Operation.UPDATE:
        instance = one(call, call.queryset)
        visible = {r.path for r in spec.output}
        which = f"{name} {spec.lookup.name}={shown(call.plan.lookup_value)}"
        lines = []
        for field, value in values.items():
            old = getattr(instance, _attname(spec, field))
            before = shown(old) if field in visible else "(not shown)"
            lines.append(f"{which}: {field}: {before} → {shown(value)}")
        return Changes(tuple(lines), _row_state(call, instance))
    if spec.operation == ModelQuery.Operation.DELETE:
        collector = _collect(call, one(call, call.queryset))
        lines = [f"delete {name} {spec.lookup.name}={shown(call.plan.lookup_value)}"]
        hidden = 0
        for model, count in sorted(_collected(collector).items(), key=lambda item: item[0]._meta.label):
            if model._meta.auto_created:
                continue
            if not scopes.may_view(call.user, model):
                hidden += count
                continue
            plural = model._meta.verbose_name if count == 1 else model._meta.verbose_name_plural
            lines.append(f"{count} {plural} deleted in all")
        if hidden:
            lines.append(f"{hidden} other related rows deleted")
        return Changes(tuple(lines), _deletion_state(collector))
    return Changes()


def _row_state(call: QueryCall, instance: Any) -> str:
    return digest([instance.pk, *(getattr(instance, field.attname) for field in call.spec.writable)])


def _deletion_state(collector: Collector) -> str:
    rows = sorted((model._meta.label, str(obj.pk)) for model, objs in collector.data.items() for obj in objs)
    fast = sorted((qs.model._meta.label, qs.count()) for qs in collector.fast_deletes)
    return digest([rows, fast])


def _check_state(call: QueryCall, state: str) -> None:
    """A confirmed write runs only on the rows as the person saw them."""
    if call.expected_state is not None and state != call.expected_state:
        raise RowsChanged()


def _collected(collector: Collector) -> dict[type[models.Model], int]:
    """How many rows of each model the delete would remove, cascades included."""
    counts: Counter[type[models.Model]] = Counter()
    for model, instances in collector.data.items():
        counts[model] += len(instances)
    for queryset in collector.fast_deletes:
        counts[queryset.model] += queryset.count()
    return {model: count for model, count in counts.items() if count}


def _check_cascade(user: Any, counts: dict[type[models.Model], int]) -> None:
    # Link rows of many-to-many fields have no permissions of their own; they go with the rows they link.
    denied = [m for m in counts if not m._meta.auto_created and not user.has_perm(_delete_permission(m))]
    if not denied:
        return
    shown = sorted(str(m._meta.verbose_name_plural) for m in denied if scopes.may_view(user, m))
    hidden = len(shown) < len(denied)
    if shown and hidden:
        what = f"{_joined(shown)}, which you may not delete, and related rows you may not delete"
    elif shown:
        what = f"{_joined(shown)}, which you may not delete"
    else:
        what = "related rows you may not delete"
    raise ToolError(f"Not deleted: it would also delete {what}.")


def _protected(user: Any, instances: Any) -> str:
    """Rows that refer to the row with PROTECT or RESTRICT, named only by the models the caller may view."""
    related = {type(instance) for instance in instances}
    shown = sorted(str(m._meta.verbose_name_plural) for m in related if scopes.may_view(user, m))
    parts = [f"related {_joined(shown)}"] if shown else []
    if len(shown) < len(related):
        parts.append("related rows you may not see")
    return f"Not deleted: {' and '.join(parts)} protect it from deletion."


def _delete_permission(model: type[models.Model]) -> str:
    return f"{model._meta.app_label}.{get_permission_codename('delete', model._meta)}"


def _joined(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _attname(spec: QuerySpec, name: str) -> str:
    return str(next(f for f in spec.writable if f.name == name).attname)


def _check_references(call: QueryCall) -> None:
    """A foreign key may only name a row the caller may use; a hidden row and a missing one read alike."""
    for field in call.spec.writable:
        value = call.plan.values.get(field.name)
        if value is None or not isinstance(field, models.ForeignKey):
            continue
        usable = references(call.spec, field, call.user).using(call.queryset.db)
        if not usable.filter(**{field.target_field.attname: value}).exists():
            plural = field.related_model._meta.verbose_name_plural
            raise ToolError(f"Not saved: {field.name}: not one of the {plural} you may use.")


def references(spec: QuerySpec, field: models.ForeignKey[Any, Any], user: Any) -> QuerySet[Any]:
    """The rows a write may point ``field`` at: those of the related model the caller may see (its view
    permission and registered scopes) that keep the written row within the tool's scope field."""
    related = field.related_model
    assert isinstance(related, type) and issubclass(related, models.Model)
    queryset: QuerySet[Any] = scopes.scoped(related, user)
    prefix = f"{field.name}{SEP}"
    if spec.scope_field == field.name:
        return queryset.filter(pk=user.pk) if user.is_authenticated else queryset.none()
    if spec.scope_field.startswith(prefix):
        rest = spec.scope_field.removeprefix(prefix)
        return queryset.filter(**{rest: user}) if user.is_authenticated else queryset.none()
    return queryset


def _save(call: QueryCall, instance: Any) -> None:
    writable = {f.name for f in call.spec.writable}
    try:
        instance.full_clean(validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        raise ToolError(_invalid(exc, writable)) from None
    try:
        instance.validate_unique()
        instance.validate_constraints()
    except ValidationError as exc:
        raise ToolError(_not_accepted(exc, writable)) from None
    try:
        with transaction.atomic(using=call.queryset.db):
            instance.save()
    except IntegrityError:
        raise ToolError(NOT_SAVED) from None


def _invalid(exc: ValidationError, writable: set[str]) -> str:
    """Problems with the fields the caller may set; anything else could describe what the caller cannot see."""
    problems = [f"{name}: {' '.join(messages)}" for name, messages in exc.message_dict.items() if name in writable]
    return f"Not saved: {'; '.join(problems)}" if problems else NOT_SAVED


def _not_accepted(exc: ValidationError, writable: set[str]) -> str:
    """A value that clashes with another row: saying so, let alone "already exists", would confirm that row."""
    named = sorted(name for name in exc.message_dict if name in writable)
    if len(named) == 1:
        return f"Not saved: {named[0]}: this value is not accepted."
    if named:
        return f"Not saved: {', '.join(named)}: these values are not accepted."
    return "Not saved: these values are not accepted."


def _saved(call: QueryCall, instance: Any) -> Result:
    """The written row as the caller sees it; a write that leaves the caller's scope is undone."""
    found = rows(call.spec, call.queryset.filter(pk=instance.pk))
    if not found:
        raise ToolError(LEAVES_SCOPE)
    return {"results": found, "count": 1}
