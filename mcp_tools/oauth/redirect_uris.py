"""The redirect URIs a client may register, whichever way it registers: by DCR, by updating its DCR
registration (RFC 7592), or by a metadata document (CIMD).

At most MAX_REDIRECT_URIS of them, and none with userinfo: ``https://claude.ai@evil.example/cb`` returns to
``evil.example`` while it reads as ``claude.ai``. The authorization endpoint already refuses such a URI;
registration refuses it too (RFC 7591 section 3.2.2, ``invalid_redirect_uri``), so that no client can hold one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher

MAX_REDIRECT_URIS = 10


@dataclass(frozen=True)
class Problem:
    """Why a client's redirect URIs are refused, as RFC 7591 section 3.2.2 names it."""

    error: str
    description: str


def problem(uris: Any) -> Problem | None:
    """What is wrong with the ``redirect_uris`` of a client's metadata, if anything this module checks."""
    if not isinstance(uris, list):
        return None  # the toolkit refuses what is not a list of strings itself
    if len(uris) > MAX_REDIRECT_URIS:
        return Problem("invalid_client_metadata", f"At most {MAX_REDIRECT_URIS} redirect URIs may be registered.")
    if any(isinstance(uri, str) and _has_userinfo(uri) for uri in uris):
        return Problem("invalid_redirect_uri", "A redirect URI may not hold a user name or password.")
    return None


def _has_userinfo(uri: str) -> bool:
    try:
        parts = urlsplit(uri.strip())
    except ValueError:
        return False  # not a URL at all: the toolkit refuses it
    return parts.username is not None or parts.password is not None


class CheckedMetadataFetcher(SafeMetadataFetcher):
    """The toolkit's fetcher of CIMD documents, refusing a document whose redirect URIs this module refuses
    (``OAUTH2_PROVIDER["CIMD_METADATA_FETCHER"]``; a site with a fetcher of its own subclasses this one)."""

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        document, max_age = super().fetch(client_id)
        return self.checked(document), max_age

    @staticmethod
    def checked(document: Any) -> Any:
        """``document``, unless its redirect URIs are refused (CIMDError: the client is then unknown)."""
        found = problem(document.get("redirect_uris")) if isinstance(document, dict) else None
        if found is not None:
            raise CIMDError(found.description)
        return document
