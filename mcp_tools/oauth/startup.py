"""What the OAuth app does once Django's app registry is ready: plug its tokens into authentication and the
sessions' re-checks, and connect its checks and signals (by importing their modules)."""

from __future__ import annotations

from mcp_tools.access.authentication import register_bearer
from mcp_tools.access.credentials import register_kind
from mcp_tools.oauth import checks, jwt_tokens, signals, tokens  # noqa: F401  (checks and signals register)


def start() -> None:
    # A JWT of an issuer the site trusts is checked here; any other token goes to the toolkit.
    register_bearer(jwt_tokens.resolve)
    register_bearer(tokens.resolve)
    register_kind(tokens.OAUTH, tokens.rows)
    register_kind(jwt_tokens.JWT, jwt_tokens.rows)
