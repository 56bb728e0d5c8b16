"""The toolkit's token and revocation endpoints, callable from browser-based clients (CORS)."""

from __future__ import annotations

from oauth2_provider import views

from mcp_tools.oauth.cors import CrossOrigin


class TokenView(CrossOrigin, views.TokenView):
    http_method_names = ["post", "options"]


class RevokeTokenView(CrossOrigin, views.RevokeTokenView):
    http_method_names = ["post", "options"]
