"""Cross-origin reads of the endpoints a browser-based client calls before it holds any credential.

These endpoints take no cookies (a client authenticates with its ``client_id``, a PKCE verifier or a
registration document), so any origin may call them: ``Access-Control-Allow-Origin: *`` without
``Allow-Credentials``, which browsers never combine with cookies. The consent page is not among them.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

ALLOWED_HEADERS = "Authorization, Content-Type, MCP-Protocol-Version"


class CrossOrigin:
    """Answers CORS preflights and marks every answer readable from any origin (a view mixin)."""

    http_method_names: list[str]

    def options(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return self.cors(HttpResponse(status=204))

    def cors(self, response: HttpResponse) -> HttpResponse:
        response["Access-Control-Allow-Origin"] = "*"
        response["Access-Control-Allow-Methods"] = ", ".join(
            method.upper() for method in self.http_method_names if method != "head"
        )
        response["Access-Control-Allow-Headers"] = ALLOWED_HEADERS
        response["Access-Control-Max-Age"] = "86400"
        return response

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response: HttpResponse = super().dispatch(request, *args, **kwargs)  # type: ignore[misc]
        return self.cors(response)
