"""Dynamic client registration is open to any client, so every part of it a client controls is capped."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from oauth2_provider.models import get_application_model

pytestmark = pytest.mark.django_db

REGISTER = "/oauth/register/"


def document(**fields: Any) -> dict[str, Any]:
    return {
        "client_name": "Desk",
        "redirect_uris": ["http://127.0.0.1/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **fields,
    }


def register(body: Any, address: str = "192.0.2.1") -> Any:
    # As a real client: no cookies, and CSRF enforced as it is outside tests.
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    client = Client(enforce_csrf_checks=True)
    return client.post(REGISTER, data=payload, content_type="application/json", REMOTE_ADDR=address)


@pytest.fixture(autouse=True)
def fresh_rate_limits() -> Any:
    cache.clear()
    yield
    cache.clear()


def test_a_public_client_registers_without_credentials() -> None:
    reply = register(document())

    assert reply.status_code == 201
    body = reply.json()
    assert (body["redirect_uris"], body["token_endpoint_auth_method"]) == (["http://127.0.0.1/callback"], "none")
    application = get_application_model().objects.get(client_id=body["client_id"])
    assert (application.registration_source, application.client_type) == ("dcr", "public")


def test_more_redirect_uris_than_the_cap_are_refused_and_nothing_is_stored() -> None:
    uris = [f"http://127.0.0.1/callback/{n}" for n in range(11)]

    reply = register(document(redirect_uris=uris))

    assert (reply.status_code, reply.json()["error"]) == (400, "invalid_client_metadata")
    assert reply.json()["error_description"] == "At most 10 redirect URIs may be registered."
    assert not get_application_model().objects.exists()


def test_an_oversize_document_is_refused_before_it_is_read() -> None:
    reply = register(document(client_name="x" * 17_000))

    assert reply.status_code == 400
    assert reply.json() == {
        "error": "invalid_client_metadata",
        "error_description": "The registration document exceeds 16384 bytes.",
    }
    assert not get_application_model().objects.exists()


def test_registrations_from_one_address_are_rate_limited_and_others_go_on(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "OAUTH_REGISTRATION_RATE": "2/h"}

    statuses = [register(document()).status_code for _ in range(3)]
    elsewhere = register(document(), address="198.51.100.7")

    assert statuses == [201, 201, 429]
    assert elsewhere.status_code == 201
    assert get_application_model().objects.count() == 3


@pytest.mark.parametrize(
    "uri",
    ["javascript:alert(1)", "http://127.0.0.1/callback#fragment", "not a uri"],
    ids=["javascript", "fragment", "garbage"],
)
def test_a_redirect_uri_no_client_could_safely_use_is_refused(uri: str) -> None:
    reply = register(document(redirect_uris=[uri]))

    assert (reply.status_code, reply.json()["error"]) in {
        (400, "invalid_redirect_uri"),
        (400, "invalid_client_metadata"),
    }
    assert not get_application_model().objects.exists()


@pytest.fixture
def unreachable_cache(settings: Any) -> None:
    # Nothing listens on port 1 of the loopback: a connection is refused at once.
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }


def test_while_the_rate_limit_cache_is_down_registration_is_refused_with_a_retry_delay(unreachable_cache: None):
    reply = register(document())

    assert (reply.status_code, reply.headers["Retry-After"], reply.json()) == (
        503,
        "5",
        {
            "error": "temporarily_unavailable",
            "error_description": "Registration is temporarily unavailable; try again later.",
        },
    )
    assert not get_application_model().objects.exists()


def test_while_the_rate_limit_cache_is_down_registration_goes_on_when_rate_limits_fail_open(
    unreachable_cache: None, settings: Any
):
    settings.RATELIMIT_FAIL_OPEN = True

    reply = register(document())

    assert reply.status_code == 201
