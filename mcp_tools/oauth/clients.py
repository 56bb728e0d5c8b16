"""Who an OAuth client is, as a user should be told before trusting it: what is verified and what is claimed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from oauth2_provider.models import AbstractApplication

Source = AbstractApplication.RegistrationSource
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True)
class ClientIdentity:
    """An application as the consent page and the connected-apps page present it."""

    name: str
    client_id: str
    source: str
    source_label: str
    #: The host of a CIMD client_id URL: the identity the site checked by fetching the client's document.
    verified_host: str
    #: Whether the name is only the client's own claim (dynamic registration: anyone may choose any name).
    self_declared: bool

    @property
    def display_name(self) -> str:
        return self.name or self.verified_host or self.client_id


def identify(application: Any) -> ClientIdentity:
    """What is known about ``application``, and how sure the site is of it."""
    source = str(application.registration_source)
    return ClientIdentity(
        name=str(application.name or ""),
        client_id=str(application.client_id),
        source=source,
        source_label=str(application.get_registration_source_display()),
        verified_host=(urlsplit(application.client_id).hostname or "") if source == Source.CIMD else "",
        self_declared=source == Source.DCR,
    )


@dataclass(frozen=True)
class Destination:
    """Where the browser returns after consent: a web host, or an application on the user's own device."""

    host: str
    on_this_device: bool


def destination(redirect_uri: str) -> Destination:
    """The host a redirect URI returns to (with its scheme when that is an application's own, as ``cursor://``)."""
    parts = urlsplit(redirect_uri)
    if parts.scheme in ("http", "https"):
        return Destination(parts.netloc, (parts.hostname or "") in LOOPBACK_HOSTS)
    return Destination(f"{parts.scheme}://{parts.netloc}", True)
