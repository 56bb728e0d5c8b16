"""The pages a user sees: the consent page of the authorization flow."""

from __future__ import annotations

from oauth2_provider.views import AuthorizationView


class ConsentView(AuthorizationView):
    """The authorization endpoint: asks the signed-in user whether the client may use their tools."""

    template_name = "mcp_tools/oauth/authorize.html"
