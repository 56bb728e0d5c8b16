"""Which fields of a host model a tool may name, which lookups each allows, and their JSON types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.db import models

from mcp_tools.access.sensitive import is_secret_name
from mcp_tools.conf import mcp_settings

SEP = "__"
TEXT_LOOKUPS = ("exact", "iexact", "contains", "icontains", "startswith", "istartswith", "in", "isnull")
ORDERED_LOOKUPS = ("exact", "gt", "gte", "lt", "lte", "in", "range", "isnull")
DATE_PARTS = ("year", "month", "day", "week_day", "quarter")
DATE_LOOKUPS = (*ORDERED_LOOKUPS, *DATE_PARTS)
DATETIME_LOOKUPS = (*DATE_LOOKUPS, "date")
EXACT_LOOKUPS = ("exact", "in", "isnull")
BOOLEAN_LOOKUPS = ("exact", "isnull")
ALL_LOOKUPS = frozenset((*TEXT_LOOKUPS, *DATETIME_LOOKUPS))
# Excluded unless EXPOSED_MODELS names them: the admin's history, permissions and content types (a map of
# the schema), sessions, and apps whose every model is credentials or security state: this app's tokens,
# sessions and audit trail; DRF, knox and simplejwt tokens; OAuth and OpenID providers; django-otp devices
# (otp_totp, otp_static ...); social auth; allauth's social tokens and MFA; axes lockouts.
DEFAULT_EXCLUDED_MODELS = frozenset({"admin.logentry", "auth.permission", "contenttypes.contenttype"})
DEFAULT_EXCLUDED_APPS = frozenset(
    {
        "mcp_tools",
        "sessions",
        "authtoken",
        "knox",
        "token_blacklist",
        "oauth2_provider",
        "oidc_provider",
        "social_django",
        "socialaccount",
        "mfa",
        "two_factor",
        "axes",
        "django_rest_passwordreset",
    }
)
DEFAULT_EXCLUDED_APP_PREFIXES = ("otp_",)
_UNFILTERABLE = (models.JSONField, models.BinaryField, models.FileField)


class FieldPathError(ValueError):
    """A path names something a tool may not reach; the message says why."""


@dataclass(frozen=True)
class ResolvedField:
    """A field reached through a path of declared forward relations."""

    path: str
    field: models.Field[Any, Any]
    models_crossed: tuple[type[models.Model], ...]

    @property
    def relation_prefixes(self) -> tuple[str, ...]:
        parts = self.path.split(SEP)
        return tuple(SEP.join(parts[:i]) for i in range(1, len(parts)))


def model_label(model: type[models.Model]) -> str:
    return f"{model._meta.app_label}.{model._meta.object_name}"


def excluded(model: type[models.Model]) -> bool:
    """Whether tools may never touch ``model``: EXCLUDED_MODELS always, the defaults unless EXPOSED_MODELS names it."""
    label = model._meta.label_lower
    if label in _labels(mcp_settings.EXCLUDED_MODELS):
        return True
    if label in _labels(mcp_settings.EXPOSED_MODELS):
        return False
    concrete = model._meta.concrete_model
    return excluded_by_default(model) or (concrete is not None and excluded_by_default(concrete))


def excluded_by_default(model: type[models.Model]) -> bool:
    """Security state by app or label, or a model whose name or primary key says it stores secrets."""
    app = model._meta.app_label
    return (
        model._meta.label_lower in DEFAULT_EXCLUDED_MODELS
        or app in DEFAULT_EXCLUDED_APPS
        or app.startswith(DEFAULT_EXCLUDED_APP_PREFIXES)
        or is_secret_name(model._meta.object_name)
        # Rows are ordered, paged and named by their key: a secret key would leak through all three.
        or is_secret(model._meta.pk)
    )


def _labels(names: Any) -> set[str]:
    return {str(name).lower() for name in names or ()}


def resolve_model(label: str) -> type[models.Model]:
    try:
        model = apps.get_model(label)
    except (LookupError, ValueError):
        raise FieldPathError(f"No installed model {label!r}.") from None
    if excluded(model):
        raise FieldPathError(f"The model {label!r} may not be exposed.")
    return model


def is_secret(field: Any) -> bool:
    """Whether ``field`` looks like it holds a secret, by its name, attribute or column.

    A relation is as secret as the field whose value it copies: a key pointing at a token column is a token.
    """
    extra = tuple(mcp_settings.SECRET_FIELDS)
    names = (getattr(field, "name", ""), getattr(field, "attname", ""), getattr(field, "column", ""))
    if any(is_secret_name(name, extra) for name in names if name):
        return True
    return isinstance(field, models.ForeignKey) and is_secret(field.target_field)


def local_fields(model: type[models.Model]) -> list[models.Field[Any, Any]]:
    """Concrete fields of ``model`` that may ever be exposed (secrets and excluded models removed)."""
    if excluded(model):
        return []
    return [f for f in model._meta.concrete_fields if not is_secret(f)]


def target(field: models.Field[Any, Any]) -> type[models.Model]:
    """The model a forward relation points at."""
    related = field.related_model
    assert isinstance(related, type) and issubclass(related, models.Model)
    return related


def forward_relations(model: type[models.Model]) -> list[models.Field[Any, Any]]:
    return [f for f in local_fields(model) if isinstance(f, models.ForeignKey) and not excluded(target(f))]


def relation_paths(model: type[models.Model], depth: int = 2) -> list[str]:
    """Forward relation paths up to ``depth`` hops, for admin choices."""
    found: list[str] = []

    def walk(current: type[models.Model], prefix: str, remaining: int) -> None:
        for field in forward_relations(current):
            path = f"{prefix}{field.name}"
            found.append(path)
            if remaining > 1:
                walk(target(field), path + SEP, remaining - 1)

    walk(model, "", depth)
    return found


def resolve(model: type[models.Model], path: str, relations: tuple[str, ...] | frozenset[str]) -> ResolvedField:
    """The field at ``path``; every relation crossed must be declared in ``relations``."""
    parts = path.split(SEP) if path else []
    if not parts or any(not part for part in parts):
        raise FieldPathError(f"{path!r} is not a field path.")
    current, crossed = model, [model]
    for index, part in enumerate(parts):
        field = _field_named(current, part)
        if index == len(parts) - 1:
            return ResolvedField(path, field, tuple(crossed))
        prefix = SEP.join(parts[: index + 1])
        if not isinstance(field, models.ForeignKey):
            raise FieldPathError(f"{prefix!r} is not a relation.")
        if prefix not in relations:
            raise FieldPathError(f"The relation {prefix!r} is not declared.")
        current = target(field)
        if excluded(current):
            raise FieldPathError(f"The relation {prefix!r} leads to a model that may not be exposed.")
        crossed.append(current)
    raise FieldPathError(f"{path!r} is not a field path.")


def _field_named(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    # Every segment of every path goes through here, so a secret is unreachable at any depth.
    for field in local_fields(model):
        if field.name == name:
            return field
    raise FieldPathError(f"{model_label(model)} has no field {name!r} that may be exposed.")


def required_on_create(field: models.Field[Any, Any]) -> bool:
    """Whether a new row must be given a value for ``field`` (auto keys and auto dates are blank)."""
    return not (field.has_default() or field.null or field.blank)


def lookups_for(field: models.Field[Any, Any]) -> tuple[str, ...]:
    """Lookups a filter on ``field`` may use; never regex, extra or raw SQL."""
    if isinstance(field, _UNFILTERABLE):
        return ()
    if isinstance(field, models.BooleanField):
        return BOOLEAN_LOOKUPS
    if isinstance(field, models.DateTimeField):
        return DATETIME_LOOKUPS
    if isinstance(field, models.DateField):
        return DATE_LOOKUPS
    if isinstance(field, models.ForeignKey | models.UUIDField) or field.choices:
        return EXACT_LOOKUPS
    if isinstance(field, models.CharField | models.TextField):
        return TEXT_LOOKUPS
    return ORDERED_LOOKUPS


def filter_choices(model: type[models.Model], relations: tuple[str, ...] | frozenset[str]) -> list[str]:
    """Every ``path__lookup`` a tool over ``model`` could allow, given the declared relations."""
    choices: list[str] = []
    for path in field_paths(model, relations):
        field = resolve(model, path, relations).field
        choices.extend(f"{path}{SEP}{lookup}" for lookup in lookups_for(field))
    return choices


def field_paths(model: type[models.Model], relations: tuple[str, ...] | frozenset[str]) -> list[str]:
    """Local field names, then the fields of each declared relation, as paths."""
    paths = [f.name for f in local_fields(model)]
    for relation in sorted(relations):
        try:
            related = resolve(model, relation, relations).field
        except FieldPathError:
            continue
        if isinstance(related, models.ForeignKey):
            paths.extend(f"{relation}{SEP}{f.name}" for f in local_fields(target(related)))
    return paths
