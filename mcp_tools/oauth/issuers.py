"""The external authorization servers whose JWT access tokens (RFC 9068) the site checks itself.

``MCP_TOOLS["OAUTH_JWT_ISSUERS"]`` lists them, one dict each (see docs/connectors.md). ``configured()`` reads
the entries into ``Issuer`` objects; an entry with a problem (``problems()``, reported by check
mcp_tools.E011) trusts nothing at all, rather than whatever part of it looks right.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist
from django.utils.module_loading import import_string

from mcp_tools.conf import mcp_settings
from mcp_tools.oauth.clients import LOOPBACK_HOSTS

logger = logging.getLogger("mcp_tools")

SETTING = "OAUTH_JWT_ISSUERS"
#: Signature algorithms with a public key: the only ones a resource server can check without sharing a
#: secret with the issuer (an HS* key the site holds could also mint tokens; ``none`` signs nothing).
ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
#: The ``typ`` RFC 9068 section 2.1 requires; compared as RFC 7515 says, without ``application/``, in any case.
AT_JWT = "at+jwt"

OPTIONS: dict[str, Any] = {
    "ISSUER": None,  # required: the issuer identifier, exactly as the tokens' ``iss`` says it
    "JWKS_URL": None,  # None: ``jwks_uri`` of the issuer's RFC 8414 (or OpenID) metadata
    "ALGORITHMS": ["RS256"],
    "AUDIENCE": None,  # None: this server's resource URL; else one value or a list, as the issuer writes ``aud``
    "TOKEN_TYPES": [AT_JWT],  # accepted ``typ`` headers; None in the list accepts a token without one
    "USER_CLAIM": "sub",
    "USER_FIELD": "username",
    "USER_LOOKUP": None,  # dotted path to ``(claims) -> user | None``, instead of USER_CLAIM and USER_FIELD
    "CLIENT_CLAIMS": ["client_id", "azp", "cid", "appid"],  # the first present names the client in the audit
    "LEEWAY_SECONDS": 60,  # clock skew allowed for ``nbf`` and ``iat``; ``exp`` binds to the second
    "JWKS_CACHE_SECONDS": 900,
    "JWKS_REFETCH_SECONDS": 60,  # at most one fetch for an unknown ``kid`` (and one after a failure) per this
    "JWKS_TIMEOUT_SECONDS": 5,
    "JWKS_MAX_BYTES": 131_072,
}
NUMBERS = ("LEEWAY_SECONDS", "JWKS_CACHE_SECONDS", "JWKS_REFETCH_SECONDS", "JWKS_TIMEOUT_SECONDS", "JWKS_MAX_BYTES")


@dataclass(frozen=True)
class Issuer:
    """One trusted issuer, its options read and checked."""

    issuer: str
    jwks_url: str | None
    algorithms: tuple[str, ...]
    audiences: tuple[str, ...]  # empty: the resource URL of the connection
    token_types: frozenset[str | None]
    user_claim: str
    user_field: str
    user_lookup: str | None
    client_claims: tuple[str, ...]
    leeway: float
    jwks_cache_seconds: float
    jwks_refetch_seconds: float
    jwks_timeout: float
    jwks_max_bytes: int

    @classmethod
    def read(cls, entry: dict[str, Any]) -> Issuer:
        """The issuer of an entry ``problems()`` found nothing wrong with."""
        options = {**OPTIONS, **entry}
        audience = options["AUDIENCE"]
        return cls(
            issuer=options["ISSUER"],
            jwks_url=options["JWKS_URL"],
            algorithms=tuple(options["ALGORITHMS"]),
            audiences=() if audience is None else tuple([audience] if isinstance(audience, str) else audience),
            token_types=frozenset(_type(value) for value in options["TOKEN_TYPES"]),
            user_claim=options["USER_CLAIM"],
            user_field=options["USER_FIELD"],
            user_lookup=options["USER_LOOKUP"],
            client_claims=tuple(options["CLIENT_CLAIMS"]),
            leeway=float(options["LEEWAY_SECONDS"]),
            jwks_cache_seconds=float(options["JWKS_CACHE_SECONDS"]),
            jwks_refetch_seconds=float(options["JWKS_REFETCH_SECONDS"]),
            jwks_timeout=float(options["JWKS_TIMEOUT_SECONDS"]),
            jwks_max_bytes=int(options["JWKS_MAX_BYTES"]),
        )

    def accepts_type(self, typ: Any) -> bool:
        """Whether a token whose header says ``typ`` (None: says none) is an access token of this issuer."""
        if typ is not None and not isinstance(typ, str):
            return False
        return _type(typ) in self.token_types


def _type(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().lower()
    return value.removeprefix("application/")


# Reading the setting ----------------------------------------------------------------------------------

_lock = threading.Lock()
_read: tuple[Any, dict[str, Issuer]] = (None, {})


def configured() -> dict[str, Issuer]:
    """The issuers the site trusts, by issuer identifier; read again whenever the setting changes."""
    global _read
    source = getattr(mcp_settings, SETTING)
    seen, issuers = _read
    if source is seen:
        return issuers
    with _lock:
        issuers = {}
        for entry in source if isinstance(source, list) else []:
            found = problems(entry)
            if found:
                logger.error("An entry of MCP_TOOLS[%r] is ignored: %s", SETTING, found[0][0])
            else:
                issuer = Issuer.read(entry)
                issuers[issuer.issuer] = issuer
        _read = (source, issuers)
    return issuers


# Checking an entry --------------------------------------------------------------------------------------

Problem = tuple[str, str]  # (what is wrong, how to fix it)


def problems(entry: Any) -> list[Problem]:
    """What is wrong with one entry of the setting, each with its fix; empty when it may be trusted."""
    if not isinstance(entry, dict):
        return [("an entry is not a dict.", "Give each issuer as a dict with at least 'ISSUER'.")]
    unknown = sorted(str(key) for key in entry if key not in OPTIONS)
    if unknown:
        return [(f"unknown key {unknown[0]!r}.", f"Valid keys: {', '.join(OPTIONS)}.")]
    options = {**OPTIONS, **entry}
    found = _url_problems(options)
    found += _algorithm_problems(options["ALGORITHMS"])
    found += _claim_problems(options)
    found += _user_problems(options)
    found += [
        (f"{name} is {options[name]!r}, not a positive number.", f"Give {name} as a number above 0.")
        for name in NUMBERS
        if not _positive(options[name])
    ]
    return found


def _url_problems(options: dict[str, Any]) -> list[Problem]:
    issuer, jwks_url = options["ISSUER"], options["JWKS_URL"]
    found: list[Problem] = []
    if not secure_url(issuer) or urlsplit(issuer).query:
        found.append(
            (
                f"ISSUER {issuer!r} is not an https URL.",
                "Give the issuer identifier exactly as its tokens' 'iss' and its metadata say it "
                "(https; http only on a loopback address), without a query or fragment.",
            )
        )
    if jwks_url is not None and not secure_url(jwks_url):
        found.append(
            (
                f"JWKS_URL {jwks_url!r} is not an https URL.",
                "Give the issuer's JWKS URL (https; http only on a loopback address), or None to discover it.",
            )
        )
    return found


def _algorithm_problems(algorithms: Any) -> list[Problem]:
    hint = f"Accept only asymmetric algorithms: some of {', '.join(ASYMMETRIC)}."
    if not isinstance(algorithms, list | tuple) or not algorithms:
        return [("ALGORITHMS must be a non-empty list.", hint)]
    refused = [value for value in algorithms if value not in ASYMMETRIC]
    if refused:
        return [(f"ALGORITHMS holds {refused[0]!r}, which is not an asymmetric signature algorithm.", hint)]
    return []


def _claim_problems(options: dict[str, Any]) -> list[Problem]:
    found: list[Problem] = []
    audience = options["AUDIENCE"]
    if not (audience is None or _text(audience) or _texts(audience)):
        found.append(
            ("AUDIENCE must be None, a string or a non-empty list of strings.", "Leave it None to use RESOURCE_URL.")
        )
    types = options["TOKEN_TYPES"]
    if not (isinstance(types, list | tuple) and types and all(value is None or _text(value) for value in types)):
        hint = f"Use [{AT_JWT!r}] unless the issuer sends another typ."
        found.append(("TOKEN_TYPES must be a non-empty list of strings (or None).", hint))
    if not _texts(options["CLIENT_CLAIMS"]):
        found.append(("CLIENT_CLAIMS must be a non-empty list of claim names.", "For example ['client_id', 'azp']."))
    return found


def _user_problems(options: dict[str, Any]) -> list[Problem]:
    lookup = options["USER_LOOKUP"]
    if lookup is not None:
        try:
            function = import_string(str(lookup))
        except ImportError:
            function = None
        if not callable(function):
            hint = "Give the dotted path of a function (claims) -> user | None."
            return [(f"USER_LOOKUP {lookup!r} cannot be imported as a function.", hint)]
        return []
    found: list[Problem] = []
    if not _text(options["USER_CLAIM"]):
        found.append(("USER_CLAIM must be a claim name.", "For example 'sub', 'oid' or 'preferred_username'."))
    field = options["USER_FIELD"]
    model = get_user_model()
    try:
        known = _text(field) and model._meta.get_field(str(field)).concrete
    except FieldDoesNotExist:
        known = False
    if not known:
        hint = "For example 'username' or 'email'."
        found.append((f"USER_FIELD {field!r} is not a field of {model._meta.label}.", hint))
    return found


def secure_url(value: Any) -> bool:
    """An absolute https URL (http only on a loopback address) without credentials or fragment."""
    if not _text(value):
        return False
    parts = urlsplit(value)
    if parts.fragment or not parts.hostname or parts.username or parts.password:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS)


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _texts(value: Any) -> bool:
    return isinstance(value, list | tuple) and bool(value) and all(_text(item) for item in value)
