"""System checks ``mcp_tools.E0xx`` / ``W0xx`` for misconfiguration detectable at start-up."""

from __future__ import annotations

import sys
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks
from django.core.management import get_commands, load_command_class
from django.core.servers.basehttp import WSGIServer
from django.db import DatabaseError
from django.urls import NoReverseMatch, Resolver404, get_script_prefix, resolve, reverse
from django.utils.module_loading import import_string

from mcp_tools.access import concurrency, scopes
from mcp_tools.conf import DEFAULTS, IMPORT_STRINGS, SETTING_NAME, mcp_settings
from mcp_tools.models import ModelQuery, SearchSource, Tool
from mcp_tools.tools.executors.api.actions import available
from mcp_tools.tools.executors.queries.exposure import exposure
from mcp_tools.tools.executors.queries.sources import as_query
from mcp_tools.tools.registry import registry
from mcp_tools.transports import endpoints
from mcp_tools.transports.channels_routing import http_route
from mcp_tools.transports.origins import is_origin_pattern
from mcp_tools.validators import RATE_RE

POSITIVE_INTS = (
    "TOKEN_LIFETIME_DAYS",
    "PAGE_SIZE",
    "MAX_MESSAGE_BYTES",
    "MAX_DEPTH",
    "MAX_CONCURRENT_CALLS",
    "MAX_CALLS_PER_USER",
    "TOOL_THREADS",
    "USER_THREADS",
    "CALL_TIMEOUT_SECONDS",
    "MAX_RESULT_BYTES",
    "AUDIT_BATCH_SIZE",
    "MAX_BATCH_ITEMS",
    "MAX_PENDING_REQUESTS",
    "MAX_SESSIONS_PER_USER",
    "SESSION_CACHE_BYTES",
    "MAX_CLIENT_STATE_BYTES",
    "AUDIT_MAX_ARGUMENT_BYTES",
)
RATES = ("DEFAULT_RATE", "DENIED_RATE", "OAUTH_REGISTRATION_RATE")
# Seconds: positive numbers (None where the default derives them from another setting).
POSITIVE_SECONDS = (
    "FRESHNESS_SECONDS",
    "POLL_SECONDS",
    "SAFETY_POLL_SECONDS",
    "STDIO_POLL_SECONDS",
    "RUNNING_CALLS_VISIBLE_SECONDS",
    "RUNNING_CALLS_STALE_SECONDS",
)


@checks.register(checks.Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    value = getattr(settings, SETTING_NAME, {})
    if not isinstance(value, dict):
        return [
            checks.Error(
                f"{SETTING_NAME} must be a dict.",
                hint="Set MCP_TOOLS = {...} in your settings.",
                id="mcp_tools.E001",
            )
        ]
    messages: list[checks.CheckMessage] = [
        checks.Error(
            f"Unknown {SETTING_NAME} key {key!r}.",
            hint=f"Valid keys: {', '.join(sorted(DEFAULTS))}.",
            id="mcp_tools.E002",
        )
        for key in sorted(set(value) - set(DEFAULTS))
    ]
    messages += _import_string_errors(value)
    messages += _positive_int_errors(value)
    messages += _seconds_errors(value)
    messages += _origin_errors(value)
    messages += _rate_errors(value)
    messages += _fallback_errors(value)
    return messages


FALLBACKS = ("refuse", "page")


def _fallback_errors(value: dict[str, Any]) -> list[checks.CheckMessage]:
    fallback = value.get("CONFIRMATION_FALLBACK", DEFAULTS["CONFIRMATION_FALLBACK"])
    if fallback not in FALLBACKS:
        return [
            checks.Error(
                f"{SETTING_NAME}['CONFIRMATION_FALLBACK'] must be one of {', '.join(map(repr, FALLBACKS))}.",
                hint='"refuse" (the default) refuses the calls a person must confirm from clients that cannot ask'
                ' them; "page" sends the person to the site\'s confirmation page.',
                id="mcp_tools.E016",
            )
        ]
    site = str(value.get("SITE_URL") or "")
    if fallback == "page" and not site.startswith(("https://", "http://")):
        return [
            checks.Error(
                f'{SETTING_NAME}["CONFIRMATION_FALLBACK"] is "page" but {SETTING_NAME}["SITE_URL"] is not the'
                " site's address: the confirmation page's link would not open.",
                hint='Set MCP_TOOLS["SITE_URL"] to the address people open the site at ("https://shop.example.com").',
                id="mcp_tools.E017",
            )
        ]
    return []


def _import_string_errors(value: dict[str, Any]) -> list[checks.CheckMessage]:
    errors: list[checks.CheckMessage] = []
    for name in IMPORT_STRINGS:
        paths = value.get(name, DEFAULTS[name])
        if not isinstance(paths, list | tuple):
            errors.append(
                checks.Error(f"{SETTING_NAME}[{name!r}] must be a list of dotted paths.", id="mcp_tools.E003")
            )
            continue
        for path in paths:
            try:
                import_string(path)
            except ImportError as exc:
                errors.append(
                    checks.Error(
                        f"{SETTING_NAME}[{name!r}] names {path!r}, which cannot be imported: {exc}",
                        hint="Check the dotted path of the class.",
                        id="mcp_tools.E003",
                    )
                )
    return errors


def _positive_int_errors(value: dict[str, Any]) -> list[checks.CheckMessage]:
    return [
        checks.Error(
            f"{SETTING_NAME}[{name!r}] must be a positive integer.",
            hint=f"Default: {DEFAULTS[name]}.",
            id="mcp_tools.E004",
        )
        for name in POSITIVE_INTS
        if name in value and not _positive_int_or_derived(name, value[name])
    ]


def _positive_int_or_derived(name: str, item: Any) -> bool:
    if item is None and (DEFAULTS[name] is None or name == "TOKEN_LIFETIME_DAYS"):
        return True  # derived from another setting, or (a token's lifetime) none at all
    return isinstance(item, int) and not isinstance(item, bool) and item >= 1


def _seconds_errors(value: dict[str, Any]) -> list[checks.CheckMessage]:
    return [
        checks.Error(
            f"{SETTING_NAME}[{name!r}] must be a positive number of seconds.",
            hint=f"Default: {DEFAULTS[name]}.",
            id="mcp_tools.E008",
        )
        for name in POSITIVE_SECONDS
        if value.get(name) is not None and not _positive_number(value[name])
    ]


def _positive_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _origin_errors(value: dict[str, Any]) -> list[checks.CheckMessage]:
    origins = value.get("ALLOWED_ORIGINS", DEFAULTS["ALLOWED_ORIGINS"])
    hint = 'Write "*" or a full origin, scheme://host[:port]: "https://app.example.com", "https://*.example.com".'
    if not isinstance(origins, list | tuple):
        return [checks.Error(f"{SETTING_NAME}['ALLOWED_ORIGINS'] must be a list.", hint=hint, id="mcp_tools.E006")]
    return [
        checks.Error(
            f"{SETTING_NAME}['ALLOWED_ORIGINS'] entry {entry!r} is not an origin.", hint=hint, id="mcp_tools.E006"
        )
        for entry in origins
        if entry != "*" and not is_origin_pattern(entry)
    ]


def _rate_errors(value: dict[str, Any]) -> list[checks.CheckMessage]:
    return [
        checks.Error(
            f'{SETTING_NAME}[{name!r}] must be a rate such as "30/m", or None.',
            hint='Calls per period: "30/m", "1000/h", "10/5s".',
            id="mcp_tools.E007",
        )
        for name in RATES
        if value.get(name) not in (None, "") and not (isinstance(value[name], str) and RATE_RE.fullmatch(value[name]))
    ]


@checks.register(checks.Tags.urls)
def check_endpoint_served(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """No door serves the Streamable HTTP endpoint: neither the URLconf nor a Channels route that the server
    about to run serves (Django's own ``runserver`` serves no Channels route)."""
    if urlconf_serves_endpoint():
        return []
    routed = channels_route_serves_endpoint()
    if routed and not (sys.argv[1:2] == ["runserver"] and not runserver_serves_asgi()):
        return []
    where = "runserver is Django's WSGI server here, which serves no Channels route, and " if routed else ""
    return [
        checks.Warning(
            f"The site serves no MCP endpoint over HTTP: {where}no URL pattern routes /mcp to mcp_tools, so /mcp "
            "and /mcp/health answer 404.",
            hint='Add path("", include("mcp_tools.urls")) to the urlpatterns of ROOT_URLCONF: it serves /mcp under '
            "WSGI (gunicorn, runserver) and ASGI alike.",
            id="mcp_tools.W013",
        )
    ]


@checks.register(checks.Tags.urls)
def check_confirmation_page_served(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The confirmation fallback sends people to a page the URLconf does not serve."""
    if mcp_settings.CONFIRMATION_FALLBACK != "page" or not getattr(settings, "ROOT_URLCONF", None):
        return []
    try:
        reverse("mcp_tools:confirm", args=[1])
    except NoReverseMatch:
        return [
            checks.Error(
                f'{SETTING_NAME}["CONFIRMATION_FALLBACK"] is "page" but no URL pattern serves the confirmation page.',
                hint='Add path("", include("mcp_tools.urls")) to the urlpatterns of ROOT_URLCONF.',
                id="mcp_tools.E018",
            )
        ]
    return []


def urlconf_serves_endpoint() -> bool:
    """Whether the URLconf routes the endpoint of ``mcp_tools.urls`` to its view, wherever it is included and
    whatever an earlier pattern might shadow."""
    if not getattr(settings, "ROOT_URLCONF", None):
        return False
    try:
        match = resolve("/" + reverse("mcp_tools:endpoint").removeprefix(get_script_prefix()))
    except (NoReverseMatch, Resolver404):
        return False
    return match.url_name == "endpoint" and "mcp_tools" in match.app_names


def channels_route_serves_endpoint() -> bool:
    """Whether ASGI_APPLICATION routes HTTP requests for ``/mcp`` to the endpoint, as ``mcp_tools.routing``
    does when composed into a Channels ``ProtocolTypeRouter``."""
    name = getattr(settings, "ASGI_APPLICATION", None)
    if not name:
        return False
    try:
        application = import_string(name)
    except ImportError:
        return False
    return _routes_to_endpoint(application, "mcp")


def _routes_to_endpoint(application: Any, path: str) -> bool:
    """Whether a request for ``path`` reaches the endpoint itself, with nothing of the path left over."""
    return any(app is endpoints.streamable_http and rest == "" for app, rest in http_route(application, path))


def runserver_serves_asgi() -> bool:
    """Whether the installed ``runserver`` command serves ASGI (daphne's) rather than Django's WSGI server."""
    command = load_command_class(get_commands()["runserver"], "runserver")
    server = getattr(command, "server_cls", None)
    return not (isinstance(server, type) and issubclass(server, WSGIServer))


@checks.register(checks.Tags.compatibility)
def check_channel_layer(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A channel layer carries changes to the live sessions of a Channels site (ASGI_APPLICATION). A site served
    only through ``mcp_tools.urls`` holds no stream to push to (WSGI); each request reads the counters."""
    layers = getattr(settings, "CHANNEL_LAYERS", None) or {}
    alias = mcp_settings.CHANNEL_LAYER if isinstance(getattr(settings, SETTING_NAME, {}), dict) else "default"
    if alias in layers:
        return []
    if alias != DEFAULTS["CHANNEL_LAYER"]:
        return [
            checks.Error(
                f"{SETTING_NAME}['CHANNEL_LAYER'] names {alias!r}, which CHANNEL_LAYERS does not define.",
                hint=f"Add {alias!r} to CHANNEL_LAYERS or remove the setting.",
                id="mcp_tools.E005",
            )
        ]
    if not getattr(settings, "ASGI_APPLICATION", None):
        return []
    return [
        checks.Warning(
            "No channel layer is configured: changes reach sessions only when each process reads the change "
            "counters (every POLL_SECONDS), even changes made in that same process.",
            hint="Set CHANNEL_LAYERS (channels_redis in production, InMemoryChannelLayer for one process).",
            id="mcp_tools.W001",
        )
    ]


@checks.register(checks.Tags.models)
def check_model_scopes(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A scope registered for a model that is not installed would silently narrow nothing."""
    installed = {model._meta.label_lower for model in apps.get_models()}
    return [
        checks.Error(
            f"A scope is registered for {label!r}, which is not an installed model: it applies to no rows.",
            hint='Pass @query_scope(..., model=...) a model class or its "app_label.ModelName".',
            id="mcp_tools.E009",
        )
        for label in scopes.registered_labels()
        if label not in installed
    ]


@checks.register(checks.Tags.database, deploy=False)
def check_tool_callables(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    return [
        checks.Warning(
            f"Tool {name!r} runs {callable_name!r}, which no installed app registers.",
            hint="Register it with @tool in an app's mcp_tools.py, or edit or delete the tool.",
            obj=name,
            id="mcp_tools.W002",
        )
        for name, callable_name in _tools_of_kind("callable", "callable_name", databases)
        if registry.get(callable_name) is None
    ]


@checks.register(checks.Tags.database, deploy=False)
def check_api_actions(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """An API-action tool whose action the site no longer routes is listed to nobody and runs nothing."""
    rows = _tools_of_kind("api_action", "api_action", databases)
    routed = available() if rows else {}
    return [
        checks.Warning(
            f"Tool {name!r} runs API action {key!r}, which the site's routers no longer route.",
            hint="Choose a routed action (manage.py mcp_api_actions lists them), or edit or delete the tool.",
            obj=name,
            id="mcp_tools.W012",
        )
        for name, key in rows
        if key not in routed
    ]


def _tools_of_kind(kind: str, column: str, databases: Any) -> list[tuple[str, str]]:
    """(name, ``column``) of the tools of ``kind``; none when the database checks were not asked for or fail."""
    if not databases:
        return []
    try:
        return list(Tool.objects.filter(kind=kind).values_list("name", column))
    except DatabaseError:
        return []


@checks.register(checks.Tags.database, deploy=False)
def check_model_query_exposure(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """Saved model-query tools and search sources that reach an excluded model or name a secret field (they
    serve nobody)."""
    if not databases:
        return []
    try:
        queries = [(row.tool.name, row) for row in ModelQuery.objects.select_related("tool").order_by("tool__name")]
        sources = SearchSource.objects.select_related("tool").order_by("tool__name", "pk")
        queries += [(row.tool.name, as_query(row)) for row in sources]
    except DatabaseError:
        return []
    messages: list[checks.CheckMessage] = []
    for tool, row in queries:
        found = exposure(row)
        messages += [_excluded_model_warning(tool, label) for label in found.models]
        messages += [_secret_field_warning(tool, allow_list, path) for allow_list, path in found.secrets]
    return messages


def _excluded_model_warning(tool: str, label: str) -> checks.CheckMessage:
    return checks.Warning(
        f"Tool {tool!r} reaches {label}, which model-query tools may not expose: the tool is hidden from every caller.",
        hint=(
            "Edit or delete the tool. To expose a model excluded by default on purpose, name it in "
            "MCP_TOOLS['EXPOSED_MODELS']."
        ),
        obj=tool,
        id="mcp_tools.W004",
    )


def _secret_field_warning(tool: str, allow_list: str, path: str) -> checks.CheckMessage:
    where = getattr(ModelQuery._meta.get_field(allow_list), "verbose_name", allow_list)
    return checks.Warning(
        f"Tool {tool!r} names {path!r} in its {where}, which looks like a secret: the tool is hidden from every "
        "caller.",
        hint="Remove the field from the tool's model query in the admin, or delete the tool.",
        obj=tool,
        id="mcp_tools.W005",
    )


@checks.register(checks.Tags.caches, deploy=True)
def check_rate_limit_cache(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if concurrency.shared():
        return []
    alias, backend = concurrency.cache_alias(), concurrency.cache_backend()
    return [
        checks.Warning(
            "Rate limits and a legacy HTTP session's concurrent calls count in the "
            f"{alias!r} cache, which is {backend.rsplit('.', 1)[-1]}: "
            "each worker process counts on its own, so limits do not hold across processes.",
            hint="Use a shared cache (Redis or Memcached) for the cache RATELIMIT_USE_CACHE names.",
            id="mcp_tools.W003",
        )
    ]


@checks.register(checks.Tags.security)
def check_permission_classes(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    value = getattr(settings, SETTING_NAME, {})
    if not isinstance(value, dict) or value.get("PERMISSION_CLASSES", DEFAULTS["PERMISSION_CLASSES"]) != []:
        return []
    return [
        checks.Warning(
            f"{SETTING_NAME}['PERMISSION_CLASSES'] is empty: every tool is denied to every caller.",
            hint="Remove the setting to use the defaults, or list the permission classes that grant tools.",
            id="mcp_tools.W006",
        )
    ]


@checks.register(checks.Tags.compatibility, deploy=True)
def check_persistent_connections(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The endpoint's database work goes through Channels' ``database_sync_to_async`` behind every door, WSGI
    included, and it closes connections older than CONN_MAX_AGE around each message."""
    if not (getattr(settings, "ASGI_APPLICATION", None) or urlconf_serves_endpoint()):
        return []
    return [
        checks.Warning(
            f"DATABASES[{alias!r}] has CONN_MAX_AGE 0: every MCP message that reads the database opens and "
            "closes a connection.",
            hint="Set CONN_MAX_AGE (for example 60) and, on PostgreSQL, consider CONN_HEALTH_CHECKS = True.",
            obj=alias,
            id="mcp_tools.W007",
        )
        for alias, config in settings.DATABASES.items()
        if not config.get("CONN_MAX_AGE", 0)
    ]


@checks.register(checks.Tags.compatibility, deploy=True)
def check_audit_durability(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    delay = mcp_settings.AUDIT_FLUSH_SECONDS
    if not mcp_settings.AUDIT or not isinstance(delay, int | float) or delay <= 0:
        return []
    return [
        checks.Warning(
            f"MCP_TOOLS['AUDIT_FLUSH_SECONDS'] is {delay:g}: audit rows wait up to that long after their calls are "
            "answered, and those still waiting are lost when a worker process is killed.",
            hint="Leave it None to commit each row before its call is answered.",
            id="mcp_tools.W011",
        )
    ]
