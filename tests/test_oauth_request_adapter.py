"""The oauthlib request adapter reads what django-oauth-toolkit hands oauthlib: host, port and scheme."""

from __future__ import annotations

import pytest
from django.test import RequestFactory
from oauth2_provider.oauth2_backends import OAuthLibCore
from oauthlib.common import Request

from mcp_tools.oauth.resources import OAuthlibConnection


@pytest.mark.parametrize(("secure", "scheme"), [(True, "https"), (False, "http")])
def test_the_connection_has_the_scheme_and_host_of_the_django_request_the_toolkit_read(
    settings, secure: bool, scheme: str
) -> None:
    settings.ALLOWED_HOSTS = ["shop.example"]
    django_request = RequestFactory().post("/o/token/", secure=secure, HTTP_HOST="shop.example:8443")
    headers = OAuthLibCore().extract_headers(django_request)

    connection = OAuthlibConnection(Request("https://shop.example:8443/o/token/", http_method="POST", headers=headers))

    assert connection.scheme == scheme
    assert connection.build_absolute_uri("/mcp") == f"{scheme}://shop.example:8443/mcp"


def test_a_client_header_cannot_pass_for_the_toolkits_secure_marker() -> None:
    django_request = RequestFactory().post("/o/token/", HTTP_X_DJANGO_OAUTH_TOOLKIT_SECURE="1")
    headers = OAuthLibCore().extract_headers(django_request)

    assert OAuthlibConnection(Request("http://testserver/o/token/", headers=headers)).scheme == "http"
