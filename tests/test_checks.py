"""System checks mcp_tools.E0xx / W0xx, compared whole with what run_checks() reports."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import checks
from django.core.management import call_command

from mcp_tools.conf import DEFAULTS
from mcp_tools.models import ModelQuery, Tool
from tests import endpoint_routes
from tests.system_checks import mcp_checks

VALID_KEYS = ", ".join(sorted(DEFAULTS))
CHANNELS_SITE = "tests.endpoint_routes.channels_site"


def serve_through(settings: Any, urlconf: type, asgi_application: str | None) -> None:
    """The site's URLconf, and its Channels application (none: a site without ASGI_APPLICATION)."""
    settings.ROOT_URLCONF = urlconf
    if asgi_application is None:
        del settings.ASGI_APPLICATION
    else:
        settings.ASGI_APPLICATION = asgi_application


NO_LAYER = checks.Warning(
    "No channel layer is configured: changes reach sessions only when each process reads the change "
    "counters (every POLL_SECONDS), even changes made in that same process.",
    hint="Set CHANNEL_LAYERS (channels_redis in production, InMemoryChannelLayer for one process).",
    id="mcp_tools.W001",
)


def not_seconds(name: str) -> checks.Error:
    return checks.Error(
        f"MCP_TOOLS[{name!r}] must be a positive number of seconds.",
        hint=f"Default: {DEFAULTS[name]}.",
        id="mcp_tools.E008",
    )


def not_positive(name: str) -> checks.Error:
    return checks.Error(
        f"MCP_TOOLS[{name!r}] must be a positive integer.",
        hint=f"Default: {DEFAULTS[name]}.",
        id="mcp_tools.E004",
    )


ORIGIN_HINT = 'Write "*" or a full origin, scheme://host[:port]: "https://app.example.com", "https://*.example.com".'


def not_an_origin(entry: str) -> checks.Error:
    return checks.Error(
        f"MCP_TOOLS['ALLOWED_ORIGINS'] entry {entry!r} is not an origin.", hint=ORIGIN_HINT, id="mcp_tools.E006"
    )


def not_a_rate(name: str) -> checks.Error:
    return checks.Error(
        f'MCP_TOOLS[{name!r}] must be a rate such as "30/m", or None.',
        hint='Calls per period: "30/m", "1000/h", "10/5s".',
        id="mcp_tools.E007",
    )


CASES: list[tuple[str, dict[str, Any], list[checks.CheckMessage]]] = [
    ("valid settings", {}, []),
    ("every key set", {"MCP_TOOLS": dict(DEFAULTS)}, []),
    ("no MCP_TOOLS at all", {"MCP_TOOLS": None}, []),
    (
        "MCP_TOOLS not a dict",
        {"MCP_TOOLS": [("PAGE_SIZE", 5)]},
        [
            checks.Error(
                "MCP_TOOLS must be a dict.",
                hint="Set MCP_TOOLS = {...} in your settings.",
                id="mcp_tools.E001",
            )
        ],
    ),
    (
        "unknown keys",
        {"MCP_TOOLS": {"PAGESIZE": 5, "ALLOW_ANONYMUS": True}},
        [
            checks.Error(
                "Unknown MCP_TOOLS key 'ALLOW_ANONYMUS'.",
                hint=f"Valid keys: {VALID_KEYS}.",
                id="mcp_tools.E002",
            ),
            checks.Error("Unknown MCP_TOOLS key 'PAGESIZE'.", hint=f"Valid keys: {VALID_KEYS}.", id="mcp_tools.E002"),
        ],
    ),
    ("tokens that never expire by default", {"MCP_TOOLS": {"TOKEN_LIFETIME_DAYS": None}}, []),
    (
        "a token lifetime of no days",
        {"MCP_TOOLS": {"TOKEN_LIFETIME_DAYS": 0}},
        [
            checks.Error(
                "MCP_TOOLS['TOKEN_LIFETIME_DAYS'] must be a positive integer.", hint="Default: 90.", id="mcp_tools.E004"
            )
        ],
    ),
    (
        "permission class that cannot be imported",
        {"MCP_TOOLS": {"PERMISSION_CLASSES": ["mcp_tools.access.permissions.IsStaff"]}},
        [
            checks.Error(
                "MCP_TOOLS['PERMISSION_CLASSES'] names 'mcp_tools.access.permissions.IsStaff', "
                "which cannot be imported: "
                'Module "mcp_tools.access.permissions" does not define a "IsStaff" attribute/class',
                hint="Check the dotted path of the class.",
                id="mcp_tools.E003",
            )
        ],
    ),
    (
        "permission classes not a list",
        {"MCP_TOOLS": {"PERMISSION_CLASSES": "mcp_tools.access.permissions.AllowAny"}},
        [checks.Error("MCP_TOOLS['PERMISSION_CLASSES'] must be a list of dotted paths.", id="mcp_tools.E003")],
    ),
    ("PAGE_SIZE 0", {"MCP_TOOLS": {"PAGE_SIZE": 0}}, [not_positive("PAGE_SIZE")]),
    (
        "thread and per-user limits that are not positive",
        {"MCP_TOOLS": {"MAX_CALLS_PER_USER": 0, "TOOL_THREADS": "8", "USER_THREADS": 0}},
        [not_positive("MAX_CALLS_PER_USER"), not_positive("TOOL_THREADS"), not_positive("USER_THREADS")],
    ),
    ("user threads derived", {"MCP_TOOLS": {"TOOL_THREADS": 4, "USER_THREADS": None}}, []),
    (
        "freshness seconds that are not positive numbers",
        {"MCP_TOOLS": {"FRESHNESS_SECONDS": 0, "POLL_SECONDS": "1", "SAFETY_POLL_SECONDS": True}},
        [not_seconds("FRESHNESS_SECONDS"), not_seconds("POLL_SECONDS"), not_seconds("SAFETY_POLL_SECONDS")],
    ),
    ("freshness seconds as numbers", {"MCP_TOOLS": {"FRESHNESS_SECONDS": 2, "POLL_SECONDS": 0.5}}, []),
    (
        "calls-in-flight seconds that are not positive numbers",
        {"MCP_TOOLS": {"RUNNING_CALLS_VISIBLE_SECONDS": 0, "RUNNING_CALLS_STALE_SECONDS": "60"}},
        [not_seconds("RUNNING_CALLS_STALE_SECONDS"), not_seconds("RUNNING_CALLS_VISIBLE_SECONDS")],
    ),
    ("calls in flight never shown", {"MCP_TOOLS": {"RUNNING_CALLS_VISIBLE_SECONDS": None}}, []),
    (
        "limits of the wrong type",
        {"MCP_TOOLS": {"MAX_DEPTH": "32", "MAX_MESSAGE_BYTES": True, "PAGE_SIZE": -1}},
        [not_positive("MAX_DEPTH"), not_positive("MAX_MESSAGE_BYTES"), not_positive("PAGE_SIZE")],
    ),
    (
        "channel layer alias missing",
        {"MCP_TOOLS": {"CHANNEL_LAYER": "events"}},
        [
            checks.Error(
                "MCP_TOOLS['CHANNEL_LAYER'] names 'events', which CHANNEL_LAYERS does not define.",
                hint="Add 'events' to CHANNEL_LAYERS or remove the setting.",
                id="mcp_tools.E005",
            )
        ],
    ),
    (
        "channel layer alias present",
        {
            "MCP_TOOLS": {"CHANNEL_LAYER": "events"},
            "CHANNEL_LAYERS": {"events": {"BACKEND": "channels.layers.InMemoryChannelLayer"}},
        },
        [],
    ),
    (
        "allowed origins that are not origins",
        {
            "MCP_TOOLS": {
                "ALLOWED_ORIGINS": ["*", "https://app.example", "https://*.example.com", "app.example", "null"]
            }
        },
        [not_an_origin("app.example"), not_an_origin("null")],
    ),
    (
        "allowed origins not a list",
        {"MCP_TOOLS": {"ALLOWED_ORIGINS": "https://app.example"}},
        [checks.Error("MCP_TOOLS['ALLOWED_ORIGINS'] must be a list.", hint=ORIGIN_HINT, id="mcp_tools.E006")],
    ),
    ("rates set and unset", {"MCP_TOOLS": {"DEFAULT_RATE": "10/5s", "DENIED_RATE": None}}, []),
    (
        "rates that are not rates",
        {"MCP_TOOLS": {"DEFAULT_RATE": "30 per minute", "DENIED_RATE": 30, "OAUTH_REGISTRATION_RATE": "often"}},
        [not_a_rate("DEFAULT_RATE"), not_a_rate("DENIED_RATE"), not_a_rate("OAUTH_REGISTRATION_RATE")],
    ),
    ("CHANNEL_LAYERS empty", {"CHANNEL_LAYERS": {}}, [NO_LAYER]),
    ("CHANNEL_LAYERS absent", {"CHANNEL_LAYERS": None}, [NO_LAYER]),
    # Served through mcp_tools.urls alone (WSGI): no stream is held, so there is no push for a layer to carry.
    ("no channel layer and no ASGI_APPLICATION", {"CHANNEL_LAYERS": None, "ASGI_APPLICATION": None}, []),
    (
        "a missing alias without ASGI_APPLICATION",
        {"MCP_TOOLS": {"CHANNEL_LAYER": "events"}, "ASGI_APPLICATION": None},
        [
            checks.Error(
                "MCP_TOOLS['CHANNEL_LAYER'] names 'events', which CHANNEL_LAYERS does not define.",
                hint="Add 'events' to CHANNEL_LAYERS or remove the setting.",
                id="mcp_tools.E005",
            )
        ],
    ),
    (
        "several problems at once",
        {"MCP_TOOLS": {"PAGE_SIZE": 0, "COLOUR": "blue"}, "CHANNEL_LAYERS": {}},
        [
            checks.Error("Unknown MCP_TOOLS key 'COLOUR'.", hint=f"Valid keys: {VALID_KEYS}.", id="mcp_tools.E002"),
            not_positive("PAGE_SIZE"),
            NO_LAYER,
        ],
    ),
]


@pytest.mark.parametrize(("overrides", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_run_checks_reports_exactly_the_expected_messages(settings, overrides, expected):
    for name, value in overrides.items():
        if value is None:
            delattr(settings, name)
        else:
            setattr(settings, name, value)

    assert mcp_checks() == expected


@pytest.mark.django_db
def test_a_tool_naming_an_unregistered_callable_is_a_database_warning(tools):
    Tool.objects.create(name="orphan", callable_name="gone")

    assert mcp_checks() == []
    assert mcp_checks(databases=["default"]) == [
        checks.Warning(
            "Tool 'orphan' runs 'gone', which no installed app registers.",
            hint="Register it with @tool in an app's mcp_tools.py, or edit or delete the tool.",
            obj="orphan",
            id="mcp_tools.W002",
        )
    ]


@pytest.mark.django_db
def test_model_query_tools_are_not_checked_for_callables():
    Tool.objects.create(name="orders", kind=Tool.Kind.MODEL_QUERY)

    assert mcp_checks(databases=["default"]) == []


def saved_query(name: str, model: str, **options: Any) -> None:
    """A model query saved as an older version or a script could have saved it: without clean() or build()."""
    tool = Tool.objects.create(name=name, kind=Tool.Kind.MODEL_QUERY)
    ModelQuery.objects.bulk_create([ModelQuery(tool=tool, model=model, **options)])


def exposure_warning(tool: str, label: str) -> checks.Warning:
    return checks.Warning(
        f"Tool {tool!r} reaches {label}, which model-query tools may not expose: the tool is hidden from every caller.",
        hint=(
            "Edit or delete the tool. To expose a model excluded by default on purpose, name it in "
            "MCP_TOOLS['EXPOSED_MODELS']."
        ),
        obj=tool,
        id="mcp_tools.W004",
    )


def secret_warning(tool: str, path: str, where: str) -> checks.Warning:
    return checks.Warning(
        f"Tool {tool!r} names {path!r} in its {where}, which looks like a secret: the tool is hidden from every "
        "caller.",
        hint="Remove the field from the tool's model query in the admin, or delete the tool.",
        obj=tool,
        id="mcp_tools.W005",
    )


@pytest.mark.django_db
def test_saved_tools_reaching_excluded_models_or_secret_fields_are_database_warnings():
    saved_query("history", "admin.LogEntry", output_fields=["id", "content_type__model"], relations=["content_type"])
    saved_query(
        "keys",
        "testapp.Account",
        output_fields=["name", "api_key"],
        ordering_fields=["api_key"],
        relations=["manager"],
        filters=["manager__password__startswith"],
        scope_field="manager",
    )
    saved_query("licences", "testapp.Integration", output_fields=["licence__name"], relations=["licence"])
    saved_query("lookups", "testapp.Account", operation="get", output_fields=["name"], lookup_field="api_key")
    saved_query("items", "testapp.Item", output_fields=["id", "account__name"], relations=["account"])

    assert mcp_checks() == []
    assert mcp_checks(databases=["default"]) == sorted(
        [
            exposure_warning("history", "admin.LogEntry"),
            exposure_warning("history", "contenttypes.ContentType"),
            secret_warning("keys", "api_key", "output fields"),
            secret_warning("keys", "manager__password", "filters"),
            secret_warning("keys", "api_key", "ordering fields"),
            secret_warning("licences", "licence", "output fields"),
            secret_warning("licences", "licence", "relations"),
            secret_warning("lookups", "api_key", "lookup field"),
        ],
        key=lambda m: (m.id, m.msg),
    )


@pytest.mark.django_db
def test_an_exposed_model_opted_back_in_is_no_warning(settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "EXPOSED_MODELS": ["admin.LogEntry"]}
    saved_query("history", "admin.LogEntry", output_fields=["id", "action_time"])

    assert mcp_checks(databases=["default"]) == []


@pytest.mark.django_db
def test_manage_py_check_runs_the_database_checks_only_when_asked(capsys):
    saved_query("history", "admin.LogEntry", output_fields=["id"])

    call_command("check")
    plain = capsys.readouterr()
    call_command("check", "--database", "default")
    with_database = capsys.readouterr()

    assert "mcp_tools.W004" not in plain.out + plain.err
    assert "history: (mcp_tools.W004) Tool 'history' reaches admin.LogEntry" in with_database.err


def test_empty_permission_classes_are_a_warning_that_every_tool_is_denied(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PERMISSION_CLASSES": []}
    assert [m for m in mcp_checks() if m.id == "mcp_tools.W006"] == [
        checks.Warning(
            "MCP_TOOLS['PERMISSION_CLASSES'] is empty: every tool is denied to every caller.",
            hint="Remove the setting to use the defaults, or list the permission classes that grant tools.",
            id="mcp_tools.W006",
        )
    ]


@pytest.mark.parametrize(
    ("urlconf", "asgi_application"),
    [
        (endpoint_routes.Included, None),
        (endpoint_routes.WithoutInclude, CHANNELS_SITE),
        (endpoint_routes.Included, CHANNELS_SITE),
    ],
    ids=["WSGI", "Channels", "both"],
)
def test_a_database_without_persistent_connections_where_mcp_is_served_is_a_deployment_warning(
    settings: Any, monkeypatch: pytest.MonkeyPatch, urlconf: type, asgi_application: str | None
) -> None:
    serve_through(settings, urlconf, asgi_application)
    # Edited in place: overriding DATABASES itself would warn that connections do not follow.
    monkeypatch.setitem(settings.DATABASES["default"], "CONN_MAX_AGE", 0)
    warning = checks.Warning(
        "DATABASES['default'] has CONN_MAX_AGE 0: every MCP message that reads the database opens and closes a "
        "connection.",
        hint="Set CONN_MAX_AGE (for example 60) and, on PostgreSQL, consider CONN_HEALTH_CHECKS = True.",
        obj="default",
        id="mcp_tools.W007",
    )
    assert [m for m in mcp_checks(include_deployment_checks=True) if m.id == "mcp_tools.W007"] == [warning]
    assert [m for m in mcp_checks() if m.id == "mcp_tools.W007"] == []
    monkeypatch.setitem(settings.DATABASES["default"], "CONN_MAX_AGE", 60)
    assert [m for m in mcp_checks(include_deployment_checks=True) if m.id == "mcp_tools.W007"] == []


def test_audit_rows_batched_behind_the_answers_are_a_deployment_warning(settings) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_SECONDS": 0.5}
    warning = checks.Warning(
        "MCP_TOOLS['AUDIT_FLUSH_SECONDS'] is 0.5: audit rows wait up to that long after their calls are answered, "
        "and those still waiting are lost when a worker process is killed.",
        hint="Leave it None to commit each row before its call is answered.",
        id="mcp_tools.W011",
    )
    assert [m for m in mcp_checks(include_deployment_checks=True) if m.id == "mcp_tools.W011"] == [warning]
    assert [m for m in mcp_checks() if m.id == "mcp_tools.W011"] == []

    for quiet in (
        {"AUDIT_FLUSH_SECONDS": None},
        {"AUDIT_FLUSH_SECONDS": 0},
        {"AUDIT_FLUSH_SECONDS": 0.5, "AUDIT": False},
    ):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, **quiet}
        assert [m for m in mcp_checks(include_deployment_checks=True) if m.id == "mcp_tools.W011"] == []


NO_ENDPOINT = "mcp_tools.W013"
WSGI_RUNSERVER = "runserver is Django's WSGI server here, which serves no Channels route, and "


def no_endpoint(where: str = "") -> checks.Warning:
    return checks.Warning(
        f"The site serves no MCP endpoint over HTTP: {where}no URL pattern routes /mcp to mcp_tools, so /mcp and "
        "/mcp/health answer 404.",
        hint='Add path("", include("mcp_tools.urls")) to the urlpatterns of ROOT_URLCONF: it serves /mcp under '
        "WSGI (gunicorn, runserver) and ASGI alike.",
        id=NO_ENDPOINT,
    )


ENDPOINT_CASES: list[tuple[str, type, str | None, str, list[checks.CheckMessage]]] = [
    ("the include, on a WSGI site", endpoint_routes.Included, None, "check", []),
    ("the include, under Django's runserver", endpoint_routes.Included, None, "runserver", []),
    ("the include under a prefix", endpoint_routes.IncludedUnderAPrefix, None, "migrate", []),
    ("the include and Channels routes", endpoint_routes.Included, CHANNELS_SITE, "runserver", []),
    ("neither", endpoint_routes.WithoutInclude, None, "check", [no_endpoint()]),
    ("neither, under Django's runserver", endpoint_routes.WithoutInclude, None, "runserver", [no_endpoint()]),
    (
        "a view before the include that takes /mcp",
        endpoint_routes.ShadowedByAnEarlierView,
        None,
        "check",
        [no_endpoint()],
    ),
    ("Channels routes alone", endpoint_routes.WithoutInclude, CHANNELS_SITE, "check", []),
    (
        "Channels routes alone, under Django's runserver",
        endpoint_routes.WithoutInclude,
        CHANNELS_SITE,
        "runserver",
        [no_endpoint(WSGI_RUNSERVER)],
    ),
    (
        "Channels routes for the WebSocket only",
        endpoint_routes.WithoutInclude,
        "tests.endpoint_routes.websocket_only_site",
        "check",
        [no_endpoint()],
    ),
    (
        "an ASGI_APPLICATION that cannot be imported",
        endpoint_routes.WithoutInclude,
        "tests.endpoint_routes.nothing_here",
        "check",
        [no_endpoint()],
    ),
]


@pytest.mark.parametrize(
    ("urlconf", "asgi_application", "command", "expected"),
    [c[1:] for c in ENDPOINT_CASES],
    ids=[c[0] for c in ENDPOINT_CASES],
)
def test_a_site_that_serves_no_endpoint_is_warned_about(
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    urlconf: type,
    asgi_application: str | None,
    command: str,
    expected: list,
) -> None:
    serve_through(settings, urlconf, asgi_application)
    # Django's runserver here: daphne is not installed as an app of the test settings.
    monkeypatch.setattr("sys.argv", ["manage.py", command])

    assert [m for m in mcp_checks() if m.id == NO_ENDPOINT] == expected


def test_the_test_sites_own_urlconf_serves_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.argv", ["manage.py", "runserver"])

    assert [m for m in mcp_checks() if m.id == NO_ENDPOINT] == []


def test_a_site_that_serves_no_endpoint_is_not_warned_about_its_connections(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve_through(settings, endpoint_routes.WithoutInclude, None)
    monkeypatch.setitem(settings.DATABASES["default"], "CONN_MAX_AGE", 0)

    assert [m for m in mcp_checks(include_deployment_checks=True) if m.id == "mcp_tools.W007"] == []
