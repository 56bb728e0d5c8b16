"""The authorization server's refusals: redirect URIs, PKCE, codes, denied consent, CIMD clients it must not fetch."""

from __future__ import annotations

import hashlib
import json
import socket
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from oauth2_provider.models import get_access_token_model, get_application_model, get_grant_model

from tests.cimd_host import MetadataHost, client_metadata, metadata_host
from tests.oauth import (
    AUTHORIZE,
    LOOPBACK,
    REDIRECT,
    RESOURCE,
    Pkce,
    answer,
    application,
    authorize_url,
    code_for,
    query,
    redeem,
)

pytestmark = pytest.mark.django_db

MISMATCHING_REDIRECT = "<strong>invalid_request</strong>: Mismatching redirect URI."
UNKNOWN_CLIENT = "<strong>invalid_request</strong>: Invalid client_id parameter value."
INVALID_GRANT = {"error": "invalid_grant"}
CIMD_MAX_DOCUMENT_SIZE = 16 * 1024  # the toolkit's default, which provider_settings() keeps


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MetadataHost]:
    with metadata_host(tmp_path, monkeypatch) as serving:
        yield serving


@pytest.fixture
def client_id() -> str:
    return str(application("Claude").client_id)


def error_page(response: Any) -> str:
    """The text of an error the user is shown, making sure the browser is sent nowhere."""
    assert response.status_code == 400, response
    assert "Location" not in response
    return str(response.content.decode())


def redirect_to(response: Any) -> str:
    assert response.status_code == 302, response
    return str(response["Location"])


# The code flow ----------------------------------------------------------------------------------------------


def test_a_public_client_with_s256_pkce_gets_a_token_for_this_resource(
    browser: Client, user: Any, client_id: str
) -> None:
    pkce = Pkce()

    response = redeem(Client(), client_id, code_for(browser, client_id, pkce), pkce.verifier)

    body = response.json()
    assert (response.status_code, sorted(body)) == (
        200,
        ["access_token", "expires_in", "refresh_token", "scope", "token_type"],
    )
    assert (body["token_type"], body["scope"], body["expires_in"]) == ("Bearer", "mcp", 3600)
    token = get_access_token_model().objects.get(
        token_checksum=hashlib.sha256(body["access_token"].encode()).hexdigest()
    )
    assert (token.user, token.resource, token.scope) == (user, [RESOURCE], "mcp")


def test_the_code_comes_back_naming_this_server_as_its_issuer(browser: Client, client_id: str) -> None:
    # RFC 9207: a client of several servers can tell whose code it holds (mix-up); it equals the metadata's.
    page = browser.get(authorize_url(client_id, Pkce()))

    issued = query(answer(browser, page, allow=True))

    assert issued["iss"] == ["http://testserver"]
    assert Client().get("/.well-known/oauth-authorization-server").json()["issuer"] == "http://testserver"


def test_denied_consent_sends_access_denied_to_the_client_with_its_state(browser: Client, client_id: str) -> None:
    page = browser.get(authorize_url(client_id, Pkce()))

    response = answer(browser, page, allow=False)

    assert redirect_to(response) == f"{REDIRECT}?error=access_denied&state=st-123"
    assert not get_grant_model().objects.exists()


# Redirect URIs ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "redirect_uri",
    [
        "https://evil.example/callback",
        "https://client.example/callback/more",
        "https://client.example/callback?next=evil",
        "https://client.example:8443/callback",
        "http://client.example/callback",
        "http://127.0.0.1:53219/elsewhere",
        "http://localhost:53219/callback",
    ],
    ids=["host", "path", "query", "port", "scheme", "loopback path", "loopback name"],
)
def test_a_redirect_uri_not_registered_is_an_error_page_and_no_redirect(
    browser: Client, client_id: str, redirect_uri: str
) -> None:
    response = browser.get(authorize_url(client_id, Pkce(), redirect_uri))

    assert MISMATCHING_REDIRECT in error_page(response)


def test_a_loopback_redirect_uri_may_name_any_port(browser: Client, client_id: str) -> None:
    pkce = Pkce()
    redirect_uri = LOOPBACK.replace("127.0.0.1", "127.0.0.1:53219")  # registered without a port

    code = code_for(browser, client_id, pkce, redirect_uri)
    response = redeem(Client(), client_id, code, pkce.verifier, redirect_uri)

    assert response.status_code == 200, response.content


def test_an_unknown_client_is_an_error_page_and_no_redirect(browser: Client) -> None:
    response = browser.get(authorize_url("no-such-client", Pkce()))

    assert UNKNOWN_CLIENT in error_page(response)


# PKCE -------------------------------------------------------------------------------------------------------


def test_an_authorization_request_without_pkce_is_refused(browser: Client, client_id: str) -> None:
    response = browser.get(authorize_url(client_id, None))

    expected = f"{REDIRECT}?error=invalid_request&error_description=Code+challenge+required.&state=st-123"
    assert redirect_to(response) == expected


PLAIN = f"{REDIRECT}?" + urlencode(
    {
        "error": "invalid_request",
        "error_description": 'Unsupported "plain" code_challenge_method; use "S256".',
        "state": "st-123",
    }
)


def test_pkce_plain_is_refused_before_the_user_is_asked(browser: Client, client_id: str) -> None:
    pkce = Pkce()

    response = browser.get(authorize_url(client_id, pkce, code_challenge=pkce.verifier, code_challenge_method="plain"))

    assert redirect_to(response) == PLAIN
    assert not get_grant_model().objects.exists()


def test_pkce_plain_slipped_into_the_consent_form_is_refused_too(browser: Client, client_id: str) -> None:
    pkce = Pkce()
    page = browser.get(authorize_url(client_id, pkce))
    data = {**{k: v for k, v in page.context["form"].initial.items() if v is not None}, "allow": "Authorize"}

    response = browser.post(AUTHORIZE, {**data, "code_challenge": pkce.verifier, "code_challenge_method": "plain"})

    assert redirect_to(response) == PLAIN
    assert not get_grant_model().objects.exists()


def test_a_code_redeemed_with_the_wrong_verifier_is_an_invalid_grant(browser: Client, client_id: str) -> None:
    code = code_for(browser, client_id, Pkce())

    response = redeem(Client(), client_id, code, Pkce().verifier)

    assert (response.status_code, response.json()) == (400, INVALID_GRANT)
    assert not get_access_token_model().objects.exists()


def test_a_code_redeemed_twice_is_an_invalid_grant_the_second_time(browser: Client, client_id: str) -> None:
    pkce = Pkce()
    code = code_for(browser, client_id, pkce)
    first = redeem(Client(), client_id, code, pkce.verifier)
    assert first.status_code == 200, first.content

    again = redeem(Client(), client_id, code, pkce.verifier)

    assert (again.status_code, again.json()) == (400, INVALID_GRANT)
    assert get_access_token_model().objects.count() == 0  # the first exchange's is revoked (test_oauth_hardening)


# CIMD clients the server must not fetch, or must stop fetching -------------------------------------------------


def cimd_document(host: MetadataHost, **extra: Any) -> str:
    path = f"/connectors/{uuid.uuid4().hex}.json"
    client_id = host.url(path)
    host.document(path, client_metadata(client_id, **extra))
    return client_id


def test_a_cimd_client_from_a_host_not_allowed_is_unknown_and_never_fetched(
    browser: Client, host: MetadataHost, settings: Any
) -> None:
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_ALLOWED_HOSTS": ["other.example"]}
    client_id = cimd_document(host)

    response = browser.get(authorize_url(client_id, Pkce()))

    assert UNKNOWN_CLIENT in error_page(response)
    assert (host.requests, get_application_model().objects.count()) == ([], 0)


def test_a_cimd_client_on_a_private_address_is_unknown_and_never_connected_to(browser: Client, settings: Any) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    # The host is allowed, so only the address check stands between the request and this socket; the short
    # timeout bounds the test if it ever gives way.
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "CIMD_ALLOWED_HOSTS": ["127.0.0.1"],
        "CIMD_FETCH_TIMEOUT_SECONDS": 1,
    }
    client_id = f"https://127.0.0.1:{port}/connectors/{uuid.uuid4().hex}.json"

    with listener:
        response = browser.get(authorize_url(client_id, Pkce(), "https://client.example/callback"))
        with pytest.raises(BlockingIOError):
            listener.accept()

    assert UNKNOWN_CLIENT in error_page(response)


def padded(host: MetadataHost, size: int) -> str:
    """Serve a valid document of exactly ``size`` bytes; return its client_id."""
    path = f"/connectors/{uuid.uuid4().hex}.json"
    document = client_metadata(host.url(path), client_uri="https://client.example/")
    document["client_uri"] += "x" * (size - len(json.dumps(document)))
    assert len(json.dumps(document).encode()) == size
    host.document(path, document)
    return host.url(path)


def test_a_cimd_document_over_the_size_limit_is_refused(browser: Client, host: MetadataHost) -> None:
    client_id = padded(host, CIMD_MAX_DOCUMENT_SIZE + 1)

    response = browser.get(authorize_url(client_id, Pkce()))

    assert UNKNOWN_CLIENT in error_page(response)
    assert (len(host.requests), get_application_model().objects.count()) == (1, 0)


def test_a_cimd_document_at_the_size_limit_is_accepted(browser: Client, host: MetadataHost) -> None:
    client_id = padded(host, CIMD_MAX_DOCUMENT_SIZE)

    response = browser.get(authorize_url(client_id, Pkce()))

    assert (response.status_code, response.context["client"].verified_host) == (200, "client.example")


def test_a_slow_cimd_document_is_given_up_on_after_the_fetch_timeout(
    browser: Client, host: MetadataHost, settings: Any
) -> None:
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_FETCH_TIMEOUT_SECONDS": 0.5}
    path = f"/connectors/{uuid.uuid4().hex}.json"
    body = json.dumps(client_metadata(host.url(path))).encode()
    finished: list[str] = []

    def drip(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body[:10])
        handler.wfile.flush()
        host.release.wait(10)  # held until the test ends
        finished.append(path)

    host.routes[path] = drip

    response = browser.get(authorize_url(host.url(path), Pkce()))

    assert UNKNOWN_CLIENT in error_page(response)
    assert (host.requests, finished, get_application_model().objects.count()) == ([path], [], 0)
