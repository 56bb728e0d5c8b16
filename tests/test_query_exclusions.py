"""Models that model-query tools may not expose by default, and the settings that add to or lift the defaults."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import models
from django.test.utils import isolate_apps

from mcp_tools.models import ModelQuery, Tool
from mcp_tools.tools.executors.queries.fields import excluded, relation_paths
from tests.testapp.models import Account, ApiToken, Integration, Licence

EXCLUDED_BY_DEFAULT = [
    "admin.LogEntry",
    "auth.Permission",
    "contenttypes.ContentType",
    "sessions.Session",
    "authtoken.Token",
    "authtoken.TokenProxy",
    "mcp_tools.AccessToken",
    "mcp_tools.ClientSession",
    "mcp_tools.Tool",
    "mcp_tools.ModelQuery",
    "mcp_tools.ToolCall",
    "testapp.ApiToken",
    "testapp.Licence",
]


def refusal(model: str, **options: Any) -> list[str]:
    config = ModelQuery(tool=Tool(name="probe"), model=model, **{"output_fields": ["id"], **options})
    with pytest.raises(ValidationError) as raised:
        config.clean()
    return list(raised.value.message_dict["__all__"])


@pytest.mark.parametrize("label", EXCLUDED_BY_DEFAULT)
def test_security_state_and_secret_stores_are_excluded_by_default(label: str) -> None:
    assert refusal(label) == [f"The model {label!r} may not be exposed."]


def test_business_models_are_not_excluded() -> None:
    from django.contrib.auth.models import Group, User

    assert [excluded(model) for model in (Account, Integration, User, Group)] == [False, False, False, False]


@isolate_apps("tests.testapp")
@pytest.mark.parametrize(
    ("app_label", "name"),
    [
        ("oauth2_provider", "Application"),
        ("knox", "AuthToken"),
        ("otp_totp", "TOTPDevice"),
        ("otp_static", "StaticDevice"),
        ("social_django", "UserSocialAuth"),
        ("axes", "AccessAttempt"),
        ("token_blacklist", "OutstandingToken"),
        ("socialaccount", "SocialApp"),
        ("shop", "UserCredential"),
        ("shop", "ApiToken"),
        ("shop", "SigningKey"),
    ],
)
def test_token_and_security_apps_of_any_installed_package_and_secret_named_models_are_excluded(
    app_label: str, name: str
) -> None:
    model = type(name, (models.Model,), {"__module__": __name__, "Meta": type("Meta", (), {"app_label": app_label})})

    assert excluded(model)


def test_a_model_whose_primary_key_is_secret_is_excluded() -> None:
    assert excluded(Licence)


def test_exposed_models_opts_a_model_back_in_by_name(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "EXPOSED_MODELS": ["admin.LogEntry"]}

    config = ModelQuery(tool=Tool(name="log"), model="admin.LogEntry", output_fields=["id", "action_time"])
    config.clean()

    assert refusal("auth.Permission") == ["The model 'auth.Permission' may not be exposed."]


def test_a_relation_to_an_excluded_model_cannot_be_followed(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "EXPOSED_MODELS": ["admin.LogEntry"]}

    from django.contrib.admin.models import LogEntry

    assert relation_paths(LogEntry) == ["user"]
    assert refusal("admin.LogEntry", relations=["content_type"]) == [
        "The relation 'content_type' leads to a model that may not be exposed."
    ]


def test_excluded_models_wins_over_exposed_models(settings: Any) -> None:
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "EXPOSED_MODELS": ["admin.LogEntry", "testapp.Account"],
        "EXCLUDED_MODELS": ["admin.logentry", "testapp.account"],
    }

    assert refusal("admin.LogEntry") == ["The model 'admin.LogEntry' may not be exposed."]
    assert refusal("testapp.Account") == ["The model 'testapp.Account' may not be exposed."]


def test_an_excluded_secret_store_stays_unreachable_through_relations() -> None:
    assert refusal("testapp.Integration", output_fields=["licence__name"], relations=["licence"]) == [
        "testapp.Integration has no field 'licence' that may be exposed."
    ]
    assert ApiToken._meta.get_field("account").related_model is Account


def test_a_model_opted_back_in_still_cannot_be_looked_up_by_a_secret_primary_key(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "EXPOSED_MODELS": ["testapp.Licence"]}

    ModelQuery(tool=Tool(name="licences"), model="testapp.Licence", output_fields=["name"]).clean()

    assert refusal("testapp.Licence", operation="get", output_fields=["name"]) == [
        "testapp.Licence has no field 'key' that may be exposed."
    ]
