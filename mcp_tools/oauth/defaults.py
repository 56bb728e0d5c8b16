"""django-oauth-toolkit settings for an MCP authorization server, as the MCP authorization spec wants it.

``OAUTH2_PROVIDER = provider_settings(CIMD_ALLOWED_HOSTS=[...])`` in the site's settings: authorization
code with PKCE S256 only, public clients (``none``), rotating refresh tokens with reuse protection, client
registration by metadata document (CIMD, hosts allow-listed) and by DCR, loopback redirects (RFC 8252).
"""

from __future__ import annotations

from typing import Any

MCP_SCOPE = "mcp"

DEFAULTS: dict[str, Any] = {
    "SCOPES": {MCP_SCOPE: "Use the tools you may use on this site"},
    "DEFAULT_SCOPES": [MCP_SCOPE],
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    # RFC 9207: the authorization response names its issuer, so a client talking to several servers cannot
    # be sent another server's code (mix-up); the issuer is the site's origin, as its metadata says.
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    # Tokens are kept as SHA-256 checksums only: a copy of the database holds no usable token.
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_post", "client_secret_basic"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 30 * 86400,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    "ALLOW_LOCALHOST_LOOPBACK": True,
    # Desktop clients return to their own schemes (Cursor, VS Code); only exact registered URIs match.
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http", "cursor", "vscode"],
    "CIMD_ENABLED": True,
    "CIMD_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.cimd.HostAllowlistCIMDPermission",),
    "CIMD_ALLOWED_HOSTS": [],
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    # Tokens only for the resources the site serves; a code redeemed twice revokes what it issued; a
    # deactivated user's code or refresh token mints nothing. CIMD documents' redirect URIs checked as DCR's.
    "OAUTH2_VALIDATOR_CLASS": "mcp_tools.oauth.validator.MCPOAuth2Validator",
    "CIMD_METADATA_FETCHER": "mcp_tools.oauth.redirect_uris.CheckedMetadataFetcher",
    # The admin shows how each client registered, its live tokens, and never a token's value.
    "APPLICATION_ADMIN_CLASS": "mcp_tools.oauth.admin.ApplicationAdmin",
    "ACCESS_TOKEN_ADMIN_CLASS": "mcp_tools.oauth.admin.AccessTokenAdmin",
    "REFRESH_TOKEN_ADMIN_CLASS": "mcp_tools.oauth.admin.RefreshTokenAdmin",
    "GRANT_ADMIN_CLASS": "mcp_tools.oauth.admin.GrantAdmin",
}


def provider_settings(**overrides: Any) -> dict[str, Any]:
    """``OAUTH2_PROVIDER`` for an MCP site: these defaults, with the site's own ``overrides``."""
    return {**DEFAULTS, **overrides}
