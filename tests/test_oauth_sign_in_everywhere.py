"""A site that requires sign-in for every page (Django's ``LoginRequiredMiddleware``) still lets clients
discover its authorization server, register, get tokens, and lets a signed-out person reach the sign-in page;
the consent page still sends them there."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def login_required(settings: Any) -> None:
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "django.contrib.auth.middleware.LoginRequiredMiddleware"]


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/oauth/login/",
    ],
)
def test_discovery_and_the_sign_in_page_are_open_to_a_stranger(login_required, path):
    response = Client().get(path)

    assert response.status_code == 200, response


@pytest.mark.parametrize("path", ["/oauth/token/", "/oauth/register/", "/oauth/revoke_token/", "/oauth/introspect/"])
def test_the_authorization_servers_endpoints_answer_a_client_rather_than_redirect_it(login_required, path):
    response = Client().post(path, {}, content_type="application/json")

    assert response.status_code in (400, 401, 403, 415), response


def test_the_consent_page_still_sends_a_stranger_to_sign_in(login_required):
    response = Client().get("/oauth/authorize/")

    assert response.status_code == 302
    assert "/login" in response["Location"]
