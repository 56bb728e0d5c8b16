"""Who may open a session: bearer tokens, session cookies, anonymous access, Origin and Host checks."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from mcp_tools.access import authentication
from mcp_tools.access.authentication import (
    AuthenticationFailed,
    RecentTokens,
    authenticate,
    bearer_token,
    forget_tokens,
    user_for_token,
)
from mcp_tools.models import AccessToken
from mcp_tools.transports.http_request import connection_request
from mcp_tools.transports.origins import (
    allowed_hosts,
    connection_origin,
    connection_problem,
    host_allowed,
    origin_allowed,
)
from tests.challenges import refused_token
from tests.db import db_call
from tests.messages import rpc_error
from tests.origins import (
    CSRF_ORIGIN_VERDICTS,
    CSRF_ORIGINS,
    LISTED_ORIGIN_VERDICTS,
    LISTED_ORIGINS,
    ORIGIN_CASES,
    ORIGIN_IDS,
    PROXY_CASES,
)
from tests.websocket import HOST, TIMEOUT, WSClient, denial, login_cookie, whoami, ws_headers

BAD_TOKEN = "The access token is invalid or expired."
BAD_SCHEME = "Use 'Authorization: Bearer <token>'."


def scope(*headers: tuple[bytes, bytes], user: Any = None) -> dict[str, Any]:
    built: dict[str, Any] = {"type": "websocket", "headers": list(headers)}
    if user is not None:
        built["user"] = user
    return built


def handshake_request(*headers: tuple[bytes, bytes], user: Any = None) -> Any:
    """Django's request for a WebSocket handshake with these headers (and session user)."""
    return connection_request(scope(*headers, user=user))


def bearer(raw: str) -> tuple[bytes, bytes]:
    return (b"authorization", f"Bearer {raw}".encode())


def mcp_tools_setting(settings: Any, **values: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, **values}


async def handshake(
    token: str, host: str, origin: str | None, *, scheme: str = "ws", extra: list[tuple[bytes, bytes]] | None = None
) -> bool:
    """Whether a WebSocket handshake with this Host, Origin and scheme is accepted."""
    from tests.asgi import application

    headers = [(b"host", host.encode()), bearer(token), *(extra or [])]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    communicator = WebsocketCommunicator(application, "/mcp/ws", headers=headers, subprotocols=["mcp"])
    communicator.scope["scheme"] = scheme
    accepted, _detail = await communicator.connect(timeout=TIMEOUT)
    if accepted:
        await communicator.disconnect(timeout=TIMEOUT)
    return bool(accepted)


# Over the WebSocket --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
class TestHandshake:
    async def test_a_valid_bearer_token_opens_a_session_as_its_user(self, ws_connect, token, tools):
        communicator, accepted, _ = await ws_connect(ws_headers(token))

        assert accepted
        assert await whoami(communicator) == {"username": "alice"}

    async def test_using_a_token_records_when_it_was_last_used(self, ws_connect, token, tools):
        before = timezone.now()

        _communicator, accepted, _ = await ws_connect(ws_headers(token))
        used = await db_call(lambda: AccessToken.objects.get().last_used_at)

        assert accepted
        assert before <= used <= timezone.now()

    @pytest.mark.parametrize(
        "authorization",
        [
            "Bearer mcp_not-a-token-we-issued",
            "Basic YWxpY2U6cHc=",
            "Token {token}",
            "Bearer",
            "Bearer    ",
        ],
    )
    async def test_a_wrong_token_or_scheme_is_refused(self, ws_connect, token, tools, authorization):
        headers = [HOST, (b"authorization", authorization.format(token=token).encode())]

        _communicator, accepted, _ = await ws_connect(headers)

        assert not accepted

    async def test_an_expired_token_is_refused(self, ws_connect, token, tools):
        await db_call(lambda: AccessToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1)))

        _communicator, accepted, _ = await ws_connect(ws_headers(token))

        assert not accepted

    async def test_a_token_of_an_inactive_user_is_refused(self, ws_connect, user, token, tools):
        user.is_active = False
        await db_call(user.save)

        _communicator, accepted, _ = await ws_connect(ws_headers(token))

        assert not accepted

    async def test_a_logged_in_session_cookie_opens_a_session_as_its_user(self, ws_connect, user, tools):
        cookie = await db_call(login_cookie, user)

        communicator, accepted, _ = await ws_connect([HOST, cookie])

        assert accepted
        assert await whoami(communicator) == {"username": "alice"}

    async def test_a_session_cookie_of_an_inactive_user_is_refused(self, ws_connect, user, tools):
        cookie = await db_call(login_cookie, user)
        user.is_active = False
        await db_call(user.save)

        _communicator, accepted, _ = await ws_connect([HOST, cookie])

        assert not accepted

    async def test_a_bearer_token_wins_over_a_session_cookie(self, ws_connect, django_user_model, user, tools):
        bob = await db_call(django_user_model.objects.create_user, "bob", password="pw")
        cookie = await db_call(login_cookie, bob)
        raw = await db_call(lambda: AccessToken.objects.issue(user)[1])

        communicator, accepted, _ = await ws_connect([HOST, cookie, bearer(raw)])

        assert accepted
        assert await whoami(communicator) == {"username": "alice"}

    async def test_no_credentials_are_refused_by_default(self, ws_connect, tools):
        _communicator, accepted, _ = await ws_connect([HOST])

        assert not accepted

    async def test_no_credentials_are_accepted_when_anonymous_access_is_allowed(self, ws_connect, tools, settings):
        mcp_tools_setting(settings, ALLOW_ANONYMOUS=True)

        communicator, accepted, _ = await ws_connect([HOST])
        assert accepted
        client = WSClient(communicator)
        await client.initialize()
        reply = await client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})

        assert reply["result"]["structuredContent"] == {"result": 2}

    @pytest.mark.parametrize(("secure", "host", "origin", "accepted"), ORIGIN_CASES, ids=ORIGIN_IDS)
    async def test_origin_must_be_absent_or_the_connections_own_scheme_host_and_port(
        self, token, tools, secure, host, origin, accepted
    ):
        accepted_now = await handshake(token, host, origin, scheme="wss" if secure else "ws")

        assert accepted_now is accepted

    async def test_allowed_origins_admits_a_listed_origin_on_its_scheme_and_port_only(self, token, tools, settings):
        mcp_tools_setting(settings, ALLOWED_ORIGINS=["https://app.example", "http://[::1]:3000"])

        verdicts = [await handshake(token, "testserver", origin) for origin in LISTED_ORIGINS]

        assert verdicts == [accepted for _origin, accepted in LISTED_ORIGIN_VERDICTS]

    async def test_csrf_trusted_origins_are_trusted_too(self, token, tools, settings):
        settings.CSRF_TRUSTED_ORIGINS = ["https://shop.example", "https://*.example.com"]

        verdicts = [await handshake(token, "testserver", origin) for origin in CSRF_ORIGINS]

        assert verdicts == [accepted for _origin, accepted in CSRF_ORIGIN_VERDICTS]

    @pytest.mark.parametrize(("forwarded", "origin", "accepted"), PROXY_CASES)
    async def test_secure_proxy_ssl_header_decides_the_scheme_of_the_own_origin(
        self, token, tools, settings, forwarded, origin, accepted
    ):
        settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
        extra = [] if forwarded is None else [(b"x-forwarded-proto", forwarded.encode())]

        assert await handshake(token, "testserver", origin, extra=extra) is accepted

    @pytest.mark.parametrize("host", [b"evil.example", b"testserver.evil.example", b""])
    async def test_a_foreign_or_empty_host_is_refused(self, ws_connect, token, tools, host):
        _communicator, accepted, _ = await ws_connect([(b"host", host), bearer(token)])

        assert not accepted

    async def test_a_missing_host_is_refused(self, ws_connect, token, tools):
        _communicator, accepted, _ = await ws_connect([bearer(token)])

        assert not accepted


@pytest.mark.django_db(transaction=True)
class TestDenialResponse:
    async def test_bad_credentials_get_401_with_www_authenticate(self, tools):
        start, body = await denial([HOST, bearer("mcp_wrong")])

        assert start == {
            "type": "websocket.http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", refused_token().encode())],
        }
        assert body == {
            "type": "websocket.http.response.body",
            "body": rpc_error(BAD_TOKEN),
        }

    async def test_missing_credentials_get_401(self, tools):
        start, body = await denial([HOST])

        assert start["status"] == 401
        assert body["body"] == rpc_error("Authentication required")

    async def test_a_foreign_origin_gets_403_without_www_authenticate(self, token, tools):
        start, body = await denial([*ws_headers(token), (b"origin", b"http://evil.example")])

        assert start == {
            "type": "websocket.http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"application/json")],
        }
        assert body == {"type": "websocket.http.response.body", "body": rpc_error("Invalid Origin header")}

    async def test_a_handshake_django_cannot_read_gets_400(self, token, tools):
        start, body = await denial([*ws_headers(token), (b"content-type", b"text/plain; charset*=x''y")])

        assert (start["status"], body["body"]) == (400, rpc_error("Malformed request headers"))

    async def test_a_host_sent_twice_is_refused_whatever_the_first_says(self, token, tools):
        start, body = await denial([*ws_headers(token), (b"host", b"evil.example")])

        assert (start["status"], body["body"]) == (403, rpc_error("Invalid Host header"))

    async def test_a_foreign_host_gets_403(self, token, tools):
        start, body = await denial([(b"host", b"evil.example"), bearer(token)])

        assert (start["status"], body["body"]) == (403, rpc_error("Invalid Host header"))


# mcp_tools.access.authentication --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("  Bearer   abc  ", "abc"),
        ("BEARER mcp_x.y-z", "mcp_x.y-z"),
    ],
)
def test_bearer_token_reads_the_authorization_header(value, expected):
    assert bearer_token(handshake_request((b"authorization", value.encode()))) == expected


def test_bearer_token_is_none_without_an_authorization_header():
    assert bearer_token(handshake_request(HOST)) is None


@pytest.mark.parametrize("value", ["Basic YWxpY2U6cHc=", "Bearer", "Bearer   ", "abc", ""])
def test_bearer_token_refuses_other_schemes_and_empty_credentials(value):
    with pytest.raises(AuthenticationFailed) as caught:
        bearer_token(handshake_request((b"authorization", value.encode())))

    assert str(caught.value) == BAD_SCHEME


@pytest.mark.django_db
def test_user_for_token_returns_the_user_and_the_token_row(user, token):
    found_user, found_token = user_for_token(token)

    assert (found_user, found_token) == (user, AccessToken.objects.get())


@pytest.mark.django_db
@pytest.mark.parametrize("problem", ["unknown", "expired", "inactive"])
def test_user_for_token_refuses_unknown_expired_and_inactive(user, token, problem):
    raw = token
    if problem == "unknown":
        raw = token + "x"
    elif problem == "expired":
        AccessToken.objects.update(expires_at=timezone.now())
    else:
        user.is_active = False
        user.save()

    with pytest.raises(AuthenticationFailed) as caught:
        user_for_token(raw)

    assert str(caught.value) == BAD_TOKEN


@pytest.mark.django_db
def test_a_token_expiring_in_the_future_is_accepted(user, token):
    AccessToken.objects.update(expires_at=timezone.now() + timedelta(minutes=1))

    assert user_for_token(token)[0] == user


@pytest.mark.django_db
def test_last_used_at_is_written_at_most_once_per_interval(user, token):
    user_for_token(token)
    first = AccessToken.objects.get().last_used_at

    user_for_token(token)

    assert first is not None
    assert AccessToken.objects.get().last_used_at == first


@pytest.mark.django_db
def test_last_used_at_is_written_again_once_the_interval_has_passed(user, token):
    AccessToken.objects.update(last_used_at=timezone.now() - timedelta(seconds=61))
    before = timezone.now()

    user_for_token(token)

    assert AccessToken.objects.get().last_used_at >= before


@pytest.mark.django_db
def test_authenticate_prefers_the_bearer_token_over_the_scope_user(user, token, django_user_model):
    bob = django_user_model.objects.create_user("bob")

    assert authenticate(handshake_request(bearer(token), user=bob)) == (user, AccessToken.objects.get())


@pytest.mark.django_db
def test_authenticate_returns_an_authenticated_scope_user_without_a_token(user):
    assert authenticate(handshake_request(HOST, user=user)) == (user, None)


@pytest.mark.parametrize("scope_user", [None, AnonymousUser()])
def test_authenticate_returns_an_anonymous_user_without_credentials(scope_user):
    found_user, found_token = authenticate(handshake_request(HOST, user=scope_user))

    assert (found_user.is_anonymous, found_token) == (True, None)


# mcp_tools.transports.origins ---------------------------------------------------------------------------------


def test_allowed_hosts_are_the_django_setting(settings):
    settings.ALLOWED_HOSTS = ["shop.example", ".shop.example"]

    assert allowed_hosts() == ["shop.example", ".shop.example"]


def test_allowed_hosts_default_to_local_names_in_debug_with_none_set(settings):
    settings.DEBUG, settings.ALLOWED_HOSTS = True, []

    assert allowed_hosts() == [".localhost", "127.0.0.1", "[::1]"]


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("testserver", True),
        ("testserver:8000", True),
        ("127.0.0.1:8000", True),
        ("[::1]:8000", True),
        ("TESTSERVER", True),
        ("evil.example", False),
        ("testserver.evil.example", False),
        ("testserver@evil.example", False),
        ("", False),
        (None, False),
    ],
)
def test_host_allowed_checks_allowed_hosts(host, allowed):
    assert host_allowed(host) is allowed


@pytest.mark.parametrize(("secure", "host", "origin", "allowed"), ORIGIN_CASES, ids=ORIGIN_IDS)
def test_origin_allowed_compares_scheme_host_and_port_with_the_connection(secure, host, origin, allowed):
    connection = {"type": "http", "scheme": "https" if secure else "http", "headers": [(b"host", host.encode())]}

    assert origin_allowed(origin, connection_request(connection)) is allowed


def test_origin_allowed_admits_every_origin_with_a_wildcard(settings):
    mcp_tools_setting(settings, ALLOWED_ORIGINS=["*"])

    assert [origin_allowed(o, handshake_request(HOST)) for o in ("http://evil.example", "null")] == [True, True]


def test_origin_allowed_ignores_entries_that_are_not_full_origins(settings):
    mcp_tools_setting(settings, ALLOWED_ORIGINS=["evil.example", ".evil.example", "http://.evil.example"])
    settings.CSRF_TRUSTED_ORIGINS = ["evil.example"]

    assert origin_allowed("http://evil.example", handshake_request(HOST)) is False


def test_allowed_origins_that_is_not_a_list_trusts_nothing(settings):
    mcp_tools_setting(settings, ALLOWED_ORIGINS="https://*.evil.example")

    assert origin_allowed("https://a.evil.example", handshake_request(HOST)) is False


@pytest.mark.parametrize(
    ("scope_scheme", "kind", "expected"),
    [("ws", "websocket", "http"), ("wss", "websocket", "https"), ("http", "http", "http"), ("https", "http", "https")],
)
def test_connection_origin_is_the_scheme_of_the_connection_and_its_host(scope_scheme, kind, expected):
    connection = {"type": kind, "scheme": scope_scheme, "headers": [(b"host", b"[::1]:8000")]}

    assert connection_origin(connection_request(connection)) == f"{expected}://[::1]:8000"


def test_a_misconfigured_secure_proxy_ssl_header_is_reported_like_django_does(settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO",)

    with pytest.raises(ImproperlyConfigured, match="SECURE_PROXY_SSL_HEADER"):
        origin_allowed("http://testserver", handshake_request(HOST))


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ([HOST], None),
        ([HOST, (b"origin", b"http://testserver")], None),
        ([(b"host", b"evil.example")], "host"),
        ([(b"host", b"evil.example"), (b"origin", b"http://evil.example")], "host"),
        ([HOST, (b"origin", b"http://evil.example")], "origin"),
        ([], "host"),
    ],
)
def test_connection_problem_names_what_to_refuse(headers, problem):
    assert connection_problem(handshake_request(*headers)) == problem


@pytest.mark.django_db
def test_a_recently_seen_token_is_answered_from_memory_until_it_is_revoked(settings: Any, token: str) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from mcp_tools.access.authentication import forget_tokens

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TOKEN_CACHE_SECONDS": 60}
    forget_tokens()
    first_user, first_token = user_for_token(token)
    with CaptureQueriesContext(connection) as queries:
        again_user, again_token = user_for_token(token)
    assert (again_user, again_token) == (first_user, first_token)
    assert len(queries) == 0
    first_token.delete()
    with pytest.raises(AuthenticationFailed):
        user_for_token(token)


def test_a_full_token_cache_drops_the_token_used_longest_ago() -> None:
    recent = RecentTokens(limit=2)
    for digest in ("a", "b"):
        recent.put(digest, f"user-{digest}", f"token-{digest}", ttl=60, generation=recent.generation)

    assert recent.get("a") == ("user-a", "token-a")
    recent.put("c", "user-c", "token-c", ttl=60, generation=recent.generation)

    assert (len(recent), "a" in recent, "b" in recent, "c" in recent) == (2, True, False, True)


def test_a_remembered_token_past_its_seconds_is_a_miss_and_is_dropped() -> None:
    recent = RecentTokens(limit=2)
    recent.put("a", "user-a", "token-a", ttl=0, generation=recent.generation)

    assert (recent.get("a"), "a" in recent) == (None, False)


def test_a_lookup_that_began_before_the_cache_was_cleared_is_not_remembered() -> None:
    recent = RecentTokens(limit=2)
    began = recent.generation

    recent.clear()
    recent.put("a", "user-a", "token-a", ttl=60, generation=began)

    assert (recent.get("a"), len(recent)) == (None, 0)


def test_the_token_cache_stays_within_its_limit_under_concurrent_use() -> None:
    recent = RecentTokens(limit=50)
    failures: list[BaseException] = []

    def churn(worker: int) -> None:
        try:
            for number in range(2000):
                digest = f"{worker}-{number % 80}"
                recent.put(digest, worker, number, ttl=60, generation=recent.generation)
                recent.get(f"{worker}-{(number * 7) % 80}")
                if number % 500 == 0:
                    recent.clear()
        except BaseException as exc:  # reported below, in the test's own thread
            failures.append(exc)

    threads = [threading.Thread(target=churn, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)

    assert (failures, any(thread.is_alive() for thread in threads), len(recent) <= 50) == ([], False, True)


@pytest.mark.django_db
def test_a_full_token_cache_keeps_the_tokens_clients_keep_using(
    settings: Any, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TOKEN_CACHE_SECONDS": 60}
    monkeypatch.setattr(authentication._recent, "limit", 2)
    forget_tokens()
    busy, idle, newcomer = (AccessToken.objects.issue(user, name=name)[1] for name in ("busy", "idle", "new"))
    for raw in (busy, idle, busy, newcomer):
        user_for_token(raw)

    with CaptureQueriesContext(connection) as busy_again:
        user_for_token(busy)
    with CaptureQueriesContext(connection) as idle_again:
        user_for_token(idle)

    assert (len(busy_again), len(idle_again) > 0) == (0, True)
