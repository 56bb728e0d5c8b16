"""Which tools a connected app gets: all the user's, the read-only ones or a chosen few, chosen on the consent
page, changed on the connected-apps page, enforced on every listing and call like a grant."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from oauth2_provider.models import get_grant_model

from mcp_tools.models import AccessToken, Tool, UserGrant
from mcp_tools.oauth.consents import choose
from mcp_tools.oauth.forms import CHOOSE_ONE
from mcp_tools.oauth.models import Consent
from mcp_tools.tools.catalog import catalog
from tests.db import db_call
from tests.live.asgi_http import HttpClient, modern_headers, modern_request
from tests.messages import LIST_CHANGED
from tests.oauth import AUTHORIZE, Pkce, application, authorize_url, query, redeem
from tests.websocket import WSClient, ws_headers

pytestmark = pytest.mark.django_db

READ_ONLY = ["add"]  # the only tool of the test app marked read-only
WRITE_TOOL = "greet"
MAX_PAGES = 20


def consent_page(browser: Client, client_id: str, pkce: Pkce | None = None) -> Any:
    page = browser.get(authorize_url(client_id, pkce or Pkce()))
    assert page.status_code == 200, page.content
    return page


def submit(browser: Client, page: Any, reach: str, tools: list[int] | None = None, *, allow: bool = True) -> Any:
    """Post the consent form as the page's inputs would: its hidden fields, the choice, and Allow or Deny."""
    form = page.context["form"]
    data: dict[str, Any] = {
        name: value for name, value in form.initial.items() if value is not None and name not in ("reach", "tools")
    }
    data.update(reach=reach, tools=[str(pk) for pk in tools or []])
    if allow:
        data["allow"] = "Authorize"
    return browser.post(AUTHORIZE, data)


def token_with(browser: Client, client_id: str, reach: str, tools: list[int] | None = None) -> str:
    """The access token an app gets once its user allowed ``reach`` (and ``tools``) on the consent page."""
    pkce = Pkce()
    response = submit(browser, consent_page(browser, client_id, pkce), reach, tools)
    assert response.status_code == 302, response.content
    redeemed = redeem(Client(), client_id, query(response)["code"][0], pkce.verifier)
    assert redeemed.status_code == 200, redeemed.content
    return str(redeemed.json()["access_token"])


def tool_id(name: str) -> int:
    return int(Tool.objects.get(name=name).pk)


def enabled_names() -> list[str]:
    return sorted(Tool.objects.filter(enabled=True).values_list("name", flat=True))


async def listed(token: str) -> list[str]:
    """Every tool the token lists, page after page."""
    names: list[str] = []
    params: dict[str, Any] = {}
    for _page in range(MAX_PAGES):
        reply = await HttpClient(token).send(
            modern_request(1, "tools/list", params), headers=modern_headers("tools/list")
        )
        assert reply.status == 200, reply
        result = reply.json()["result"]
        names.extend(tool["name"] for tool in result["tools"])
        if not result.get("nextCursor"):
            return sorted(names)
        params = {"cursor": result["nextCursor"]}
    raise AssertionError(f"tools/list did not end within {MAX_PAGES} pages")


async def called(token: str, name: str) -> dict[str, Any]:
    params = {"name": name, "arguments": {"a": 1, "b": 2} if name == "add" else {"name": "x"}}
    reply = await HttpClient(token).send(
        modern_request(1, "tools/call", params), headers=modern_headers("tools/call", name)
    )
    assert reply.status == 200, reply
    return dict(reply.json())


def without_name(answer: dict[str, Any], name: str) -> Any:
    """An answer with the tool's name blanked, to compare refusals of different names."""
    return json.loads(json.dumps(answer).replace(name, "NAME"))


# The consent page -------------------------------------------------------------------------------------------


def test_the_consent_page_offers_all_read_only_or_chosen_tools_starting_from_all(browser: Client, tools: None) -> None:
    page = consent_page(browser, application("Alpha").client_id)

    form = page.context["form"]
    assert (form.initial["reach"], form.initial["tools"]) == ("all", [])
    assert [choice for choice, _ in form.fields["reach"].choices] == ["all", "read_only", "chosen"]
    assert sorted(entry.name for entry, ticked in form.rows if not ticked) == enabled_names()
    assert [entry.name for entry in form.read_only_tools] == READ_ONLY
    html = page.content.decode()
    assert html.count('type="checkbox" name="tools"') == len(enabled_names())
    assert html.count('form="authorizationForm"') == 3 + len(enabled_names())  # the three choices and each box


@pytest.mark.parametrize(
    ("reach", "chosen", "expected"),
    [("all", [], None), ("read_only", [], READ_ONLY), ("chosen", ["whoami", WRITE_TOOL], ["greet", "whoami"])],
)
def test_allowing_stores_the_choice_with_the_apps_grant(
    browser: Client, user: Any, tools: None, reach: str, chosen: list[str], expected: list[str] | None
) -> None:
    app = application("Alpha")

    response = submit(browser, consent_page(browser, app.client_id), reach, [tool_id(name) for name in chosen])

    assert response.status_code == 302 and "code" in query(response)
    consent = Consent.objects.get(user=user, application=app)
    assert (consent.reach, sorted(tool.name for tool in consent.tools.all())) == (reach, sorted(chosen))
    assert get_grant_model().objects.filter(user=user, application=app).count() == 1


def test_the_consent_page_asks_again_starting_from_the_previous_choice(browser: Client, user: Any, tools: None) -> None:
    app = application("Alpha")
    choose(user, app, Consent.Reach.CHOSEN, [Tool.objects.get(name="whoami")])

    form = consent_page(browser, app.client_id).context["form"]

    assert (form.initial["reach"], form.initial["tools"]) == ("chosen", [tool_id("whoami")])
    assert [entry.name for entry, ticked in form.rows if ticked] == ["whoami"]


def test_choosing_no_tool_is_refused_on_the_page_and_grants_nothing(browser: Client, user: Any, tools: None) -> None:
    app = application("Alpha")

    response = submit(browser, consent_page(browser, app.client_id), "chosen", [])

    assert response.status_code == 200
    assert str(CHOOSE_ONE) in response.content.decode()
    assert response.context["client"].name == "Alpha"  # the page again, not the "altered form" error
    assert not get_grant_model().objects.filter(application=app).exists()
    assert not Consent.objects.filter(application=app).exists()


def test_a_tool_the_user_may_not_use_cannot_be_chosen_and_is_not_named(
    browser: Client, user: Any, tools: None, django_user_model: Any
) -> None:
    app = application("Alpha")
    hidden = Tool.objects.create(name="secret_payroll", kind=Tool.Kind.CALLABLE, callable_name="whoami", enabled=True)
    UserGrant.objects.create(tool=hidden, user=django_user_model.objects.create_user("carol"))

    response = submit(browser, consent_page(browser, app.client_id), "chosen", [tool_id("whoami"), hidden.pk])

    assert response.status_code == 200
    assert "secret_payroll" not in response.content.decode()
    assert response.context["form"].errors["tools"] == [
        f"Select a valid choice. {hidden.pk} is not one of the available choices."
    ]
    assert not get_grant_model().objects.filter(application=app).exists()


def test_denying_leaves_the_previous_choice_as_it_was(browser: Client, user: Any, tools: None) -> None:
    app = application("Alpha")
    choose(user, app, Consent.Reach.READ_ONLY)

    response = submit(browser, consent_page(browser, app.client_id), "all", allow=False)

    assert query(response)["error"] == ["access_denied"]
    assert Consent.objects.get(user=user, application=app).reach == "read_only"


def test_a_consent_form_without_the_choice_grants_all_the_users_tools_as_before(
    browser: Client, user: Any, tools: None
) -> None:
    app = application("Alpha")
    page = consent_page(browser, app.client_id)
    data = {k: v for k, v in page.context["form"].initial.items() if v is not None and k not in ("reach", "tools")}

    response = browser.post(AUTHORIZE, {**data, "allow": "Authorize"})

    assert response.status_code == 302
    assert Consent.objects.get(user=user, application=app).reach == "all"


# Enforcement ------------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_read_only_app_lists_and_calls_only_read_only_tools_while_a_site_token_sees_all(
    user: Any, tools: None
) -> None:
    browser = Client()
    await db_call(browser.force_login, user)
    app = await db_call(application, "Alpha")
    oauth = await db_call(token_with, browser, app.client_id, "read_only")
    site_token = (await db_call(AccessToken.objects.issue, user))[1]

    assert await listed(oauth) == READ_ONLY
    assert await listed(site_token) == await db_call(enabled_names)
    assert (await called(oauth, "add"))["result"]["structuredContent"] == {"result": 3}
    # A write tool is, to this app, exactly a tool that does not exist.
    refused = await called(oauth, WRITE_TOOL)
    assert without_name(refused, WRITE_TOOL) == without_name(await called(oauth, "no_such_tool"), "no_such_tool")
    assert refused["error"]["code"] == -32602
    assert (await called(site_token, WRITE_TOOL))["result"]["isError"] is False


def hidden_tools() -> None:
    """Two enabled tools granted to nobody yet: one read-only, one that writes."""
    Tool.objects.create(
        name="new_reader", kind=Tool.Kind.CALLABLE, callable_name="add", enabled=True, read_only_hint=True
    )
    Tool.objects.create(name="new_writer", kind=Tool.Kind.CALLABLE, callable_name="greet", enabled=True)


def grant_new_tools(user: Any) -> None:
    for tool in Tool.objects.filter(name__in=["new_reader", "new_writer"]):
        UserGrant.objects.create(tool=tool, user=user)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("reach", "new_tools_reached"),
    [("all", ["new_reader", "new_writer"]), ("read_only", ["new_reader"]), ("chosen", [])],
)
async def test_a_tool_granted_to_the_user_later_reaches_the_app_only_as_its_choice_says(
    user: Any, tools: None, reach: str, new_tools_reached: list[str]
) -> None:
    browser = Client()
    await db_call(browser.force_login, user)
    app = await db_call(application, "Alpha")
    await db_call(hidden_tools)
    chosen = [await db_call(tool_id, "whoami")] if reach == "chosen" else []
    oauth = await db_call(token_with, browser, app.client_id, reach, chosen)
    before = await listed(oauth)

    await db_call(grant_new_tools, user)
    catalog.invalidate()
    after = await listed(oauth)

    assert not {"new_reader", "new_writer"} & set(before)
    assert sorted(set(after) - set(before)) == new_tools_reached


# Changing the choice later ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_changing_the_choice_on_the_connected_apps_page_binds_the_apps_open_session_at_once(
    user: Any, tools: None, ws_connect: Any
) -> None:
    browser = Client()
    await db_call(browser.force_login, user)
    app = await db_call(application, "Alpha")
    oauth = await db_call(token_with, browser, app.client_id, "all")
    communicator, accepted, _ = await ws_connect(ws_headers(oauth))
    assert accepted
    ws = WSClient(communicator)
    await ws.initialize()
    assert "nextCursor" in (await ws.request("tools/list"))["result"]  # more tools than one page holds

    page = await db_call(browser.get, f"/oauth/apps/{app.pk}/tools/")
    assert page.status_code == 200 and page.context["form"].initial["reach"] == "all"
    saved = await db_call(browser.post, f"/oauth/apps/{app.pk}/tools/", {"reach": "read_only"})

    assert (saved.status_code, saved["Location"]) == (302, "/oauth/apps/")
    assert await ws.receive() == LIST_CHANGED
    narrowed = (await ws.request("tools/list"))["result"]
    assert ([tool["name"] for tool in narrowed["tools"]], "nextCursor" in narrowed) == (READ_ONLY, False)
    unknown = await ws.request("tools/call", {"name": WRITE_TOOL, "arguments": {"name": "x"}})
    assert unknown["error"]["code"] == -32602
    assert await listed(oauth) == READ_ONLY


def test_the_connected_apps_page_shows_what_each_app_may_use(browser: Client, user: Any, tools: None) -> None:
    alpha, beta = application("Alpha"), application("Beta")
    token_with(browser, alpha.client_id, "read_only")
    token_with(browser, beta.client_id, "chosen", [tool_id("whoami"), tool_id("add")])

    html = browser.get("/oauth/apps/").content.decode()

    cells = [part.split("</td>")[0] for part in html.split('<td class="reach">')[1:]]
    assert ["Read-only tools only" in cells[0], "<code>add</code>, <code>whoami</code>" in cells[1]] == [True, True]
    assert f"/oauth/apps/{alpha.pk}/tools/" in cells[0] and f"/oauth/apps/{beta.pk}/tools/" in cells[1]


def test_the_choice_page_of_an_app_the_user_did_not_connect_is_not_found_like_one_that_does_not_exist(
    browser: Client, user: Any, tools: None, django_user_model: Any
) -> None:
    theirs = application("Theirs")
    other = Client()
    other.force_login(django_user_model.objects.create_user("bob"))
    token_with(other, theirs.client_id, "all")

    answers = [browser.get(f"/oauth/apps/{pk}/tools/") for pk in (theirs.pk, theirs.pk + 1000)]
    posted = browser.post(f"/oauth/apps/{theirs.pk}/tools/", {"reach": "read_only"})

    assert [answer.status_code for answer in [*answers, posted]] == [404, 404, 404]
    assert Consent.objects.get(application=theirs).reach == "all"


def test_the_choice_page_needs_a_signed_in_user_and_a_csrf_token(user: Any, tools: None) -> None:
    app = application("Alpha")
    signed_in = Client(enforce_csrf_checks=True)
    signed_in.force_login(user)
    choose(user, app, Consent.Reach.ALL)
    get_grant_model().objects.create(
        user=user, application=app, code="c", expires="2999-01-01T00:00Z", redirect_uri="https://client.example/cb"
    )

    anonymous = Client().get(f"/oauth/apps/{app.pk}/tools/")
    forged = signed_in.post(f"/oauth/apps/{app.pk}/tools/", {"reach": "read_only"})

    assert (anonymous.status_code, anonymous["Location"].split("?")[0]) == (302, "/oauth/login/")
    assert forged.status_code == 403
    assert Consent.objects.get(application=app).reach == "all"


# The admin --------------------------------------------------------------------------------------------------


def test_admins_see_each_consent_and_cannot_add_change_or_delete_one(
    admin_client: Client, user: Any, tools: None
) -> None:
    app = application("Alpha")
    consent = choose(user, app, Consent.Reach.CHOSEN, [Tool.objects.get(name="whoami")])

    listing = admin_client.get("/admin/mcp_tools_oauth/consent/")
    answers = [
        admin_client.get("/admin/mcp_tools_oauth/consent/add/").status_code,
        admin_client.post(f"/admin/mcp_tools_oauth/consent/{consent.pk}/change/", {"reach": "all"}).status_code,
        admin_client.post(f"/admin/mcp_tools_oauth/consent/{consent.pk}/delete/", {"post": "yes"}).status_code,
    ]

    assert listing.status_code == 200
    html = listing.content.decode()
    assert "Only the tools I choose" in html and "whoami" in html and "Alpha" in html
    assert answers == [403, 403, 403]
    assert Consent.objects.get(pk=consent.pk).reach == "chosen"
