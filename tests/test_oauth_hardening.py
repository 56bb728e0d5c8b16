"""Attacks on the authorization server and on the resource it guards, each with its exact refusal.

A Host naming another port of this host; tokens asked for resources this site does not serve; a code
redeemed twice; a deactivated user's code and refresh token; redirect URIs with userinfo; introspection by
clients nobody named. Driven through Django's test client where a view alone decides, and through the MCP
endpoint's doors (both HTTP generations and the WebSocket handshake) where the resource is read.
"""

from __future__ import annotations

import hashlib
import io
import json
import uuid
from base64 import b64encode
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)

from mcp_tools.oauth.models import RedeemedCode
from mcp_tools.oauth.resources import NOT_SERVED
from mcp_tools.oauth.tokens import NOT_FOR_THIS_RESOURCE
from tests.challenges import refused_token
from tests.cimd_host import MetadataHost, client_metadata, metadata_host
from tests.db import db_call
from tests.doors import Answer, every_door, modern_http, websocket
from tests.oauth import AUTHORIZE, REDIRECT, REGISTER, RESOURCE, TOKEN, Pkce, answer, application, query
from tests.oauth_clients import access_token
from tests.system_checks import mcp_checks

pytestmark = pytest.mark.django_db

OTHER_PORT = "http://testserver:9999/mcp"
ELSEWHERE = "https://elsewhere.example/mcp"
LISTED = "https://api.example.com/mcp"
INVALID_GRANT = {"error": "invalid_grant"}
NOT_SERVED_ANSWER = {"error": "invalid_target", "error_description": NOT_SERVED}
# A Host naming no resource of ours: refused without pointing at any metadata (it would be another server's).
NO_RESOURCE_CHALLENGE = (
    'Bearer realm="mcp", error="invalid_token", error_description="The access token is invalid or expired."'
)


def checksum(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def authorization_url(client_id: str, pkce: Pkce, *resources: str, **extra: str) -> str:
    """An authorization request naming ``resources`` (none: no ``resource`` parameter at all)."""
    params = [
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("scope", "mcp"),
        ("state", "st-123"),
        ("code_challenge", pkce.challenge),
        ("code_challenge_method", "S256"),
        *(("resource", resource) for resource in resources),
        *extra.items(),
    ]
    return f"{AUTHORIZE}?{urlencode(params)}"


def consented_code(browser: Client, client_id: str, pkce: Pkce, *resources: str) -> str:
    page = browser.get(authorization_url(client_id, pkce, *resources))
    assert page.status_code == 200, page.content
    response = answer(browser, page, allow=True)
    assert response.status_code == 302, response
    return str(query(response)["code"][0])


def token_request(client_id: str, *resources: str, **data: str) -> Any:
    """A public client's token request naming ``resources`` (none: no ``resource`` parameter)."""
    body = [("client_id", client_id), *data.items(), *(("resource", resource) for resource in resources)]
    return Client().post(TOKEN, urlencode(body), content_type="application/x-www-form-urlencoded")


def redeem(client_id: str, code: str, pkce: Pkce, *resources: str) -> Any:
    return token_request(
        client_id,
        *resources,
        grant_type="authorization_code",
        code=code,
        redirect_uri=REDIRECT,
        code_verifier=pkce.verifier,
    )


def refresh(client_id: str, refresh_token: str, *resources: str) -> Any:
    return token_request(client_id, *resources, grant_type="refresh_token", refresh_token=refresh_token)


def issued(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.content
    return dict(response.json())


def access_row(raw: str) -> Any:
    return get_access_token_model().objects.filter(token_checksum=checksum(raw)).first()


def refused_with(error: str, description: str) -> str:
    return f"{REDIRECT}?" + urlencode({"error": error, "error_description": description, "state": "st-123"})


@pytest.fixture
def client_id() -> str:
    return str(application("Claude").client_id)


@pytest.fixture
def listed(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "OAUTH_RESOURCES": [LISTED]}


# 1. The resource is the one the server publishes, whatever port the Host header names ----------------


@pytest.fixture(params=every_door())
def door(request: pytest.FixtureRequest) -> Any:
    return request.param


@pytest.mark.django_db(transaction=True)
async def test_a_token_for_another_port_is_refused_when_the_host_header_names_that_port(door, user, tools):
    raw = await db_call(access_token, user, resource=[OTHER_PORT])

    answer_: Answer = await door(f"Bearer {raw}", host="testserver:9999")

    assert (answer_.status, answer_.challenge, answer_.message) == (
        401,
        NO_RESOURCE_CHALLENGE,
        "The access token is invalid or expired.",
    )


@pytest.mark.django_db(transaction=True)
async def test_a_host_header_naming_the_default_port_is_this_resource(door, user, tools):
    raw = await db_call(access_token, user, resource=[RESOURCE])

    answer_: Answer = await door(f"Bearer {raw}", host="testserver:80")

    assert (answer_.status, answer_.challenge) == (101 if door is websocket else 200, None)


def test_metadata_for_a_host_header_naming_another_port_is_400(client: Client) -> None:
    response = client.get("/.well-known/oauth-protected-resource/mcp", HTTP_HOST="testserver:9999")

    assert (response.status_code, response.json()) == (
        400,
        {"error": "invalid_request", "error_description": "Unknown host."},
    )


@pytest.mark.parametrize(
    "reached",
    [{"SERVER_PORT": "9999"}, {"HTTP_X_FORWARDED_PORT": "9999"}],
    ids=["the-port-reached", "the-port-a-trusted-proxy-forwards"],
)
def test_metadata_for_a_host_header_naming_the_port_reached_names_that_port(
    client: Client, settings: Any, reached: dict[str, str]
) -> None:
    settings.USE_X_FORWARDED_PORT = True

    response = client.get("/.well-known/oauth-protected-resource/mcp", HTTP_HOST="testserver:9999", **reached)

    assert (response.status_code, response.json()["resource"]) == (200, OTHER_PORT)


def test_a_forwarded_port_is_not_believed_unless_the_site_says_so(client: Client) -> None:
    response = client.get(
        "/.well-known/oauth-protected-resource/mcp", HTTP_HOST="testserver:9999", HTTP_X_FORWARDED_PORT="9999"
    )

    assert response.status_code == 400


def test_with_resource_url_set_any_host_header_gets_its_metadata(client: Client, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "RESOURCE_URL": "https://mcp.example.com/mcp"}

    response = client.get("/.well-known/oauth-protected-resource/mcp", HTTP_HOST="testserver:9999")

    assert (response.status_code, response.json()["resource"]) == (200, "https://mcp.example.com/mcp")


def test_an_authorization_asked_through_another_port_names_no_resource_of_ours(browser: Client, client_id: str) -> None:
    response = browser.get(authorization_url(client_id, Pkce(), OTHER_PORT), HTTP_HOST="testserver:9999")

    assert (response.status_code, response["Location"]) == (
        302,
        refused_with("invalid_target", NOT_SERVED),
    )
    assert not get_grant_model().objects.exists()


# 2. Tokens only for the resources this site serves -----------------------------------------------------


@pytest.mark.parametrize(
    "resources",
    [
        [ELSEWHERE],
        [RESOURCE, ELSEWHERE],
        ["http://testserver/other"],
        ["http://testserver/mcp?tenant=other"],
        ["http://alice@testserver/mcp"],
        ["urn:example:mcp"],
        ["http://[testserver/mcp"],
    ],
    ids=["another-server", "ours-and-another", "another-path-here", "a-query", "userinfo", "not-a-url", "broken"],
)
def test_an_authorization_for_a_resource_not_served_here_goes_back_invalid_target_before_the_user_is_asked(
    browser: Client, client_id: str, resources: list[str]
) -> None:
    response = browser.get(authorization_url(client_id, Pkce(), *resources))

    assert (response.status_code, response["Location"]) == (
        302,
        refused_with("invalid_target", NOT_SERVED),
    )
    assert not get_grant_model().objects.exists()


def test_the_consent_page_names_the_resource_the_token_would_be_for(browser: Client, client_id: str) -> None:
    page = browser.get(authorization_url(client_id, Pkce(), RESOURCE))

    assert page.context["resources"] == [RESOURCE]
    assert f"<dt>Access to</dt>\n      <dd><code>{RESOURCE}</code></dd>" in page.content.decode()


def test_a_client_naming_no_resource_gets_a_token_for_this_endpoint_only(browser: Client, client_id: str) -> None:
    pkce = Pkce()
    page = browser.get(authorization_url(client_id, pkce))
    assert page.context["resources"] == [RESOURCE]
    code = query(answer(browser, page, allow=True))["code"][0]
    assert get_grant_model().objects.get().resource == [RESOURCE]

    body = issued(redeem(client_id, code, pkce))

    assert access_row(body["access_token"]).resource == [RESOURCE]
    assert get_refresh_token_model().objects.get().resource == [RESOURCE]


def test_a_listed_resource_gets_a_token_bound_to_it(browser: Client, client_id: str, listed: None) -> None:
    pkce = Pkce()
    page = browser.get(authorization_url(client_id, pkce, LISTED))
    assert page.context["resources"] == [LISTED]
    code = query(answer(browser, page, allow=True))["code"][0]

    body = issued(redeem(client_id, code, pkce, LISTED))

    assert access_row(body["access_token"]).resource == [LISTED]


@pytest.mark.django_db(transaction=True)
async def test_a_token_for_a_listed_resource_is_not_for_this_endpoint(user, tools, settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "OAUTH_RESOURCES": [LISTED]}
    raw = await db_call(access_token, user, resource=[LISTED])

    answer_: Answer = await modern_http(f"Bearer {raw}")

    assert (answer_.status, answer_.challenge) == (401, refused_token(NOT_FOR_THIS_RESOURCE))


def test_a_resource_slipped_into_the_consent_form_is_refused_and_no_code_is_issued(
    browser: Client, client_id: str
) -> None:
    page = browser.get(authorization_url(client_id, Pkce(), RESOURCE))
    data = {**{k: v for k, v in page.context["form"].initial.items() if v is not None}, "allow": "Authorize"}

    response = browser.post(AUTHORIZE, {**data, "resource": ELSEWHERE})

    assert (response.status_code, response["Location"]) == (
        302,
        refused_with("invalid_target", NOT_SERVED),
    )
    assert not get_grant_model().objects.exists()


def test_a_code_whose_resource_is_no_longer_served_is_refused_invalid_target(
    browser: Client, client_id: str, settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "OAUTH_RESOURCES": [LISTED]}
    pkce = Pkce()
    code = consented_code(browser, client_id, pkce, LISTED)
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "OAUTH_RESOURCES": []}

    response = redeem(client_id, code, pkce)

    assert (response.status_code, response.json()) == (400, NOT_SERVED_ANSWER)
    assert not get_access_token_model().objects.exists()
    assert get_grant_model().objects.exists()  # not spent: nothing was issued for it


def unbound_grant(client_id: str, user: Any, pkce: Pkce) -> str:
    """A code the server saved before it bound codes to resources: the grant names none."""
    code = uuid.uuid4().hex
    get_grant_model().objects.create(
        application=get_application_model().objects.get(client_id=client_id),
        user=user,
        code=code,
        expires=timezone.now() + timedelta(minutes=1),
        redirect_uri=REDIRECT,
        scope="mcp",
        code_challenge=pkce.challenge,
        code_challenge_method="S256",
        resource=[],
    )
    return code


def test_a_code_bound_to_no_resource_is_not_redeemed_for_another_server(user: Any, client_id: str) -> None:
    pkce = Pkce()
    code = unbound_grant(client_id, user, pkce)

    response = redeem(client_id, code, pkce, ELSEWHERE)

    assert (response.status_code, response.json()) == (400, NOT_SERVED_ANSWER)
    assert not get_access_token_model().objects.exists()


def test_a_code_bound_to_no_resource_is_redeemed_for_this_endpoint(user: Any, client_id: str) -> None:
    pkce = Pkce()
    code = unbound_grant(client_id, user, pkce)

    body = issued(redeem(client_id, code, pkce))

    assert access_row(body["access_token"]).resource == [RESOURCE]


def unbound_refresh_token(client_id: str, user: Any, resource: list[str]) -> str:
    """A refresh token (with its access token) bound to ``resource``, as an older server may have issued."""
    app = get_application_model().objects.get(client_id=client_id)
    raw_access = access_token(user, resource=resource, app=app)
    raw = uuid.uuid4().hex
    get_refresh_token_model().objects.create(
        user=user, application=app, token=raw, access_token=access_row(raw_access), resource=resource
    )
    return raw


@pytest.mark.parametrize(
    ("bound", "asked"),
    [([], [ELSEWHERE]), ([ELSEWHERE], [])],
    ids=["unbound-asking-another-server", "bound-to-another-server"],
)
def test_a_refresh_for_a_resource_not_served_here_is_refused_invalid_target(
    user: Any, client_id: str, bound: list[str], asked: list[str]
) -> None:
    raw = unbound_refresh_token(client_id, user, bound)

    response = refresh(client_id, raw, *asked)

    assert (response.status_code, response.json()) == (400, NOT_SERVED_ANSWER)
    assert get_access_token_model().objects.count() == 1  # the one it came with


def test_a_refresh_of_a_token_bound_to_no_resource_binds_the_new_one_to_this_endpoint(
    user: Any, client_id: str
) -> None:
    raw = unbound_refresh_token(client_id, user, [])

    body = issued(refresh(client_id, raw))

    assert access_row(body["access_token"]).resource == [RESOURCE]


def test_a_client_credentials_token_for_another_server_is_refused_invalid_target() -> None:
    client_id, secret = resource_server()

    response = Client().post(
        TOKEN, {"grant_type": "client_credentials", "resource": ELSEWHERE}, HTTP_AUTHORIZATION=basic(client_id, secret)
    )

    assert (response.status_code, response.json()) == (400, NOT_SERVED_ANSWER)
    assert not get_access_token_model().objects.exists()


# 3. A code redeemed twice revokes what its first redemption issued -------------------------------------


def test_a_replayed_code_is_refused_and_revokes_every_token_of_its_first_redemption(
    browser: Client, client_id: str
) -> None:
    pkce = Pkce()
    code = consented_code(browser, client_id, pkce, RESOURCE)
    first = issued(redeem(client_id, code, pkce, RESOURCE))
    rotated = issued(refresh(client_id, first["refresh_token"]))  # the client went on using it

    replay = redeem(client_id, code, pkce, RESOURCE)

    assert (replay.status_code, replay.json()) == (400, INVALID_GRANT)
    assert not get_access_token_model().objects.exists()
    assert not get_refresh_token_model().objects.filter(revoked__isnull=True).exists()
    assert (refresh(client_id, rotated["refresh_token"]).json()) == INVALID_GRANT


def test_a_replayed_code_revokes_its_tokens_even_without_the_verifier(browser: Client, client_id: str) -> None:
    pkce = Pkce()
    code = consented_code(browser, client_id, pkce, RESOURCE)
    issued(redeem(client_id, code, pkce, RESOURCE))

    replay = redeem(client_id, code, Pkce(), RESOURCE)

    assert (replay.status_code, replay.json()) == (400, INVALID_GRANT)
    assert not get_access_token_model().objects.exists()


def first_redemption(user: Any, client_id: str) -> tuple[str, Pkce, dict[str, Any]]:
    """A user's consent and the client's redemption of its code: (code, PKCE, token response)."""
    browser = Client()
    browser.force_login(user)
    pkce = Pkce()
    code = consented_code(browser, client_id, pkce, RESOURCE)
    return code, pkce, issued(redeem(client_id, code, pkce, RESOURCE))


@pytest.mark.django_db(transaction=True)
async def test_a_replayed_code_cuts_off_the_client_that_redeemed_it(user, tools, client_id):
    code, pkce, first = await db_call(first_redemption, user, client_id)
    assert (await modern_http(f"Bearer {first['access_token']}")).status == 200

    await db_call(redeem, client_id, code, pkce, RESOURCE)

    answer_: Answer = await modern_http(f"Bearer {first['access_token']}")
    assert (answer_.status, answer_.challenge) == (401, refused_token())


def test_a_redeemed_code_is_kept_as_a_checksum_only(browser: Client, client_id: str) -> None:
    pkce = Pkce()
    code = consented_code(browser, client_id, pkce, RESOURCE)
    first = issued(redeem(client_id, code, pkce, RESOURCE))

    record = RedeemedCode.objects.get()

    assert record.code_checksum == checksum(code)
    assert code not in json.dumps(list(RedeemedCode.objects.values()), default=str)
    assert record.access_token == access_row(first["access_token"])
    assert record.token_family == get_refresh_token_model().objects.get().token_family


def test_a_code_already_on_record_as_redeemed_issues_nothing_though_its_grant_remains(
    browser: Client, client_id: str
) -> None:
    # Two redemptions of one code racing: the second to record it is refused, and the first's tokens end.
    pkce = Pkce()
    code = consented_code(browser, client_id, pkce, RESOURCE)
    app = get_application_model().objects.get(client_id=client_id)
    earlier = access_token(get_grant_model().objects.get().user, resource=[RESOURCE], app=app)
    RedeemedCode.objects.create(
        code_checksum=checksum(code),
        application=app,
        access_token=access_row(earlier),
        expires=timezone.now() + timedelta(days=1),
    )

    response = redeem(client_id, code, pkce, RESOURCE)

    assert (response.status_code, response.json()) == (400, INVALID_GRANT)
    assert not get_access_token_model().objects.exists()


def test_cleanup_deletes_the_records_of_redeemed_codes_no_longer_kept(client_id: str) -> None:
    app = get_application_model().objects.get(client_id=client_id)
    now = timezone.now()
    for name, expires in (("old", now - timedelta(seconds=1)), ("kept", now + timedelta(days=1))):
        RedeemedCode.objects.create(code_checksum=checksum(name), application=app, expires=expires)

    call_command("mcp_oauth_cleanup", stdout=io.StringIO())

    assert list(RedeemedCode.objects.values_list("code_checksum", flat=True)) == [checksum("kept")]


# 4. A deactivated user's code and refresh token mint nothing -------------------------------------------


def test_a_deactivated_users_refresh_token_is_an_invalid_grant(browser: Client, user: Any, client_id: str) -> None:
    pkce = Pkce()
    first = issued(redeem(client_id, consented_code(browser, client_id, pkce, RESOURCE), pkce, RESOURCE))
    user.is_active = False
    user.save()

    response = refresh(client_id, first["refresh_token"])

    assert (response.status_code, response.json()) == (400, INVALID_GRANT)
    assert get_access_token_model().objects.count() == 1


def test_a_deactivated_users_code_is_an_invalid_grant(browser: Client, user: Any, client_id: str) -> None:
    pkce = Pkce()
    code = consented_code(browser, client_id, pkce, RESOURCE)
    user.is_active = False
    user.save()

    response = redeem(client_id, code, pkce, RESOURCE)

    assert (response.status_code, response.json()) == (400, INVALID_GRANT)
    assert not get_access_token_model().objects.exists()


# 5. Redirect URIs with userinfo are never registered ---------------------------------------------------


@pytest.fixture(autouse=True)
def fresh_rate_limits() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


def registration(**fields: Any) -> dict[str, Any]:
    return {
        "client_name": "Claude",
        "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **fields,
    }


def register(document: dict[str, Any]) -> Any:
    client = Client(enforce_csrf_checks=True)
    return client.post(REGISTER, json.dumps(document), content_type="application/json")


USERINFO = {
    "error": "invalid_redirect_uri",
    "error_description": "A redirect URI may not hold a user name or password.",
}
WITH_USERINFO = [
    "https://claude.ai@evil.example/cb",
    "https://claude.ai:x@evil.example/cb",
    "https://@evil.example/cb",
    "http://user@127.0.0.1/callback",
]


@pytest.mark.parametrize("uri", WITH_USERINFO, ids=["user", "user-and-password", "empty-user", "loopback"])
def test_a_registration_with_a_redirect_uri_holding_userinfo_is_invalid_redirect_uri(uri: str) -> None:
    reply = register(registration(redirect_uris=["https://claude.ai/api/mcp/auth_callback", uri]))

    assert (reply.status_code, reply.json()) == (400, USERINFO)
    assert not get_application_model().objects.exists()


def test_an_update_of_a_registration_is_checked_as_a_registration_is() -> None:
    registered = register(registration())
    assert registered.status_code == 201, registered.content
    body = registered.json()
    manage = Client(HTTP_AUTHORIZATION=f"Bearer {body['registration_access_token']}")
    url = f"{REGISTER}{body['client_id']}/"

    with_userinfo = manage.put(url, json.dumps(registration(redirect_uris=WITH_USERINFO[:1])), "application/json")
    too_many = manage.put(
        url, json.dumps(registration(redirect_uris=[f"http://127.0.0.1/{n}" for n in range(11)])), "application/json"
    )

    assert (with_userinfo.status_code, with_userinfo.json()) == (400, USERINFO)
    assert (too_many.status_code, too_many.json()) == (
        400,
        {"error": "invalid_client_metadata", "error_description": "At most 10 redirect URIs may be registered."},
    )
    application_row = get_application_model().objects.get(client_id=body["client_id"])
    assert application_row.redirect_uris == "https://claude.ai/api/mcp/auth_callback"


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MetadataHost]:
    with metadata_host(tmp_path, monkeypatch) as serving:
        yield serving


def test_a_metadata_document_with_a_redirect_uri_holding_userinfo_is_an_unknown_client(
    browser: Client, host: MetadataHost
) -> None:
    path = f"/connectors/{uuid.uuid4().hex}.json"
    client_id = host.url(path)
    uris = ["https://client.example/callback", "https://client.example@evil.example/callback"]
    host.document(path, client_metadata(client_id, redirect_uris=uris))

    response = browser.get(authorization_url(client_id, Pkce(), RESOURCE))

    assert response.status_code == 400
    assert "<strong>invalid_request</strong>: Invalid client_id parameter value." in response.content.decode()
    assert (host.requests, get_application_model().objects.count()) == ([path], 0)


# 6. Introspection only for the resource servers the owner names ----------------------------------------

INTROSPECT = "/oauth/introspect/"
REFUSED = {"error": "invalid_client", "error_description": "Client authentication failed."}


def resource_server(client_id: str = "resource-server", secret: str = "its-secret", **fields: Any) -> tuple[str, str]:
    model = get_application_model()
    fields.setdefault("client_type", model.CLIENT_CONFIDENTIAL)
    model.objects.create(
        name=client_id,
        client_id=client_id,
        client_secret=secret,
        authorization_grant_type=model.GRANT_CLIENT_CREDENTIALS,
        **fields,
    )
    return client_id, secret


def basic(client_id: str, secret: str) -> str:
    return "Basic " + b64encode(f"{client_id}:{secret}".encode()).decode()


def introspect(token: str, authorization: str | None = None, **body: str) -> Any:
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    return Client(enforce_csrf_checks=True).post(INTROSPECT, {"token": token, **body}, **headers)


def refused(response: Any) -> tuple[int, Any, str | None]:
    return response.status_code, response.json(), response.headers.get("WWW-Authenticate")


REFUSAL = (401, REFUSED, 'Basic realm="introspection"')


@pytest.fixture
def introspector(settings: Any) -> tuple[str, str]:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "OAUTH_INTROSPECTION_CLIENTS": ["resource-server"]}
    return resource_server()


def test_by_default_no_client_may_introspect_and_none_is_told_of_the_endpoint(user: Any, client: Client) -> None:
    raw = access_token(user, resource=[RESOURCE])
    client_id, secret = resource_server()

    response = introspect(raw, basic(client_id, secret))

    assert refused(response) == REFUSAL
    assert "introspection_endpoint" not in client.get("/.well-known/oauth-authorization-server").json()


def test_a_listed_resource_server_introspects_and_the_endpoint_is_advertised(
    user: Any, client: Client, introspector: tuple[str, str]
) -> None:
    raw = access_token(user, resource=[RESOURCE])

    response = introspect(raw, basic(*introspector))

    assert response.status_code == 200
    assert {k: response.json()[k] for k in ("active", "username", "aud")} == {
        "active": True,
        "username": "alice",
        "aud": [RESOURCE],
    }
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    assert metadata["introspection_endpoint"] == "http://testserver/oauth/introspect/"


def test_a_self_registered_confidential_client_may_not_introspect(user: Any, introspector: tuple[str, str]) -> None:
    raw = access_token(user, resource=[RESOURCE])
    registered = register(registration(token_endpoint_auth_method="client_secret_basic"))
    assert registered.status_code == 201, registered.content
    body = registered.json()

    response = introspect(raw, basic(body["client_id"], body["client_secret"]))

    assert refused(response) == REFUSAL


@pytest.mark.parametrize(
    "credentials",
    ["wrong-secret", "public-client", "nothing", "listed-basic-other-body"],
)
def test_a_caller_not_authenticated_as_a_listed_confidential_client_gets_the_same_refusal(
    user: Any, settings: Any, introspector: tuple[str, str], credentials: str
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "OAUTH_INTROSPECTION_CLIENTS": ["resource-server", "public"]}
    raw = access_token(user, resource=[RESOURCE])
    resource_server("public", "", client_type=get_application_model().CLIENT_PUBLIC)
    other, other_secret = resource_server("other", "other-secret")
    attempts = {
        "wrong-secret": lambda: introspect(raw, basic(introspector[0], "guess")),
        "public-client": lambda: introspect(raw, client_id="public", client_secret=""),
        "nothing": lambda: introspect(raw),
        # The Basic header names a listed client with a wrong secret; the body authenticates another one.
        "listed-basic-other-body": lambda: introspect(
            raw, basic(introspector[0], "guess"), client_id=other, client_secret=other_secret
        ),
    }

    assert refused(attempts[credentials]()) == REFUSAL


def test_an_unlisted_client_id_is_refused_before_it_is_looked_up_or_fetched(
    user: Any, introspector: tuple[str, str], host: MetadataHost
) -> None:
    path = f"/connectors/{uuid.uuid4().hex}.json"
    client_id = host.url(path)
    host.document(path, client_metadata(client_id))

    response = introspect(access_token(user, resource=[RESOURCE]), client_id=client_id, client_secret="")

    assert refused(response) == REFUSAL
    assert (host.requests, get_application_model().objects.filter(client_id=client_id).exists()) == ([], False)


def test_a_token_of_a_deactivated_user_is_inactive(user: Any, introspector: tuple[str, str]) -> None:
    raw = access_token(user, resource=[RESOURCE])
    user.is_active = False
    user.save()

    response = introspect(raw, basic(*introspector))

    assert (response.status_code, response.json()) == (200, {"active": False})


def test_a_token_in_the_query_string_is_not_introspected(user: Any, introspector: tuple[str, str]) -> None:
    raw = access_token(user, resource=[RESOURCE])

    response = Client().get(f"{INTROSPECT}?token={raw}", HTTP_AUTHORIZATION=basic(*introspector))

    assert response.status_code == 405


# The settings ------------------------------------------------------------------------------------------


def test_malformed_oauth_lists_are_check_errors(settings: Any) -> None:
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "OAUTH_RESOURCES": ["https://api.example.com/mcp", "api.example.com"],
        "OAUTH_INTROSPECTION_CLIENTS": "resource-server",
    }

    assert [(m.id, m.msg) for m in mcp_checks()] == [
        (
            "mcp_tools.E013",
            "MCP_TOOLS['OAUTH_RESOURCES'] must be a list of absolute URLs: tokens are issued for nothing else.",
        ),
        ("mcp_tools.E014", "MCP_TOOLS['OAUTH_INTROSPECTION_CLIENTS'] must be a list of client IDs."),
    ]


def test_well_formed_oauth_lists_pass_the_checks(settings: Any) -> None:
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "OAUTH_RESOURCES": [LISTED],
        "OAUTH_INTROSPECTION_CLIENTS": ["resource-server"],
    }

    assert mcp_checks() == []


def test_a_toolkit_set_up_without_this_apps_validator_and_fetcher_is_a_security_warning(settings: Any) -> None:
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "OAUTH2_VALIDATOR_CLASS": "oauth2_provider.oauth2_validators.OAuth2Validator",
        "CIMD_METADATA_FETCHER": "oauth2_provider.cimd.SafeMetadataFetcher",
    }

    assert [(m.id, m.hint) for m in mcp_checks()] == [
        (
            "mcp_tools.W015",
            "Build OAUTH2_PROVIDER with provider_settings(), or set OAUTH2_VALIDATOR_CLASS "
            "(mcp_tools.oauth.validator.MCPOAuth2Validator) and CIMD_METADATA_FETCHER "
            "(mcp_tools.oauth.redirect_uris.CheckedMetadataFetcher) or a subclass.",
        )
    ]
