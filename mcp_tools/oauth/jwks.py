"""The signing keys of a trusted issuer: its JWKS, fetched within a deadline and a size cap, kept in the cache.

The key set is kept in Django's default cache, which every process shares, for ``JWKS_CACHE_SECONDS``. A
token signed with a ``kid`` the kept set lacks (the issuer rotated its keys) has the set fetched again, at
most once per ``JWKS_REFETCH_SECONDS`` per issuer across all processes, so that tokens with made-up kids
cannot make the site hammer the issuer; a failed fetch is not tried again before that interval either.
While the cache cannot be reached, each process keeps the same records in its own memory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from urllib.parse import urlsplit

import urllib3
from django.core.cache import cache
from jwcrypto.jwk import JWK

from mcp_tools.access.cache_breaker import CacheUnavailable, breaker
from mcp_tools.oauth.issuers import Issuer, secure_url

logger = logging.getLogger("mcp_tools")

PREFIX = "mcp_tools.oauth.jwks:"
FAILED = "-"  # kept in place of a key set after a failed fetch
MAX_KEYS = 100
MAX_PARSED = 32  # key set documents this process keeps parsed
KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
METADATA_DOCUMENTS = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


class FetchFailed(Exception):
    """The issuer's metadata or key set could not be read, or is not what it should be."""


def signing_keys(issuer: Issuer, kid: str | None, alg: str) -> list[JWK]:
    """The keys of ``issuer`` that may have signed a token with this ``kid`` (None: any) and ``alg``.

    An unknown ``kid`` has the key set fetched again, unless it was just fetched or already was for an
    unknown kid within ``JWKS_REFETCH_SECONDS``.
    """
    keys, fresh = _keys(issuer)
    found = _matching(keys, kid, alg)
    if found or fresh or kid is None or keys is None:
        return found
    if not _store.add(_key(issuer, "refetch"), "1", issuer.jwks_refetch_seconds):
        return found
    # A failed fetch here keeps the set already kept: the tokens it verifies must go on working.
    return _matching(_fetch_and_keep(issuer, replacing=True), kid, alg)


def _keys(issuer: Issuer) -> tuple[list[JWK] | None, bool]:
    """(the kept key set, or None after a failed fetch; whether it was fetched by this very call)."""
    kept = _store.get(_key(issuer, "set"))
    if kept is None:
        return _fetch_and_keep(issuer), True
    if kept == FAILED:
        return None, False
    return _parsed(kept), False


def _matching(keys: list[JWK] | None, kid: str | None, alg: str) -> list[JWK]:
    kty = KEY_TYPES.get(alg[:2])
    return [
        key
        for key in keys or ()
        if key.get("kty") == kty
        and (kid is None or key.get("kid") == kid)
        and key.get("use") in (None, "sig")
        and key.get("alg") in (None, alg)
        and "verify" in key.get("key_ops", ["verify"])
    ]


def _fetch_and_keep(issuer: Issuer, replacing: bool = False) -> list[JWK] | None:
    try:
        text = _fetch_key_set(issuer)
        keys = _parsed(text)
    except FetchFailed as exc:
        logger.warning("Could not read the signing keys of %s: %s", issuer.issuer, exc)
        if not replacing:
            _store.set(_key(issuer, "set"), FAILED, issuer.jwks_refetch_seconds)
        return None
    _store.set(_key(issuer, "set"), text, issuer.jwks_cache_seconds)
    return keys


def _key(issuer: Issuer, what: str) -> str:
    return PREFIX + hashlib.sha256(issuer.issuer.encode()).hexdigest()[:32] + ":" + what


# Reading a key set ------------------------------------------------------------------------------------

_parsed_lock = threading.Lock()
_parsed_sets: dict[str, list[JWK]] = {}


def _parsed(text: str) -> list[JWK]:
    """The public signing keys of a JWKS document (parsed once per process per document)."""
    with _parsed_lock:
        found = _parsed_sets.get(text)
    if found is not None:
        return found
    found = _read_key_set(text)
    with _parsed_lock:
        if len(_parsed_sets) >= MAX_PARSED:
            _parsed_sets.clear()
        _parsed_sets[text] = found
    return found


def _read_key_set(text: str) -> list[JWK]:
    try:
        document = json.loads(text)
    except ValueError:
        raise FetchFailed("the key set is not JSON") from None
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise FetchFailed("the key set has no 'keys' list")
    keys: list[JWK] = []
    for entry in entries[:MAX_KEYS]:
        # Symmetric keys never verify here, and of a key that comes with its private half only the public is kept.
        if not isinstance(entry, dict) or entry.get("kty") not in KEY_TYPES.values():
            continue
        try:
            key = JWK(**entry)
            keys.append(JWK(**key.export_public(as_dict=True)) if key.has_private else key)
        except Exception:  # a key jwcrypto cannot read is one the issuer cannot have signed with for us
            continue
    return keys


# Fetching ---------------------------------------------------------------------------------------------


def _fetch_key_set(issuer: Issuer) -> str:
    url = issuer.jwks_url or _discovered_jwks_url(issuer)
    return _fetch(url, issuer).decode("utf-8", errors="replace")


def _discovered_jwks_url(issuer: Issuer) -> str:
    """``jwks_uri`` from the issuer's metadata: RFC 8414 first, then OpenID Connect Discovery, at the URLs
    the MCP authorization spec has clients try; the document must name this very issuer (RFC 8414 3.3)."""
    tried: list[str] = []
    for url in metadata_urls(issuer.issuer):
        try:
            document = json.loads(_fetch(url, issuer))
        except (FetchFailed, ValueError) as exc:
            tried.append(f"{url}: {exc or 'not JSON'}")
            continue
        if not isinstance(document, dict) or document.get("issuer") != issuer.issuer:
            raise FetchFailed(f"{url} does not describe the issuer {issuer.issuer!r}")
        jwks_uri = document.get("jwks_uri")
        if not secure_url(jwks_uri):
            raise FetchFailed(f"{url} names no usable jwks_uri")
        return str(jwks_uri)
    raise FetchFailed("no metadata document: " + "; ".join(tried))


def metadata_urls(issuer: str) -> list[str]:
    """Where the metadata of ``issuer`` may live: each well-known path inserted before the issuer's path,
    then the OpenID document appended to it (as Entra ID and Keycloak publish it)."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    urls = [origin + document + path for document in METADATA_DOCUMENTS]
    if path:
        urls.append(origin + path + METADATA_DOCUMENTS[1])
    return urls


def _fetch(url: str, issuer: Issuer) -> bytes:
    """GET ``url`` without redirects within JWKS_TIMEOUT_SECONDS (a slow sender is cut off) and at most
    JWKS_MAX_BYTES; FetchFailed otherwise."""
    limit, seconds = issuer.jwks_max_bytes, issuer.jwks_timeout
    deadline = time.monotonic() + seconds
    pool = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(total=seconds))
    try:
        response = pool.request(
            "GET", url, headers={"Accept": "application/json"}, redirect=False, preload_content=False
        )
    except urllib3.exceptions.HTTPError as exc:
        raise FetchFailed(f"{url}: {type(exc).__name__}") from None
    try:
        if response.status != 200:
            raise FetchFailed(f"{url} answered {response.status}")
        body = bytearray()
        for chunk in response.stream(16_384):
            body += chunk
            if len(body) > limit:
                raise FetchFailed(f"{url} sent more than {limit} bytes")
            if time.monotonic() > deadline:
                raise FetchFailed(f"{url} took more than {seconds:g} s")
        return bytes(body)
    except urllib3.exceptions.HTTPError as exc:
        raise FetchFailed(f"{url}: {type(exc).__name__}") from None
    finally:
        response.release_conn()
        pool.clear()


# Where records are kept -------------------------------------------------------------------------------


class Store:
    """Django's default cache, shared by every process; this process's memory while the cache is down."""

    def __init__(self) -> None:
        self._local: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        try:
            return breaker.call(cache.get, key)
        except CacheUnavailable:
            with self._lock:
                expires, value = self._local.get(key, (0.0, ""))
            return value if expires > time.monotonic() else None

    def set(self, key: str, value: str, seconds: float) -> None:
        try:
            breaker.call(cache.set, key, value, seconds)
        except CacheUnavailable:
            with self._lock:
                self._local[key] = (time.monotonic() + seconds, value)

    def add(self, key: str, value: str, seconds: float) -> bool:
        """Set ``key`` unless it is set; whether this call set it (atomic across processes in the cache)."""
        try:
            return bool(breaker.call(cache.add, key, value, seconds))
        except CacheUnavailable:
            with self._lock:
                if self._local.get(key, (0.0, ""))[0] > time.monotonic():
                    return False
                self._local[key] = (time.monotonic() + seconds, value)
            return True

    def clear(self) -> None:
        with self._lock:
            self._local.clear()


_store = Store()
