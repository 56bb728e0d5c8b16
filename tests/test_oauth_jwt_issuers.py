"""Trusted issuers of JWT access tokens: their configuration checks, how their keys are found, fetched and
kept, and how a token's claims name a user, through the MCP endpoint served in this process.

Each test starts its own ``tests.jwt_issuer`` host, so its issuers (and the cache entries of their keys)
are its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import checks
from django.core.cache import cache

from tests.challenges import refused_token
from tests.db import db_call
from tests.jwt_issuer import IssuerHost, TestIssuer, issuer_host, new_key, reply
from tests.live.asgi_http import HttpClient, Response, modern_headers, modern_request
from tests.system_checks import mcp_checks

pytestmark = pytest.mark.django_db(transaction=True)

RESOURCE = "http://testserver/mcp"
SETTING = "MCP_TOOLS['OAUTH_JWT_ISSUERS']"
HELD_SECONDS = 30  # longer than any bound here: an answer held this long must have been given up on


@pytest.fixture
def host() -> Iterator[IssuerHost]:
    with issuer_host() as running:
        yield running


@pytest.fixture
def idp(host: IssuerHost) -> TestIssuer:
    return host.issuer("idp")


def trust(settings: Any, *entries: dict[str, Any]) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "OAUTH_JWT_ISSUERS": list(entries)}


async def tools_list(token: str) -> Response:
    return await HttpClient().send(
        modern_request(1, "tools/list"),
        headers={"authorization": f"Bearer {token}", **modern_headers("tools/list")},
    )


async def whoami(token: str) -> Any:
    reply = await HttpClient().send(
        modern_request(1, "tools/call", {"name": "whoami", "arguments": {}}),
        headers={"authorization": f"Bearer {token}", **modern_headers("tools/call", "whoami")},
    )
    assert reply.status == 200, reply
    return reply.json()["result"]["structuredContent"]


def refused(reply: Response) -> tuple[int, str]:
    return reply.status, reply.headers["www-authenticate"]


REFUSED = (401, refused_token())


# Keys ---------------------------------------------------------------------------------------------


async def test_the_key_set_is_read_from_the_shared_cache_until_it_is_gone(host, idp, settings, user, tools):
    trust(settings, idp.config())
    jwks = "/idp/jwks.json"

    assert (await tools_list(idp.mint("alice", RESOURCE))).status == 200
    assert (await tools_list(idp.mint("alice", RESOURCE))).status == 200
    assert host.count(jwks) == 1
    cache.clear()
    assert (await tools_list(idp.mint("alice", RESOURCE))).status == 200
    assert host.count(jwks) == 2


async def test_a_key_set_over_its_size_cap_is_refused_and_not_asked_for_again_within_the_interval(
    host, idp, settings, user, tools
):
    trust(settings, idp.config(JWKS_MAX_BYTES=4096))
    host.routes["/idp/jwks.json"] = lambda handler: reply(handler, {**idp.key_set(), "padding": "x" * 4096})

    first = await tools_list(idp.mint("alice", RESOURCE))
    second = await tools_list(idp.mint("alice", RESOURCE))

    assert refused(first) == refused(second) == REFUSED
    assert host.count("/idp/jwks.json") == 1


async def test_an_issuer_that_answers_too_slowly_is_given_up_on_at_its_timeout(host, idp, settings, user, tools):
    trust(settings, idp.config(JWKS_TIMEOUT_SECONDS=0.5))

    def late(handler: BaseHTTPRequestHandler) -> None:
        host.release.wait(HELD_SECONDS)
        reply(handler, idp.key_set())

    host.routes["/idp/jwks.json"] = late

    assert refused(await tools_list(idp.mint("alice", RESOURCE))) == REFUSED


async def test_a_redirect_from_the_jwks_url_is_not_followed(host, idp, settings, user, tools):
    trust(settings, idp.config())

    def moved(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(302)
        handler.send_header("Location", "/elsewhere/jwks.json")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    host.routes["/idp/jwks.json"] = moved
    host.routes["/elsewhere/jwks.json"] = lambda handler: reply(handler, idp.key_set())

    assert refused(await tools_list(idp.mint("alice", RESOURCE))) == REFUSED
    assert host.count("/elsewhere/jwks.json") == 0


async def test_a_refetch_that_fails_keeps_the_keys_already_kept(host, idp, settings, user, tools):
    trust(settings, idp.config())
    assert (await tools_list(idp.mint("alice", RESOURCE))).status == 200
    host.routes["/idp/jwks.json"] = lambda handler: handler.send_error(500)

    unknown = await tools_list(idp.mint("alice", RESOURCE, key=new_key()))
    known = await tools_list(idp.mint("alice", RESOURCE))

    assert refused(unknown) == REFUSED
    assert known.status == 200
    assert host.count("/idp/jwks.json") == 2


# Discovery ----------------------------------------------------------------------------------------


async def test_an_issuer_with_a_path_is_found_through_the_openid_document_appended_to_it(host, settings, user, tools):
    tenant = host.issuer("tenant/v2.0")  # as Entra ID names its issuers, and publishes only OpenID metadata
    host.routes["/.well-known/oauth-authorization-server/tenant/v2.0"] = lambda handler: handler.send_error(404)
    host.routes["/tenant/v2.0/.well-known/openid-configuration"] = lambda handler: reply(
        handler, {"issuer": tenant.url, "jwks_uri": tenant.jwks_url}
    )
    trust(settings, {"ISSUER": tenant.url})

    assert (await tools_list(tenant.mint("alice", RESOURCE))).status == 200
    assert host.requests == [
        "/.well-known/oauth-authorization-server/tenant/v2.0",
        "/.well-known/openid-configuration/tenant/v2.0",
        "/tenant/v2.0/.well-known/openid-configuration",
        "/tenant/v2.0/jwks.json",
    ]


async def test_metadata_that_describes_another_issuer_is_not_trusted(host, idp, settings, user, tools):
    host.routes["/.well-known/oauth-authorization-server/idp"] = lambda handler: reply(
        handler, {"issuer": "https://login.elsewhere.example", "jwks_uri": idp.jwks_url}
    )
    trust(settings, {"ISSUER": idp.url})

    assert refused(await tools_list(idp.mint("alice", RESOURCE))) == REFUSED
    assert host.count("/idp/jwks.json") == 0


# Users --------------------------------------------------------------------------------------------


async def test_a_user_lookup_function_names_the_user_from_the_claims(idp, settings, tools):
    await db_call(lambda: get_user_model()._default_manager.create_user("dave", email="dave@example.com"))
    trust(settings, idp.config(USER_LOOKUP="tests.jwt_issuer.user_by_email"))

    verified = idp.mint("opaque-subject", RESOURCE, email="dave@example.com", email_verified=True)
    unverified = idp.mint("opaque-subject", RESOURCE, email="dave@example.com", email_verified=False)

    assert await whoami(verified) == {"username": "dave"}
    assert refused(await tools_list(unverified)) == REFUSED


async def test_a_claim_that_matches_two_users_names_neither(idp, settings, tools):
    def two_users() -> None:
        for name in ("erin", "frank"):
            get_user_model()._default_manager.create_user(name, email="shared@example.com")

    await db_call(two_users)
    trust(settings, idp.config(USER_CLAIM="email", USER_FIELD="email"))

    assert refused(await tools_list(idp.mint("sub", RESOURCE, email="shared@example.com"))) == REFUSED


# Audience -----------------------------------------------------------------------------------------


async def test_a_configured_audience_replaces_the_resource_url_and_is_compared_exactly(idp, settings, user, tools):
    trust(settings, idp.config(AUDIENCE="api://mcp-tools"))
    not_here = refused_token("The access token was not issued for this resource.")

    assert (await tools_list(idp.mint("alice", ["https://other.example", "api://mcp-tools"]))).status == 200
    assert refused(await tools_list(idp.mint("alice", "API://MCP-tools"))) == (401, not_here)
    assert refused(await tools_list(idp.mint("alice", RESOURCE))) == (401, not_here)


# Configuration ------------------------------------------------------------------------------------


async def test_an_issuer_entry_with_a_problem_trusts_no_token(idp, settings, user, tools):
    trust(settings, idp.config(ALGORITHMS=["RS256", "HS256"]))

    assert refused(await tools_list(idp.mint("alice", RESOURCE))) == REFUSED


def error(message: str, hint: str) -> checks.Error:
    return checks.Error(message, hint=hint, id="mcp_tools.E011")


ASYMMETRIC_HINT = (
    "Accept only asymmetric algorithms: some of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA."
)
ISSUER_HINT = (
    "Give the issuer identifier exactly as its tokens' 'iss' and its metadata say it (https; http only on a "
    "loopback address), without a query or fragment."
)
OK = {"ISSUER": "https://login.example.com"}
VALID_KEYS = (
    "ISSUER, JWKS_URL, ALGORITHMS, AUDIENCE, TOKEN_TYPES, USER_CLAIM, USER_FIELD, USER_LOOKUP, CLIENT_CLAIMS, "
    "LEEWAY_SECONDS, JWKS_CACHE_SECONDS, JWKS_REFETCH_SECONDS, JWKS_TIMEOUT_SECONDS, JWKS_MAX_BYTES"
)

MALFORMED: list[tuple[Any, list[checks.Error]]] = [
    ({"OAUTH_JWT_ISSUERS": {}}, [error(f"{SETTING} must be a list.", "List one dict per issuer, or leave it [].")]),
    (
        {"OAUTH_JWT_ISSUERS": ["https://login.example.com"]},
        [error(f"{SETTING}[0]: an entry is not a dict.", "Give each issuer as a dict with at least 'ISSUER'.")],
    ),
    (
        {"OAUTH_JWT_ISSUERS": [{"ISSUER": "http://login.example.com"}]},
        [error(f"{SETTING}[0]: ISSUER 'http://login.example.com' is not an https URL.", ISSUER_HINT)],
    ),
    (
        {"OAUTH_JWT_ISSUERS": [{**OK, "ALGORITHMS": ["RS256", "HS256"]}]},
        [
            error(
                f"{SETTING}[0]: ALGORITHMS holds 'HS256', which is not an asymmetric signature algorithm.",
                ASYMMETRIC_HINT,
            )
        ],
    ),
    (
        {"OAUTH_JWT_ISSUERS": [{**OK, "ALGORITHMS": ["none"]}]},
        [
            error(
                f"{SETTING}[0]: ALGORITHMS holds 'none', which is not an asymmetric signature algorithm.",
                ASYMMETRIC_HINT,
            )
        ],
    ),
    (
        {"OAUTH_JWT_ISSUERS": [{**OK, "JWKS_URL": "http://keys.example.com/jwks"}]},
        [
            error(
                f"{SETTING}[0]: JWKS_URL 'http://keys.example.com/jwks' is not an https URL.",
                "Give the issuer's JWKS URL (https; http only on a loopback address), or None to discover it.",
            )
        ],
    ),
    (
        {"OAUTH_JWT_ISSUERS": [{**OK, "USER_FIELD": "nickname"}]},
        [
            error(
                f"{SETTING}[0]: USER_FIELD 'nickname' is not a field of auth.User.",
                "For example 'username' or 'email'.",
            )
        ],
    ),
    (
        {"OAUTH_JWT_ISSUERS": [{**OK, "USER_LOOKUP": "tests.nowhere.lookup"}]},
        [
            error(
                f"{SETTING}[0]: USER_LOOKUP 'tests.nowhere.lookup' cannot be imported as a function.",
                "Give the dotted path of a function (claims) -> user | None.",
            )
        ],
    ),
    (
        {"OAUTH_JWT_ISSUERS": [{**OK, "JWKS_TIMEOUT_SECONDS": 0, "TOKEN_TYPES": []}]},
        [
            error(
                f"{SETTING}[0]: JWKS_TIMEOUT_SECONDS is 0, not a positive number.",
                "Give JWKS_TIMEOUT_SECONDS as a number above 0.",
            ),
            error(
                f"{SETTING}[0]: TOKEN_TYPES must be a non-empty list of strings (or None).",
                "Use ['at+jwt'] unless the issuer sends another typ.",
            ),
        ],
    ),
    (
        {"OAUTH_JWT_ISSUERS": [{**OK, "AUDIENCES": ["api://x"]}]},
        [error(f"{SETTING}[0]: unknown key 'AUDIENCES'.", f"Valid keys: {VALID_KEYS}.")],
    ),
    (
        {"OAUTH_JWT_ISSUERS": [OK, {**OK, "AUDIENCE": "api://x"}]},
        [error(f"{SETTING}[1]: the issuer 'https://login.example.com' is listed twice.", "Keep one entry per issuer.")],
    ),
]


@pytest.mark.parametrize(("overrides", "expected"), MALFORMED)
def test_each_problem_of_the_trusted_issuers_is_a_system_check_error(settings, overrides, expected):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, **overrides}

    assert mcp_checks() == sorted(expected, key=lambda m: (m.id, m.msg))


def test_trusted_issuers_described_in_full_pass_the_checks(settings):
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "OAUTH_JWT_ISSUERS": [
            OK,
            {
                "ISSUER": "https://login.microsoftonline.com/tenant/v2.0",
                "ALGORITHMS": ["RS256", "ES256"],
                "AUDIENCE": ["api://mcp-tools", "https://shop.example.com/mcp"],
                "TOKEN_TYPES": ["at+jwt", "JWT", None],
                "USER_CLAIM": "preferred_username",
                "USER_FIELD": "email",
                "JWKS_URL": "https://login.microsoftonline.com/tenant/discovery/v2.0/keys?appid=x",
            },
            {"ISSUER": "http://127.0.0.1:8080/realms/dev", "USER_LOOKUP": "tests.jwt_issuer.user_by_email"},
        ],
    }

    assert mcp_checks() == []
