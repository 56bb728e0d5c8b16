"""The discovery documents: RFC 9728 protected-resource metadata for the MCP endpoint, RFC 8414 for the
authorization server, both readable from any origin (browser-based clients fetch them cross-origin)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import NoReverseMatch, reverse
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import OAuthProtectedResourceMetadataView, OAuthServerMetadataView

from mcp_tools.access.resource import resource_url
from mcp_tools.conf import mcp_settings
from mcp_tools.oauth.cors import CrossOrigin
from mcp_tools.oauth.introspection import introspectors

WELL_KNOWN = "/.well-known/oauth-authorization-server"


class Discoverable(CrossOrigin):
    """A discovery document: GET (and its CORS preflight) only."""

    http_method_names = ["get", "options"]


class ProtectedResourceMetadataView(Discoverable, OAuthProtectedResourceMetadataView):
    """``/.well-known/oauth-protected-resource`` and its form suffixed with the MCP endpoint's path."""

    def get(self, request: HttpRequest, *args: Any, resource_path: str = "", **kwargs: Any) -> HttpResponse:
        resource = resource_url(request)
        if resource is None:
            return JsonResponse({"error": "invalid_request", "error_description": "Unknown host."}, status=400)
        if resource_path and "/" + resource_path.strip("/") != urlsplit(resource).path.rstrip("/"):
            raise Http404("No protected resource lives at this path.")
        self.resource = resource
        return super().get(request, *args, **kwargs)

    def get_resource(self, request: HttpRequest) -> str:
        return self.resource

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        """The external servers configured (``OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS``), else this
        site's own: the issuer its RFC 8414 document names."""
        configured = super().get_authorization_servers(request)
        if configured and oauth2_settings.OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS:
            return list(configured)
        try:
            document = reverse("mcp-authorization-server-metadata")
        except NoReverseMatch:
            return list(configured)
        issuer = oauth2_settings.OIDC_ISS_ENDPOINT or request.build_absolute_uri(document).partition(WELL_KNOWN)[0]
        return [issuer]

    def get_scopes_supported(self) -> list[str]:
        return [str(scope) for scope in mcp_settings.OAUTH_SCOPES]

    def get_resource_name(self) -> str:
        return str(mcp_settings.SERVER_TITLE or mcp_settings.SERVER_NAME)


class AuthorizationServerMetadataView(Discoverable, OAuthServerMetadataView):
    """``/.well-known/oauth-authorization-server``: the site's own authorization server."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().get(request, *args, **kwargs)
        document = json.loads(response.content)
        # Introspection is for resource servers, which always authenticate; "none" is the token endpoint's.
        methods = document.get("introspection_endpoint_auth_methods_supported")
        if methods:
            document["introspection_endpoint_auth_methods_supported"] = [m for m in methods if m != "none"]
        if not introspectors():
            # No client may introspect: an endpoint that refuses everyone is not advertised.
            document.pop("introspection_endpoint", None)
            document.pop("introspection_endpoint_auth_methods_supported", None)
        return JsonResponse(document)
