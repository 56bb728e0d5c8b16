"""OAuth 2.1 for remote connectors, on django-oauth-toolkit (``pip install django-mcp-tools[oauth]``).

An optional Django app: add ``"oauth2_provider"`` and ``"mcp_tools.oauth"`` to ``INSTALLED_APPS`` and
include ``mcp_tools.oauth.urls`` at the root of the site's URLconf. The MCP endpoint then accepts OAuth
access tokens issued for it and points clients at its metadata; the site's own authorization server (or an
external one) issues them after the user's consent.
"""
