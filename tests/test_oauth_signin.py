"""Signing in and out of the consent flow: the package's own sign-in page, a site's own, and the check that
warns when the sign-in page cannot render."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from django.core import checks
from django.test import Client

from tests.oauth import Pkce, application, authorize_url
from tests.system_checks import mcp_checks

pytestmark = pytest.mark.django_db

LOGIN = "/oauth/login/"
LOGOUT = "/oauth/logout/"
PASSWORD = "pw"  # tests/conftest.py's user fixture
W014_HINT = (
    "Include mcp_tools.oauth.urls and leave MCP_TOOLS['OAUTH_LOGIN_URL'] unset to use the package's sign-in "
    "page, or set it to a sign-in page of the site that exists."
)


def sign_in_first(url: str, login: str = LOGIN) -> str:
    return f"{login}?next={quote(url, safe='/')}"


def login_url_setting(settings: Any, value: str) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "OAUTH_LOGIN_URL": value}


def w014(problem: str) -> checks.Warning:
    return checks.Warning(
        f"The consent flow's sign-in page {problem}: people cannot sign in to connect an MCP client.",
        hint=W014_HINT,
        id="mcp_tools.W014",
    )


# The package's sign-in page ------------------------------------------------------------------------------


def test_the_sign_in_page_extends_the_oauth_pages_look(client: Client) -> None:
    url = authorize_url(application().client_id, Pkce())

    page = client.get(sign_in_first(url))

    assert page.status_code == 200
    assert [t.name for t in page.templates[:2]] == ["mcp_tools/oauth/login.html", "mcp_tools/oauth/base.html"]
    html = page.content.decode()
    assert '<meta name="referrer" content="same-origin">' in html
    assert f'<input type="hidden" name="next" value="{url.replace("&", "&amp;")}">' in html


def test_signing_in_leads_back_to_the_authorization_request(client: Client, user: Any) -> None:
    url = authorize_url(application().client_id, Pkce())
    page = client.get(client.get(url)["Location"])

    signed_in = client.post(page.request["PATH_INFO"] + "?" + page.request["QUERY_STRING"], credentials(url))

    assert (signed_in.status_code, signed_in["Location"]) == (302, url)
    consent = client.get(url)
    assert consent.status_code == 200
    assert "Signed in as <strong>alice</strong>." in consent.content.decode()


def test_signing_in_without_a_request_to_return_to_leads_to_the_connected_apps(client: Client, user: Any) -> None:
    response = client.post(LOGIN, credentials(None))

    assert (response.status_code, response["Location"]) == (302, "/oauth/apps/")


def test_signing_in_never_leads_to_another_site(client: Client, user: Any) -> None:
    response = client.post(LOGIN, credentials("https://evil.example/oauth/authorize/"))

    assert (response.status_code, response["Location"]) == (302, "/oauth/apps/")


def test_a_wrong_password_is_refused_on_the_page_and_signs_no_one_in(client: Client, user: Any) -> None:
    response = client.post(LOGIN, {"username": "alice", "password": "wrong"})

    assert response.status_code == 200
    assert 'class="note error" role="alert"' in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_signing_in_needs_the_csrf_token(user: Any) -> None:
    browser = Client(enforce_csrf_checks=True)

    response = browser.post(LOGIN, credentials(None))

    assert response.status_code == 403
    assert "_auth_user_id" not in browser.session


def credentials(next_url: str | None) -> dict[str, str]:
    return {"username": "alice", "password": PASSWORD, **({"next": next_url} if next_url else {})}


# Signing out -----------------------------------------------------------------------------------------------


def test_signing_out_needs_a_post_with_the_csrf_token(user: Any) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)

    answers = [browser.get(LOGOUT), browser.post(LOGOUT)]

    assert [a.status_code for a in answers] == [405, 403]
    assert browser.session["_auth_user_id"] == str(user.pk)


def test_signing_out_without_a_request_to_return_to_leads_to_sign_in(browser: Client) -> None:
    response = browser.post(LOGOUT)

    assert (response.status_code, response["Location"]) == (302, LOGIN)
    assert "_auth_user_id" not in browser.session


def test_signing_out_never_leads_to_another_site(browser: Client) -> None:
    response = browser.post(LOGOUT, {"next": "https://evil.example/"})

    assert (response.status_code, response["Location"]) == (302, LOGIN)


# A sign-in of the site's own ---------------------------------------------------------------------------


def test_a_site_that_names_its_own_sign_in_sends_people_there_and_serves_no_password_form(
    client: Client, browser: Client, settings: Any
) -> None:
    login_url_setting(settings, "login")  # django.contrib.auth.urls, in tests/urls.py
    url = authorize_url(application().client_id, Pkce())

    answers = {
        "consent": client.get(url),
        "connected apps": client.get("/oauth/apps/"),
        "package sign-in": client.get(sign_in_first(url)),
        "sign out": browser.post(LOGOUT),
    }

    assert {name: (a.status_code, a.get("Location")) for name, a in answers.items()} == {
        "consent": (302, sign_in_first(url, "/accounts/login/")),
        "connected apps": (302, "/accounts/login/?next=/oauth/apps/"),
        "package sign-in": (404, None),
        "sign out": (302, "/accounts/login/"),
    }


def test_a_sign_in_on_another_host_is_given_the_whole_request_to_return_to(browser: Client, settings: Any) -> None:
    login_url_setting(settings, "https://sso.example/login")
    url = authorize_url(application().client_id, Pkce())
    page = browser.get(url)

    signed_out = browser.post(LOGOUT, {"next": page.context["sign_in_again_url"]})

    back = f"https://sso.example/login?next={quote('http://testserver' + url, safe='/')}"
    assert page.context["sign_in_again_url"] == back
    assert (signed_out.status_code, signed_out["Location"]) == (302, back)
    assert Client().get(url)["Location"] == back


# The check ---------------------------------------------------------------------------------------------------


def test_the_package_sign_in_page_passes_the_check() -> None:
    assert [m for m in mcp_checks() if m.id == "mcp_tools.W014"] == []


@pytest.mark.parametrize(
    ("setting", "problem"),
    [
        ("no-such-page", "'no-such-page' is not a URL name of the site"),
        ("/nowhere/", "/nowhere/ is not routed"),
        # Django's login view with no registration/login.html anywhere: a fresh project's 500.
        ("login", "/accounts/login/ needs the template registration/login.html, which does not exist"),
    ],
    ids=["unknown name", "unrouted path", "missing template"],
)
def test_a_sign_in_page_that_cannot_render_is_a_warning(settings: Any, setting: str, problem: str) -> None:
    login_url_setting(settings, setting)

    assert [m for m in mcp_checks() if m.id == "mcp_tools.W014"] == [w014(problem)]


def test_a_sign_in_page_on_another_host_is_not_checked(settings: Any) -> None:
    login_url_setting(settings, "https://sso.example/login")

    assert [m for m in mcp_checks() if m.id == "mcp_tools.W014"] == []


def test_a_site_sign_in_with_its_template_passes_the_check(settings: Any, tmp_path: Any) -> None:
    template = tmp_path / "registration" / "login.html"
    template.parent.mkdir()
    template.write_text("{{ form }}")
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path]}]
    login_url_setting(settings, "login")

    assert [m for m in mcp_checks() if m.id == "mcp_tools.W014"] == []
