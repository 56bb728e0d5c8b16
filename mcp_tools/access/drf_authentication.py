"""The site's DRF authentication classes asked who a connection is, as a DRF view would ask them.

The one module of ``access`` that imports Django REST framework, an optional extra: ``authentication``
imports it only for a site that names AUTHENTICATION_CLASSES.
"""

from __future__ import annotations

from typing import Any, cast

from django.http import HttpRequest
from rest_framework import exceptions
from rest_framework.request import Request

from mcp_tools.access.authentication import AuthenticationFailed, Connection
from mcp_tools.conf import mcp_settings


def drf_authenticate(request: Connection) -> tuple[Any, Any]:
    """Try each configured DRF authentication class on Django's request for the connection, as a view would."""
    django_request = cast(HttpRequest, getattr(request, "django", request))
    authenticators = [cls() for cls in mcp_settings.imported("AUTHENTICATION_CLASSES")]
    drf_request = Request(django_request, authenticators=authenticators)
    try:
        for authenticator in authenticators:
            found = authenticator.authenticate(drf_request)
            if found is not None:
                user, _auth = found
                if not getattr(user, "is_active", False):
                    raise AuthenticationFailed("The user is inactive.")
                return user, None
    except exceptions.AuthenticationFailed as exc:
        raise AuthenticationFailed(str(exc.detail)) from None
    raise AuthenticationFailed("The credentials were not accepted.")
