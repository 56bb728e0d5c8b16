"""Connected apps: the user's page and its revoke button, the admin of clients and tokens, and the cleanup command."""

from __future__ import annotations

import io
import secrets
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)
from oauth2_provider.settings import oauth2_settings

from tests.challenges import refused_token
from tests.db import db_call
from tests.live.asgi_http import HttpClient, request
from tests.oauth import RESOURCE, application, consented_access_token

AccessToken = get_access_token_model()
RefreshToken = get_refresh_token_model()
Grant = get_grant_model()
Application = get_application_model()

pytestmark = pytest.mark.django_db


@pytest.fixture
def bob(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("bob", password="pw")


def ago(**delta: float) -> datetime:
    return timezone.now() - timedelta(**delta)


def dated(row: Any, created: datetime) -> Any:
    type(row).objects.filter(pk=row.pk).update(created=created)
    row.created = created
    return row


def issue(user: Any, app: Any, *, expires: datetime | None = None, **fields: Any) -> Any:
    """An access token, as the token endpoint saves one."""
    return AccessToken.objects.create(
        user=user,
        application=app,
        token=secrets.token_urlsafe(30),
        expires=expires or timezone.now() + timedelta(hours=1),
        scope="mcp",
        resource=[RESOURCE],
        **fields,
    )


def refresh(user: Any, app: Any, access: Any | None, family: uuid.UUID, **fields: Any) -> Any:
    return RefreshToken.objects.create(
        user=user, application=app, token=secrets.token_urlsafe(30), access_token=access, token_family=family, **fields
    )


def grant(user: Any, app: Any, *, expires: datetime | None = None) -> Any:
    return Grant.objects.create(
        user=user,
        application=app,
        code=secrets.token_urlsafe(20),
        expires=expires or timezone.now() + timedelta(minutes=1),
        redirect_uri="https://client.example/callback",
        scope="mcp",
    )


def registration_token(app: Any, user: Any = None) -> Any:
    """The token a dynamically registered client manages its registration with (RFC 7592)."""
    far = timezone.now() + timedelta(days=3650)
    return AccessToken.objects.create(
        user=user,
        application=app,
        token=secrets.token_urlsafe(30),
        expires=far,
        scope=oauth2_settings.DCR_REGISTRATION_SCOPE,
    )


def rows(user: Any, app: Any) -> tuple[int, int, int]:
    """How many access tokens, refresh tokens and grants ``user`` holds for ``app``."""
    mine = {"user": user, "application": app}
    return (
        AccessToken.objects.filter(**mine).count(),
        RefreshToken.objects.filter(**mine).count(),
        Grant.objects.filter(**mine).count(),
    )


# The user's page --------------------------------------------------------------------------------------------


def test_the_page_lists_each_app_the_user_authorized_with_when_and_until_when(
    browser: Client, user: Any, bob: Any
) -> None:
    alpha, beta, bobs, own, over = (application(name) for name in ("Alpha", "beta", "Bob's", "Own", "Over"))
    # Alpha: authorized ten days ago and refreshed since, then again two hours ago.
    first = refresh(user, alpha, None, uuid.UUID(int=1), revoked=ago(days=9))
    dated(first, ago(days=10))
    refreshed = issue(user, alpha, source_refresh_token=first, expires=timezone.now() + timedelta(minutes=20))
    dated(refresh(user, alpha, refreshed, uuid.UUID(int=1)), ago(days=9))
    authorized_again = ago(hours=2)
    again = dated(issue(user, alpha, expires=timezone.now() + timedelta(minutes=50)), authorized_again)
    dated(refresh(user, alpha, again, uuid.UUID(int=2)), authorized_again)
    # beta: a code not redeemed yet. Bob's: another user's. Own: only the token of its own registration.
    pending = dated(grant(user, beta), ago(seconds=30))
    issue(bob, bobs)
    registration_token(own, user)
    # Over: a revoked family and an expired token; nothing left that works.
    dated(refresh(user, over, None, uuid.UUID(int=3), revoked=ago(days=1)), ago(days=2))
    issue(user, over, expires=ago(minutes=1))

    page = browser.get("/oauth/apps/")

    listed = [
        (a.application, a.first_authorized, a.last_authorized, a.token_expires) for a in page.context["authorizations"]
    ]
    assert listed == [
        (alpha, first.created, again.created, again.expires),
        (beta, pending.created, pending.created, None),
    ]
    html = page.content.decode()
    assert f'<form method="post" action="/oauth/apps/{alpha.pk}/revoke/">' in html
    assert "Bob&#x27;s" not in html and "Own" not in html and "Over" not in html


def test_with_nothing_authorized_the_page_says_so(browser: Client) -> None:
    page = browser.get("/oauth/apps/")

    assert page.context["authorizations"] == []
    assert "No application can use your tools." in page.content.decode()


def test_the_page_needs_a_signed_in_user(client: Client) -> None:
    response = client.get("/oauth/apps/")

    assert (response.status_code, response["Location"]) == (302, "/oauth/login/?next=/oauth/apps/")


def test_revoking_deletes_the_users_tokens_and_grants_for_that_app_only(user: Any, bob: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    alpha, beta = application("Alpha"), application("Beta")
    for holder, app in ((user, alpha), (bob, alpha), (user, beta)):
        refresh(holder, app, issue(holder, app), uuid.uuid4())
        grant(holder, app)
    own = registration_token(alpha, user)
    browser.get("/oauth/apps/")

    response = browser.post(
        f"/oauth/apps/{alpha.pk}/revoke/", {"csrfmiddlewaretoken": browser.cookies["csrftoken"].value}
    )

    assert (response.status_code, response["Location"]) == (302, "/oauth/apps/")
    assert (rows(user, alpha), rows(bob, alpha), rows(user, beta)) == ((1, 0, 0), (1, 1, 1), (1, 1, 1))
    assert AccessToken.objects.filter(user=user, application=alpha).get() == own
    assert "Alpha can no longer use your tools." in browser.get("/oauth/apps/").content.decode()


def test_revoking_needs_a_post_with_the_csrf_token(user: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    alpha = application("Alpha")
    refresh(user, alpha, issue(user, alpha), uuid.uuid4())

    statuses = [
        browser.get(f"/oauth/apps/{alpha.pk}/revoke/").status_code,
        browser.post(f"/oauth/apps/{alpha.pk}/revoke/").status_code,
    ]

    assert statuses == [405, 403]
    assert rows(user, alpha) == (1, 1, 0)


def test_revoking_an_app_the_user_never_authorized_looks_like_revoking_nothing(
    browser: Client, user: Any, bob: Any
) -> None:
    # Another user's app (which exists) and an id no app has are answered alike, and nothing of bob's goes.
    theirs = application("Theirs")
    issue(bob, theirs)
    answers = [browser.post(f"/oauth/apps/{pk}/revoke/") for pk in (theirs.pk, 999999)]

    assert [(a.status_code, a["Location"]) for a in answers] == [(302, "/oauth/apps/")] * 2
    assert rows(bob, theirs)[0] == 1


@pytest.mark.django_db(transaction=True)
async def test_a_revoked_token_no_longer_works_at_the_mcp_endpoint_nor_in_its_open_session(
    user: Any, tools: None
) -> None:
    browser = Client()
    await db_call(browser.force_login, user)
    alpha = await db_call(application, "Alpha")
    mcp = HttpClient(await db_call(consented_access_token, browser, alpha.client_id))
    await mcp.initialize()
    assert (await mcp.send(request(1, "ping"))).status == 200

    revoked = await db_call(browser.post, f"/oauth/apps/{alpha.pk}/revoke/")

    assert revoked.status_code == 302
    assert await db_call(rows, user, alpha) == (0, 0, 0)
    in_session = await mcp.send(request(2, "ping"))
    assert (in_session.status, in_session.headers["www-authenticate"]) == (401, refused_token())
    mcp.session_id = mcp.protocol_version = None
    anew = await mcp.send(request(0, "initialize", {}))
    assert (anew.status, anew.headers["www-authenticate"]) == (401, refused_token())
    await mcp.close()


# The admin --------------------------------------------------------------------------------------------------


def test_the_admin_lists_each_app_with_its_source_owner_live_tokens_and_last_token(
    admin_client: Client, user: Any, bob: Any
) -> None:
    manual = application("Manual", source="manual")
    Application.objects.filter(pk=manual.pk).update(user=user)
    dcr = application("Registered", source="dcr")
    application("Document", source="cimd")
    dated(issue(user, dcr), ago(minutes=5))
    latest = dated(issue(bob, dcr), ago(minutes=1))
    dated(issue(user, dcr, expires=ago(minutes=1)), ago(hours=2))
    registration_token(dcr)  # newer, but no user's

    page = admin_client.get("/admin/oauth2_provider/application/")

    shown = [
        (app.name, app.registration_source, app.user, app.live_token_count, app.last_token_at)
        for app in page.context["cl"].result_list
    ]
    assert sorted(shown, key=lambda row: row[0]) == [
        ("Document", "cimd", None, 0, None),
        ("Manual", "manual", user, 0, None),
        ("Registered", "dcr", None, 2, latest.created),
    ]
    html = page.content.decode()
    assert "Live access tokens" in html and "Last token issued" in html and "Registration source" in html


def test_the_admin_never_shows_a_token_or_code_not_even_in_part(admin_client: Client, user: Any) -> None:
    app = application("Alpha")
    access = issue(user, app)
    refreshing = refresh(user, app, access, uuid.uuid4())
    code = grant(user, app)
    secrets_ = [access.token, refreshing.token, code.code]
    pages = [
        "/admin/oauth2_provider/application/",
        f"/admin/oauth2_provider/application/{app.pk}/change/",
        "/admin/oauth2_provider/accesstoken/",
        f"/admin/oauth2_provider/accesstoken/{access.pk}/change/",
        "/admin/oauth2_provider/refreshtoken/",
        f"/admin/oauth2_provider/refreshtoken/{refreshing.pk}/change/",
        "/admin/oauth2_provider/grant/",
        f"/admin/oauth2_provider/grant/{code.pk}/change/",
        f"/admin/oauth2_provider/accesstoken/?q={access.token[-6:]}",
    ]

    for url in pages:
        response = admin_client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        leaked = [secret for secret in secrets_ if secret in html or f"…{secret[-4:]}" in html]
        assert leaked == [], url
        assert access.token_checksum not in html, url
    assert (
        admin_client.get(f"/admin/oauth2_provider/accesstoken/?q={access.token[-6:]}").context["cl"].result_count == 0
    )


def test_the_admin_revokes_every_token_and_grant_of_the_chosen_apps(admin_client: Client, user: Any, bob: Any) -> None:
    alpha, beta = application("Alpha"), application("Beta")
    for holder, app in ((user, alpha), (bob, alpha), (user, beta)):
        refresh(holder, app, issue(holder, app), uuid.uuid4())
        grant(holder, app)

    response = admin_client.post(
        "/admin/oauth2_provider/application/", {"action": "revoke_tokens", "_selected_action": [alpha.pk]}, follow=True
    )

    assert (rows(user, alpha), rows(bob, alpha), rows(user, beta)) == ((0, 0, 0), (0, 0, 0), (1, 1, 1))
    assert [str(message) for message in response.context["messages"]] == ["Revoked 2 access tokens."]


def stale_and_not(user: Any) -> dict[str, Any]:
    """Clients of every kind and age, some in use: the stale ones are ``unused dcr``, ``unused cimd``,
    ``managed only`` and ``expired only``."""
    old = ago(days=31)
    apps = {
        name: dated(application(name, source=source), old)
        for name, source in [
            ("unused dcr", "dcr"),
            ("unused cimd", "cimd"),
            ("managed only", "dcr"),
            ("expired only", "dcr"),
            ("live token", "dcr"),
            ("live refresh", "cimd"),
            ("pending grant", "dcr"),
            ("manual", "manual"),
        ]
    }
    apps["recent"] = dated(application("recent", source="dcr"), ago(days=29))
    registration_token(apps["managed only"])
    issue(user, apps["expired only"], expires=ago(hours=1))
    issue(user, apps["live token"])
    # Its access token expired an hour ago; the refresh token renews it for REFRESH_TOKEN_EXPIRE_SECONDS.
    refresh(user, apps["live refresh"], issue(user, apps["live refresh"], expires=ago(hours=1)), uuid.uuid4())
    grant(user, apps["pending grant"])
    return apps


STALE = ["unused dcr", "unused cimd", "managed only", "expired only"]


def remaining() -> list[str]:
    return sorted(Application.objects.values_list("name", flat=True))


def test_the_admin_filters_stale_apps_and_deletes_only_those_chosen_that_are_stale(
    admin_client: Client, user: Any
) -> None:
    apps = stale_and_not(user)

    listed = admin_client.get("/admin/oauth2_provider/application/?stale=yes").context["cl"].result_list
    chosen = [apps["unused dcr"].pk, apps["live token"].pk, apps["manual"].pk]
    response = admin_client.post(
        "/admin/oauth2_provider/application/", {"action": "delete_stale", "_selected_action": chosen}, follow=True
    )

    assert sorted(app.name for app in listed) == sorted(STALE)
    assert remaining() == sorted(set(apps) - {"unused dcr"})
    assert [str(message) for message in response.context["messages"]] == [
        "Deleted 1 stale application; 2 are in use or not stale."
    ]


# The cleanup command ----------------------------------------------------------------------------------------


def cleanup(*args: str) -> str:
    out = io.StringIO()
    call_command("mcp_oauth_cleanup", *args, stdout=out)
    return out.getvalue()


def listing(verb: str, apps: dict[str, Any], names: list[str]) -> list[str]:
    chosen = sorted((apps[name] for name in names), key=lambda app: app.pk)
    return [
        f"{verb} {app.registration_source} client {app.client_id} ({app.name}), {app.created.date().isoformat()}"
        for app in chosen
    ]


def test_a_dry_run_prints_the_stale_clients_and_deletes_nothing(user: Any) -> None:
    apps = stale_and_not(user)

    out = cleanup("--dry-run")

    assert out.splitlines() == [
        *listing("Would delete", apps, STALE),
        "Would delete 4 unused client(s) registered more than 30 day(s) ago.",
    ]
    assert remaining() == sorted(apps)
    assert AccessToken.objects.filter(application=apps["expired only"]).exists()


def test_the_cleanup_clears_expired_tokens_then_deletes_the_stale_clients(user: Any) -> None:
    apps = stale_and_not(user)
    expired_elsewhere = issue(user, apps["live token"], expires=ago(seconds=1))

    out = cleanup()

    assert out.splitlines() == [
        "Expired tokens and grants deleted.",
        *listing("Deleted", apps, STALE),
        "Deleted 4 unused client(s) registered more than 30 day(s) ago.",
    ]
    assert remaining() == sorted(set(apps) - set(STALE))
    assert not AccessToken.objects.filter(pk=expired_elsewhere.pk).exists()


@pytest.mark.parametrize(
    ("args", "retention", "deleted"), [((), 5, ["six days"]), (("--days", "3"), 30, ["four days", "six days"])]
)
def test_the_age_comes_from_the_setting_unless_given(
    args: tuple[str, ...], retention: int, deleted: list[str], settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "OAUTH_CLIENT_RETENTION_DAYS": retention}
    for name, days in (("two days", 2), ("four days", 4), ("six days", 6)):
        dated(application(name, source="dcr"), ago(days=days))

    cleanup(*args)

    assert remaining() == sorted({"two days", "four days", "six days"} - set(deleted))


def test_a_negative_age_is_refused() -> None:
    with pytest.raises(CommandError) as refused:
        cleanup("--days", "-1")

    assert str(refused.value) == "--days must be zero or more."
