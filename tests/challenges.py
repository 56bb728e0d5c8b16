"""The ``WWW-Authenticate`` challenges a refusal must carry (RFC 6750 section 3, RFC 9728 section 5.1)."""

from __future__ import annotations

METADATA = "/.well-known/oauth-protected-resource/mcp"


def challenge(error: str = "", description: str = "", *, origin: str = "http://testserver", scope: str = "") -> str:
    """What a refusal says: no error without credentials; then where this resource's metadata lives."""
    parts = ['realm="mcp"']
    if error:
        parts.append(f'error="{error}"')
        if description:
            parts.append(f'error_description="{description}"')
        if scope:
            parts.append(f'scope="{scope}"')
    parts.append(f'resource_metadata="{origin}{METADATA}"')
    return "Bearer " + ", ".join(parts)


def refused_token(description: str = "The access token is invalid or expired.", **kwargs: str) -> str:
    return challenge("invalid_token", description, **kwargs)
