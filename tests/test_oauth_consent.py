"""The consent page: who asks, where the browser returns, what the user would grant, and who may see it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client

from mcp_tools.models import Tool, UserGrant
from mcp_tools.oauth.clients import ClientIdentity, Destination
from tests.cimd_host import MetadataHost, client_metadata, metadata_host
from tests.oauth import AUTHORIZE, REGISTER, Pkce, answer, application, authorize_url

pytestmark = pytest.mark.django_db

PAGE_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "Referrer-Policy": "same-origin",
}
SELF_DECLARED = "Its name is self-declared and unverified"


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MetadataHost]:
    with metadata_host(tmp_path, monkeypatch) as serving:
        yield serving


def consent(browser: Client, client_id: str, redirect_uri: str = "https://client.example/callback") -> Any:
    page = browser.get(authorize_url(client_id, Pkce(), redirect_uri))
    assert page.status_code == 200, page.content
    return page


def test_the_page_names_the_client_its_id_and_the_host_the_browser_returns_to(browser: Client) -> None:
    client = application("Claude")

    page = consent(browser, client.client_id)

    assert page.context["client"] == ClientIdentity(
        name="Claude",
        client_id=client.client_id,
        source="manual",
        source_label="Manual",
        verified_host="",
        self_declared=False,
    )
    assert page.context["destination"] == Destination("client.example", on_this_device=False)
    assert SELF_DECLARED not in page.content.decode()


def test_a_loopback_redirect_returns_to_an_application_on_this_device(browser: Client) -> None:
    client = application()

    page = consent(browser, client.client_id, "http://127.0.0.1:50111/callback")

    assert page.context["destination"] == Destination("127.0.0.1:50111", on_this_device=True)


def test_the_page_names_the_signed_in_user_with_a_sign_out_that_comes_back_here(browser: Client) -> None:
    client = application()
    url = authorize_url(client.client_id, Pkce())

    page = browser.get(url)

    html = page.content.decode()
    assert "Signed in as <strong>alice</strong>." in html
    assert '<form class="inline" method="post" action="/oauth/logout/">' in html
    assert f'name="next" value="/oauth/login/?next={quote(url, safe="/")}"' in html


def test_signing_out_from_the_page_leads_to_sign_in_and_back_to_the_request(browser: Client) -> None:
    client = application()
    url = authorize_url(client.client_id, Pkce())
    page = browser.get(url)

    response = browser.post("/oauth/logout/", {"next": page.context["sign_in_again_url"]})

    assert (response.status_code, response["Location"]) == (302, f"/oauth/login/?next={quote(url, safe='/')}")
    assert browser.get(url)["Location"] == f"/oauth/login/?next={quote(url, safe='/')}"


def test_the_page_lists_the_tools_the_user_may_list_and_no_other(
    browser: Client, tools: None, django_user_model: Any
) -> None:
    Tool.objects.filter(name="add").update(everyone=False)
    Tool.objects.get(name="add").save()  # the catalog hears of the change
    UserGrant.objects.create(tool=Tool.objects.get(name="add"), user=django_user_model.objects.create_user("bob"))
    everyone = set(Tool.objects.filter(enabled=True, everyone=True).values_list("name", flat=True))
    client = application()

    page = consent(browser, client.client_id)

    assert [entry.name for entry in page.context["tools"]] == sorted(everyone)
    assert "add" not in everyone
    assert "<code>greet</code>" in page.content.decode()


def test_the_tools_follow_the_permission_classes_that_tools_list_follows(
    browser: Client, tools: None, settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PERMISSION_CLASSES": ["mcp_tools.access.permissions.IsStaffUser"]}
    client = application()

    page = consent(browser, client.client_id)

    assert list(page.context["tools"]) == []
    assert "You have no tools on this site at the moment." in page.content.decode()


def test_a_self_registered_client_is_marked_self_declared_and_unverified(browser: Client) -> None:
    metadata = {
        "client_name": "Claude",
        "redirect_uris": ["https://client.example/callback"],
        "token_endpoint_auth_method": "none",
    }
    registered = Client().post(REGISTER, json.dumps(metadata), content_type="application/json")
    assert registered.status_code == 201, registered.content
    client_id = registered.json()["client_id"]

    page = consent(browser, client_id)

    assert page.context["client"] == ClientIdentity(
        name="Claude",
        client_id=client_id,
        source="dcr",
        source_label="Dynamic Client Registration",
        verified_host="",
        self_declared=True,
    )
    assert SELF_DECLARED in page.content.decode()


def test_a_metadata_document_client_is_identified_by_the_host_of_its_client_id(
    browser: Client, host: MetadataHost
) -> None:
    path = f"/connectors/{uuid.uuid4().hex}.json"
    client_id = host.url(path)
    host.document(path, client_metadata(client_id, name="Example Connector"))

    page = consent(browser, client_id)

    assert page.context["client"] == ClientIdentity(
        name="Example Connector",
        client_id=client_id,
        source="cimd",
        source_label="Client ID Metadata Document",
        verified_host="client.example",
        self_declared=False,
    )
    assert "<dt>Identified by</dt>\n      <dd><strong>client.example</strong>" in page.content.decode()
    assert host.requests == [path]


def test_a_signed_out_user_is_sent_to_sign_in_first(client: Client) -> None:
    app = application()
    url = authorize_url(app.client_id, Pkce())

    response = client.get(url)

    assert (response.status_code, response["Location"]) == (302, f"/oauth/login/?next={quote(url, safe='/')}")


PAGES = ["consent", "error", "answer", "connected apps", "revoke", "sign in first", "sign in", "sign out"]


@pytest.mark.parametrize("page", PAGES)
def test_no_page_of_the_flow_may_be_framed_nor_send_a_referrer_to_other_sites(
    browser: Client, page: str, settings: Any
) -> None:
    # A site's own policy, even one that sends no referrer at all, must not reach these pages: with
    # no-referrer, browsers post their forms with "Origin: null", which the CSRF check refuses.
    settings.MIDDLEWARE = ["django.middleware.security.SecurityMiddleware", *settings.MIDDLEWARE]
    settings.SECURE_REFERRER_POLICY = "no-referrer"
    settings.X_FRAME_OPTIONS = "SAMEORIGIN"
    client = application()
    url = authorize_url(client.client_id, Pkce())
    if page == "consent":
        response = browser.get(url)
    elif page == "error":
        response = browser.get(authorize_url("no-such-client", Pkce()))
    elif page == "answer":
        response = answer(browser, browser.get(url), allow=False)
    elif page == "connected apps":
        response = browser.get("/oauth/apps/")
    elif page == "revoke":
        response = browser.post(f"/oauth/apps/{client.pk}/revoke/")
    elif page == "sign in first":
        response = Client().get(url)
    elif page == "sign in":
        response = Client().get("/oauth/login/")
    else:
        response = browser.post("/oauth/logout/")

    assert {name: response.get(name) for name in PAGE_HEADERS} == PAGE_HEADERS


def test_a_consent_form_that_comes_back_altered_is_refused_without_a_redirect(browser: Client) -> None:
    response = browser.post(AUTHORIZE, {"allow": "Authorize", "scope": "mcp"})

    assert response.status_code == 200
    assert "Location" not in response
    assert "came back incomplete or altered" in response.content.decode()


def test_a_site_restyles_every_page_by_overriding_one_template(browser: Client, tmp_path: Path, settings: Any) -> None:
    override = tmp_path / "mcp_tools" / "oauth" / "base.html"
    override.parent.mkdir(parents=True)
    override.write_text('<div class="my-site">{% block content %}{% endblock %}</div>')
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path]}]
    client = application("Claude")

    pages = [browser.get(authorize_url(client.client_id, Pkce())), browser.get("/oauth/apps/")]

    for page in pages:
        html = page.content.decode()
        assert html.startswith('<div class="my-site">') and html.endswith("</div>"), html
    assert "Connect Claude to your account?" in pages[0].content.decode()
    assert "Connected apps" in pages[1].content.decode()
