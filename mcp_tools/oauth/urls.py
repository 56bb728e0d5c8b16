"""Routes of the OAuth app, to include at the root of the site's URLconf: ``path("", include("mcp_tools.oauth.urls"))``.

Discovery documents live at the origin's root (RFC 8414, RFC 9728); the authorization server's endpoints
under ``oauth/``, in django-oauth-toolkit's ``oauth2_provider`` namespace so that its metadata finds them;
the user's connected applications at ``oauth/apps/`` (``mcp-connected-apps``), and the sign-in and sign-out
pages of the consent flow at ``oauth/login/`` and ``oauth/logout/`` (``mcp-oauth-login``, ``mcp-oauth-logout``).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.urls import include, path

from mcp_tools.oauth.endpoints import RevokeTokenView, TokenView
from mcp_tools.oauth.introspection import IntrospectionView
from mcp_tools.oauth.metadata import AuthorizationServerMetadataView, ProtectedResourceMetadataView
from mcp_tools.oauth.registration import RegistrationManagementView, RegistrationView
from mcp_tools.oauth.signin import LOGIN, LOGOUT, SignInView, SignOutView
from mcp_tools.oauth.views import ConnectedAppsView, ConsentView, RevokeView, ToolsChoiceView

# What a client or a signed-out person must reach on a site that requires sign-in everywhere (Django's
# LoginRequiredMiddleware): discovery, the token endpoints, registration, and the sign-in page itself. The
# consent and connected-apps pages send a signed-out person to the sign-in page themselves.
public = login_not_required

# The toolkit's token, revocation and introspection endpoints and its dynamic client registration and its
# management (token, revocation and registration readable cross-origin; introspection for the resource servers
# named, registration documents capped and checked); its own authorization page is replaced by the consent
# page, and device flow and application management pages are left out (the admin manages applications).
authorization_patterns: list[Any] = [
    path("authorize/", ConsentView.as_view(), name="authorize"),
    path("token/", public(TokenView.as_view()), name="token"),
    path("revoke_token/", public(RevokeTokenView.as_view()), name="revoke-token"),
    path("introspect/", public(IntrospectionView.as_view()), name="introspect"),
    path("register/", public(RegistrationView.as_view()), name="dcr-register"),
    path("register/<str:client_id>/", public(RegistrationManagementView.as_view()), name="dcr-register-management"),
]

urlpatterns: list[Any] = [
    path(
        ".well-known/oauth-protected-resource",
        public(ProtectedResourceMetadataView.as_view()),
        name="mcp-resource-metadata",
    ),
    path(
        ".well-known/oauth-protected-resource/<path:resource_path>",
        public(ProtectedResourceMetadataView.as_view()),
        name="mcp-resource-metadata-path",
    ),
    path(
        ".well-known/oauth-authorization-server",
        public(AuthorizationServerMetadataView.as_view()),
        name="mcp-authorization-server-metadata",
    ),
    path("oauth/login/", public(SignInView.as_view()), name=LOGIN),
    path("oauth/logout/", public(SignOutView.as_view()), name=LOGOUT),
    path("oauth/apps/", ConnectedAppsView.as_view(), name="mcp-connected-apps"),
    path("oauth/apps/<int:pk>/revoke/", RevokeView.as_view(), name="mcp-connected-app-revoke"),
    path("oauth/apps/<int:pk>/tools/", ToolsChoiceView.as_view(), name="mcp-connected-app-tools"),
    path("oauth/", include((authorization_patterns, "oauth2_provider"))),
]
