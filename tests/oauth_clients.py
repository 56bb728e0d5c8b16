"""OAuth in tests: a signed-in browser that consents, the official SDK's OAuth client on a live server, and
django-oauth-toolkit rows made directly.

The browser signs in at the consent flow's sign-in page ``/oauth/login/``, opens the authorization URL,
submits the consent form as a person pressing its ``allow`` button would (every hidden input of the form,
plus ``allow``), and reads the ``code`` and ``state`` from the redirect it is answered with, without
following it. ``tests/test_browser_oauth.py`` does the same in a real Chromium.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.oauth import application

TIMEOUT = 10
SCOPE = "mcp"
LOGIN = "/oauth/login/"
# Where the client's user agent is sent back: nothing listens there, the browser only reads the redirect.
REDIRECT_URI = "http://127.0.0.1:9/callback"


class ConsentForm(HTMLParser):
    """The hidden inputs and action of the form that has an ``allow`` submit button."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[dict[str, Any]] = []
        self.current: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {key: value or "" for key, value in attrs}
        if tag == "form":
            self.current = {"action": attributes.get("action", ""), "hidden": {}, "allow": None}
            self.forms.append(self.current)
        elif tag in ("input", "button") and self.current is not None:
            kind = attributes.get("type", "text" if tag == "input" else "submit").lower()
            name = attributes.get("name", "")
            if kind == "hidden" and name:
                self.current["hidden"][name] = attributes.get("value", "")
            elif kind == "submit" and name == "allow":
                self.current["allow"] = attributes.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.current = None

    @classmethod
    def read(cls, html: str) -> tuple[str, dict[str, str]]:
        """(action, fields to post) of the page's consent form; fails if the page has none."""
        parser = cls()
        parser.feed(html)
        parser.close()
        found = [form for form in parser.forms if form["allow"] is not None]
        assert len(found) == 1, f"expected one form with an 'allow' button, found {len(found)}:\n{html[:2000]}"
        form = found[0]
        return form["action"], {**form["hidden"], "allow": form["allow"]}


def redirect_parameters(location: str) -> dict[str, str]:
    """The single-valued query parameters of a redirect; fails on a repeated one."""
    query = parse_qs(urlsplit(location).query, keep_blank_values=True)
    assert all(len(values) == 1 for values in query.values()), query
    return {name: values[0] for name, values in query.items()}


class Browser:
    """A signed-in user's browser on a live site: keeps its cookies, never follows redirects."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.http = httpx.AsyncClient(base_url=base_url, timeout=TIMEOUT)
        self.consented: list[str] = []  # authorization URLs the user said yes to

    async def __aenter__(self) -> Browser:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.http.aclose()

    async def login(self, username: str, password: str) -> None:
        page = await self.http.get(LOGIN)
        assert page.status_code == 200, page.text[:500]
        data = {"username": username, "password": password, "csrfmiddlewaretoken": self.http.cookies["csrftoken"]}
        response = await self.http.post(LOGIN, data={**data, "next": "/"})
        assert response.status_code == 302, response.text[:2000]

    async def consent_page(self, authorization_url: str) -> httpx.Response:
        page = await self.http.get(authorization_url)
        assert page.status_code == 200, (page.status_code, page.headers.get("location"), page.text[:2000])
        return page

    async def consent(self, authorization_url: str) -> str:
        """Open the authorization URL, allow, and return the ``Location`` the site redirects to."""
        page = await self.consent_page(authorization_url)
        action, fields = ConsentForm.read(page.text)
        target = urljoin(str(page.url), action) if action else str(page.url)
        response = await self.http.post(target, data=fields, headers={"Referer": str(page.url)})
        assert response.status_code == 302, (response.status_code, response.text[:2000])
        self.consented.append(authorization_url)
        return response.headers["location"]


@dataclass
class MemoryStorage:
    """The SDK's TokenStorage in memory; keeps every token set it was given, in order."""

    tokens: list[OAuthToken] = field(default_factory=list)
    client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens[-1] if self.tokens else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def client_metadata(name: str) -> OAuthClientMetadata:
    """What a public loopback client registers: authorization code with refresh, no secret."""
    return OAuthClientMetadata(
        client_name=name,
        redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


def cimd_document(client_id: str, name: str) -> dict[str, Any]:
    """The metadata document a CIMD client publishes at its client_id URL."""
    return {
        "client_id": client_id,
        "client_name": name,
        "redirect_uris": [REDIRECT_URI],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


class ConsentingUser:
    """The SDK's redirect and callback handlers: the browser consents, the callback reads its redirect."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.redirects: asyncio.Queue[str] = asyncio.Queue()
        self.authorization_urls: list[str] = []

    async def redirect(self, authorization_url: str) -> None:
        self.authorization_urls.append(authorization_url)
        await self.redirects.put(await self.browser.consent(authorization_url))

    async def callback(self) -> AuthorizationCodeResult:
        location = await asyncio.wait_for(self.redirects.get(), TIMEOUT)
        assert location.startswith(REDIRECT_URI + "?"), location
        found = redirect_parameters(location)
        return AuthorizationCodeResult(code=found["code"], state=found.get("state"), iss=found.get("iss"))


@dataclass
class OAuthSession:
    """An SDK client authorized by OAuth, and what its flow went through."""

    client: Client
    storage: MemoryStorage
    user: ConsentingUser
    exchanges: list[str]  # "METHOD URL [bearer] -> STATUS" of every request the client sent, in order


@asynccontextmanager
async def oauth_client(
    mcp_url: str,
    browser: Browser,
    *,
    name: str = "SDK client",
    client_metadata_url: str | None = None,
    mode: str = "auto",
) -> AsyncIterator[OAuthSession]:
    """The SDK's ``Client`` on ``mcp_url`` with its ``OAuthClientProvider``, which authorizes on first use."""
    storage = MemoryStorage()
    user = ConsentingUser(browser)
    provider = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=client_metadata(name),
        storage=storage,
        redirect_handler=user.redirect,
        callback_handler=user.callback,
        client_metadata_url=client_metadata_url,
    )
    exchanges: list[str] = []

    async def record(response: httpx2.Response) -> None:
        # Read as the response arrives: the provider adds its header to the same request object later.
        request = response.request
        bearer = " bearer" if request.headers.get("Authorization", "").startswith("Bearer ") else ""
        exchanges.append(f"{request.method} {request.url}{bearer} -> {response.status_code}")

    http = httpx2.AsyncClient(auth=provider, timeout=TIMEOUT, event_hooks={"response": [record]})
    async with http, Client(streamable_http_client(mcp_url, http_client=http), mode=mode) as client:
        yield OAuthSession(client, storage, user, exchanges)


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


# Rows made directly -------------------------------------------------------------------------------


def access_token(
    user: Any,
    *,
    resource: list[str] | None,
    scope: str = SCOPE,
    expires_in: timedelta = timedelta(hours=1),
    app: Any = None,
) -> str:
    """A django-oauth-toolkit access token row, as the token endpoint would issue it; returns the secret."""
    from django.utils import timezone
    from oauth2_provider.models import get_access_token_model

    raw = secrets.token_urlsafe(30)
    get_access_token_model().objects.create(
        user=user,
        application=app if app is not None else application("Direct client", redirect_uris=REDIRECT_URI),
        token=raw,
        expires=timezone.now() + expires_in,
        scope=scope,
        resource=resource or [],
    )
    return raw


def refresh_token(user: Any, *, resource: list[str]) -> str:
    """A refresh token row (with the access token it came with); returns the refresh token's secret."""
    from oauth2_provider.models import get_access_token_model, get_refresh_token_model

    app = application("Direct client", redirect_uris=REDIRECT_URI)
    raw_access = access_token(user, resource=resource, app=app)
    token = get_access_token_model().objects.get(application=app, token_checksum=_checksum(raw_access))
    raw = secrets.token_urlsafe(30)
    get_refresh_token_model().objects.create(user=user, application=app, token=raw, access_token=token)
    return raw


def _checksum(raw: str) -> str:
    import hashlib

    return hashlib.sha256(raw.encode()).hexdigest()
