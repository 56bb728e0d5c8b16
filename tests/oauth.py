"""The authorization code flow with PKCE, driven through Django's test client as a browser and a client would."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from django.test import Client
from oauth2_provider.models import get_application_model

AUTHORIZE = "/oauth/authorize/"
TOKEN = "/oauth/token/"
REGISTER = "/oauth/register/"
RESOURCE = "http://testserver/mcp"
REDIRECT = "https://client.example/callback"
LOOPBACK = "http://127.0.0.1/callback"


@dataclass(frozen=True)
class Pkce:
    """A code verifier and its S256 challenge (RFC 7636 section 4)."""

    verifier: str = field(default_factory=lambda: secrets.token_urlsafe(48))

    @property
    def challenge(self) -> str:
        digest = hashlib.sha256(self.verifier.encode("ascii")).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def application(
    name: str = "Claude",
    *,
    source: str = "manual",
    redirect_uris: str = f"{REDIRECT} {LOOPBACK}",
    user: Any = None,
    grant: str = "authorization-code",
) -> Any:
    """A django-oauth-toolkit client: public with the authorization code grant, as a connector registers,
    unless ``grant`` says otherwise (then confidential)."""
    model = get_application_model()
    return model.objects.create(
        name=name,
        user=user,
        client_type=model.CLIENT_PUBLIC if grant == model.GRANT_AUTHORIZATION_CODE else model.CLIENT_CONFIDENTIAL,
        authorization_grant_type=grant,
        redirect_uris=redirect_uris,
        registration_source=source,
    )


def authorize_params(client_id: str, pkce: Pkce | None, redirect_uri: str = REDIRECT, **extra: str) -> dict[str, str]:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": "mcp",
        "state": "st-123",
        "resource": RESOURCE,
    }
    if pkce is not None:
        params.update(code_challenge=pkce.challenge, code_challenge_method="S256")
    params.update(extra)
    return params


def authorize_url(client_id: str, pkce: Pkce | None, redirect_uri: str = REDIRECT, **extra: str) -> str:
    return f"{AUTHORIZE}?{urlencode(authorize_params(client_id, pkce, redirect_uri, **extra))}"


def answer(browser: Client, page: Any, *, allow: bool) -> Any:
    """Post the consent form of ``page`` as its buttons do: Allow sends ``allow``, Deny does not."""
    form = page.context["form"]
    data = {name: value for name, value in form.initial.items() if value is not None}
    if allow:
        data["allow"] = "Authorize"
    return browser.post(AUTHORIZE, data)


def query(response: Any) -> dict[str, list[str]]:
    """The query of a redirect's Location."""
    return parse_qs(urlsplit(response["Location"]).query)


def code_for(browser: Client, client_id: str, pkce: Pkce, redirect_uri: str = REDIRECT) -> str:
    """Consent as the signed-in user and return the authorization code the client receives."""
    page = browser.get(authorize_url(client_id, pkce, redirect_uri))
    assert page.status_code == 200, page
    response = answer(browser, page, allow=True)
    assert response.status_code == 302, response
    return query(response)["code"][0]


def redeem(client: Client, client_id: str, code: str, verifier: str, redirect_uri: str = REDIRECT) -> Any:
    """The token request a public client makes with its code."""
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": RESOURCE,
    }
    return client.post(TOKEN, data)


def consented_access_token(browser: Client, client_id: str) -> str:
    """A user's whole authorization: consent, then the code redeemed for an access token."""
    pkce = Pkce()
    response = redeem(Client(), client_id, code_for(browser, client_id, pkce), pkce.verifier)
    assert response.status_code == 200, response.content
    return str(response.json()["access_token"])
