"""A client's metadata host for CIMD tests: a local HTTPS server with a self-signed certificate for a name.

django-oauth-toolkit fetches a CIMD document only from a public address, over HTTPS it verifies. A test
serving one from this machine lets the toolkit believe two things, and nothing else: that the name resolves
to 127.0.0.1 (``oauth2_provider.cimd._resolve_and_validate``) and that this certificate is trusted (the
``ssl`` module as ``oauth2_provider.cimd`` sees it). Its fetcher, size cap, timeouts and checks of the
document run as they do in production.
"""

from __future__ import annotations

import datetime
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HOST = "client.example"  # in CIMD_ALLOWED_HOSTS of tests/settings.py

Handler = Callable[[BaseHTTPRequestHandler], None]


def self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A certificate for ``name`` that is its own authority, and its key: (certificate, key) files."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@dataclass
class MetadataHost:
    """Serves ``routes`` (path -> handler) over HTTPS on 127.0.0.1 and counts the requests it received."""

    port: int = 0
    routes: dict[str, Handler] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)  # lets a held response finish

    def url(self, path: str) -> str:
        return f"https://{HOST}:{self.port}{path}"

    def document(self, path: str, metadata: dict[str, Any]) -> None:
        self.routes[path] = lambda handler: reply(handler, json.dumps(metadata).encode())


def reply(handler: BaseHTTPRequestHandler, body: bytes, content_type: str = "application/json") -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@contextmanager
def metadata_host(directory: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MetadataHost]:
    cert, key = self_signed(directory, HOST)
    host = MetadataHost()

    class Serve(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            host.requests.append(self.path)
            route = host.routes.get(self.path)
            if route is None:
                self.send_error(404)
            else:
                route(self)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Serve)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    host.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    # Only these two: the name resolves here, and this certificate is trusted by the CIMD fetcher alone.
    monkeypatch.setattr("oauth2_provider.cimd._resolve_and_validate", _resolve_here)
    trusting = SimpleNamespace(create_default_context=lambda: ssl.create_default_context(cafile=str(cert)))
    monkeypatch.setattr("oauth2_provider.cimd.ssl", trusting)
    try:
        yield host
    finally:
        host.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def _resolve_here(hostname: str, port: int) -> list[str]:
    assert hostname == HOST, hostname
    return ["127.0.0.1"]


def client_metadata(client_id: str, name: str = "Example Connector", **extra: Any) -> dict[str, Any]:
    """A valid CIMD document: a public client returning to ``https://client.example/callback``."""
    return {
        "client_id": client_id,
        "client_name": name,
        "redirect_uris": ["https://client.example/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **extra,
    }
