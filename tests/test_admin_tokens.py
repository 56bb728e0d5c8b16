"""The admin issues access tokens with the default lifetime unless told otherwise, and says when each expires."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.messages import WARNING
from django.utils import timezone
from django.utils.formats import date_format

from mcp_tools.models import AccessToken, hash_token

pytestmark = pytest.mark.django_db

TOKENS_URL = "/admin/mcp_tools/accesstoken/"
SECRET = re.compile(r"<code>(mcp_[A-Za-z0-9_-]+)</code>")


def add(admin_client: Any, user: Any, **fields: str) -> Any:
    data = {"user": user.pk, "name": "laptop", "expires_at_0": "", "expires_at_1": "", **fields}
    return admin_client.post(f"{TOKENS_URL}add/", data, follow=True)


def shown(response: Any) -> str:
    [warning] = [str(m.message) for m in response.context["messages"] if m.level == WARNING]
    return warning


def secret_message(raw: str, expiry: str) -> str:
    return f"Copy this token now; it will not be shown again: <code>{raw}</code> {expiry}"


def on(when: datetime) -> str:
    return date_format(timezone.localtime(when), "DATETIME_FORMAT")


def form_errors(response: Any) -> dict[str, list[str]]:
    return {field: list(errors) for field, errors in response.context["adminform"].form.errors.items()}


def test_the_add_form_offers_the_default_lifetime_first_then_a_date_or_never(admin_client):
    form = admin_client.get(f"{TOKENS_URL}add/").context["adminform"].form

    assert [(value, str(label)) for value, label in form.fields["expiry"].choices] == [
        ("default", "After 90 days (the default)"),
        ("date", "On the date below"),
        ("never", "Never"),
    ]
    assert form.fields["expiry"].initial == "default"


def test_a_token_added_with_the_default_lifetime_expires_after_it_and_says_when_beside_its_secret(admin_client, user):
    before = timezone.now()

    response = add(admin_client, user, expiry="default")

    token = AccessToken.objects.get()
    raw = SECRET.search(shown(response)).group(1)
    assert token.digest == hash_token(raw)
    assert before + timedelta(days=90) <= token.expires_at <= timezone.now() + timedelta(days=90)
    assert shown(response) == secret_message(raw, f"It expires on {on(token.expires_at)}.")


def test_a_token_added_to_never_expire_has_no_expiry_and_says_so(admin_client, user):
    response = add(admin_client, user, expiry="never", expires_at_0="2099-01-01", expires_at_1="00:00:00")

    token = AccessToken.objects.get()
    raw = SECRET.search(shown(response)).group(1)
    assert token.expires_at is None
    assert shown(response) == secret_message(raw, "It never expires.")


def test_a_token_added_with_a_date_expires_on_that_date(admin_client, user):
    response = add(admin_client, user, expiry="date", expires_at_0="2099-01-02", expires_at_1="03:04:05")

    token = AccessToken.objects.get()
    assert timezone.localtime(token.expires_at).replace(tzinfo=None) == datetime(2099, 1, 2, 3, 4, 5)
    assert shown(response).endswith(f"It expires on {on(token.expires_at)}.")


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({}, "Give the date the token expires on, or choose another expiry."),
        (
            {"expires_at_0": "2000-01-01", "expires_at_1": "00:00:00"},
            "The date has passed: a token issued now must expire later.",
        ),
    ],
)
def test_a_date_expiry_needs_a_date_to_come(admin_client, user, fields, error):
    response = add(admin_client, user, expiry="date", **fields)

    assert form_errors(response) == {"expires_at": [error]}
    assert not AccessToken.objects.exists()


def test_without_a_default_lifetime_the_add_form_starts_at_never(admin_client, user, settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TOKEN_LIFETIME_DAYS": None}
    form = admin_client.get(f"{TOKENS_URL}add/").context["adminform"].form

    response = add(admin_client, user)

    assert [value for value, _label in form.fields["expiry"].choices] == ["date", "never"]
    assert form.fields["expiry"].initial == "never"
    assert AccessToken.objects.get().expires_at is None
    assert shown(response).endswith("It never expires.")


def test_the_token_list_shows_when_each_token_expires_or_that_it_never_does(admin_client, user):
    dated, _ = AccessToken.objects.issue(user, name="dated", days=7)
    AccessToken.objects.issue(user, name="forever", days=None)

    page = admin_client.get(TOKENS_URL).content.decode()

    cells = re.findall(r'<td class="field-expires(?: nowrap)?">([^<]*)</td>', page)
    assert sorted(cells) == sorted([on(dated.expires_at), "never"])


def test_changing_a_token_keeps_the_expiry_it_has(admin_client, user):
    token, _ = AccessToken.objects.issue(user, name="old", days=None)

    response = admin_client.post(
        f"{TOKENS_URL}{token.pk}/change/", {"name": "renamed", "expires_at_0": "", "expires_at_1": ""}
    )

    assert response.status_code == 302
    token.refresh_from_db()
    assert (token.name, token.expires_at) == ("renamed", None)
