"""An external authorization server that issues JWT access tokens (RFC 9068), as far as a resource server sees it.

``IssuerHost`` serves, over plain HTTP on 127.0.0.1 (which the site allows only on loopback), each issuer's
JWKS at ``/<name>/jwks.json`` and its RFC 8414 metadata at ``/.well-known/oauth-authorization-server/<name>``,
and records every path it was asked for. ``TestIssuer`` holds the keys and mints the tokens. Routes can be
replaced to misbehave (a failure, an oversized or late answer, a redirect).
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jwcrypto.common import base64url_encode
from jwcrypto.jwk import JWK
from jwcrypto.jwt import JWT

Handler = Callable[[BaseHTTPRequestHandler], None]
SCOPE = "mcp"
LIFETIME = 300


def new_key(kid: str | None = None) -> JWK:
    return JWK.generate(kty="RSA", size=2048, kid=kid or f"key-{secrets.token_hex(4)}", use="sig", alg="RS256")


@dataclass
class TestIssuer:
    """One issuer: the keys it publishes and the one it signs with."""

    __test__ = False  # not a test class, whatever its name

    name: str
    url: str
    published: list[JWK] = field(default_factory=list)
    signer: JWK = field(default_factory=new_key)

    def __post_init__(self) -> None:
        if not self.published:
            self.published.append(self.signer)

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks.json"

    def key_set(self) -> dict[str, Any]:
        return {"keys": [key.export_public(as_dict=True) for key in self.published]}

    def rotate(self) -> JWK:
        """Publish a new key beside the old ones and sign with it from now on."""
        self.signer = new_key()
        self.published.append(self.signer)
        return self.signer

    def claims(self, subject: str, audience: Any, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "iss": self.url,
            "sub": subject,
            "aud": audience,
            "exp": now + LIFETIME,
            "iat": now,
            "jti": secrets.token_hex(8),
            "client_id": "mcp-client",
            "scope": SCOPE,
        }
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not None}

    def mint(
        self,
        subject: str,
        audience: Any,
        *,
        key: JWK | None = None,
        header: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        """A signed token; ``claims`` set to None are left out, ``header`` entries set to None too."""
        key = key or self.signer
        algorithm = "HS256" if key.get("kty") == "oct" else "RS256"
        head = {"alg": algorithm, "typ": "at+jwt", "kid": key.get("kid"), **(header or {})}
        head = {name: value for name, value in head.items() if value is not None}
        token = JWT(header=head, claims=self.claims(subject, audience, **claims))
        token.make_signed_token(key)
        return str(token.serialize())

    def unsigned(self, subject: str, audience: Any) -> str:
        """The same claims under ``alg: none``, with the empty signature that algorithm has."""
        head = base64url_encode(json.dumps({"alg": "none", "typ": "at+jwt"}))
        body = base64url_encode(json.dumps(self.claims(subject, audience)))
        return f"{head}.{body}."

    def hmac_with_public_key(self, subject: str, audience: Any) -> str:
        """The confusion attack: HS256 keyed with the issuer's public key, which anyone can download."""
        public = self.signer.export_to_pem(private_key=False, password=None)
        secret = JWK(kty="oct", k=base64url_encode(public), kid=self.signer.get("kid"))
        return self.mint(subject, audience, key=secret)

    def config(self, **options: Any) -> dict[str, Any]:
        """The site's OAUTH_JWT_ISSUERS entry for this issuer (its JWKS URL given, unless told otherwise)."""
        return {"ISSUER": self.url, "JWKS_URL": self.jwks_url, **options}


class IssuerHost:
    """A loopback HTTP server publishing the key sets and metadata of several issuers."""

    def __init__(self) -> None:
        self.issuers: dict[str, TestIssuer] = {}
        self.routes: dict[str, Handler] = {}
        self.requests: list[str] = []
        self.release = threading.Event()  # lets a held answer finish
        self.port = 0
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def issuer(self, name: str) -> TestIssuer:
        found = self.issuers[name] = TestIssuer(name, f"{self.base_url}/{name}")
        return found

    def count(self, path: str) -> int:
        with self._lock:
            return self.requests.count(path)

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path
        with self._lock:
            self.requests.append(path)
        route = self.routes.get(path)
        if route is not None:
            route(handler)
            return
        for issuer in self.issuers.values():
            if path == f"/{issuer.name}/jwks.json":
                reply(handler, issuer.key_set())
                return
            if path == f"/.well-known/oauth-authorization-server/{issuer.name}":
                reply(handler, {"issuer": issuer.url, "jwks_uri": issuer.jwks_url})
                return
        handler.send_error(404)


def reply(handler: BaseHTTPRequestHandler, document: Any, status: int = 200) -> None:
    body = json.dumps(document).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@contextmanager
def issuer_host() -> Iterator[IssuerHost]:
    host = IssuerHost()

    class Serve(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            host.serve(self)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Serve)
    server.daemon_threads = True
    host.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield host
    finally:
        host.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def user_by_email(claims: dict[str, Any]) -> Any:
    """A USER_LOOKUP: the user whose email the ``email`` claim names, when the issuer has verified it."""
    from django.contrib.auth import get_user_model

    if claims.get("email_verified") is not True:
        return None
    return get_user_model()._default_manager.filter(email=claims.get("email")).first()
