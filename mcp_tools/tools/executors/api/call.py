"""Runs one API-action call through DRF exactly as an HTTP request would, and reads its response.

The request is a real Django request built by ``RequestFactory`` for the action's own URL, authenticated as
the MCP caller with DRF's ``force_authenticate`` (``request.user`` is the caller, ``request.auth`` the
credential the call came with). The routed view then does all it does for HTTP: authentication result,
permission classes and object permissions, throttles, ``get_queryset``, filter backends, pagination and
serializer validation. Its answer is turned into a tool result: refusals (401, 403, 404, 405) all read
"not found or not allowed", validation errors keep DRF's messages per field.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from django.conf import settings
from django.test.client import RequestFactory
from django.urls import NoReverseMatch, reverse
from rest_framework.test import force_authenticate

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import ToolError
from mcp_tools.tools import encoding
from mcp_tools.tools.content import CallResult
from mcp_tools.tools.context import Context
from mcp_tools.tools.executors.api import cursors
from mcp_tools.tools.executors.api.atomic import atomic_requests
from mcp_tools.tools.executors.api.schema import BODY_METHODS, CURSOR
from mcp_tools.tools.executors.api.spec import ApiSpec
from mcp_tools.tools.threads import run_sync

NOT_FOUND = "Not found or not allowed."
REFUSED = {401, 403, 404, 405}
DELETED = {"deleted": True}


async def run(spec: ApiSpec, arguments: dict[str, Any], ctx: Context) -> CallResult:
    result = await run_sync(execute, spec, arguments, ctx.user, ctx.credential)
    return CallResult([{"type": "text", "text": encoding.text(result)}], result, value=result)


def execute(spec: ApiSpec, arguments: dict[str, Any], user: Any, credential: Any = None) -> dict[str, Any]:
    """The action's answer as structured content; ToolError for what the API refused."""
    action, parameters = spec.action, spec.parameters
    kwargs = {action.lookup: str(arguments[action.lookup])} if action.lookup else {}
    try:
        path = reverse(action.url_name, kwargs=kwargs)
    except NoReverseMatch:
        raise ToolError(NOT_FOUND) from None  # a lookup value the route itself refuses
    query = {name: _query_value(arguments[name]) for name in sorted(parameters.query) if name in arguments}
    if parameters.size and parameters.size in arguments:
        query[parameters.size] = str(arguments[parameters.size])
    if CURSOR in arguments:
        page = cursors.read(str(arguments[CURSOR]), spec.tool_name, user, arguments, spec.unbound)
        query.update({k: v for k, v in page.items() if k in parameters.page or k == parameters.size})
    body = {name: arguments[name] for name in parameters.body if name in arguments}
    request = RequestFactory().generic(
        action.method,
        path,
        data=json.dumps(body, default=str) if action.method in BODY_METHODS else "",
        content_type="application/json",
        query_params=query,
        SERVER_NAME=_host(),
    )
    force_authenticate(request, user=user, token=credential)
    with atomic_requests(action.view):
        response = action.view(request, **kwargs)
    return _result(spec, arguments, user, response.status_code, getattr(response, "data", None))


def _result(spec: ApiSpec, arguments: dict[str, Any], user: Any, status: int, data: Any) -> dict[str, Any]:
    if status in REFUSED:
        raise ToolError(NOT_FOUND)
    if status == 400:
        raise ToolError(f"The API refused the input. {_messages(data)}")
    if 400 < status < 500:
        raise ToolError(_messages(data) or f"The API answered {status}.")
    if status >= 500:
        raise RuntimeError(f"{spec.action.key} answered {status}")
    if data is None:
        return dict(DELETED) if spec.action.method == "DELETE" else {}
    plain = encoding.plain(data)
    if isinstance(plain, list):
        return {"results": plain[: int(mcp_settings.ROW_CAP)]}
    if spec.parameters.paginated and isinstance(plain, dict) and isinstance(plain.get("results"), list):
        result: dict[str, Any] = {"results": plain["results"]}
        if isinstance(plain.get("count"), int):
            result["count"] = plain["count"]
        following = plain.get("next")
        if isinstance(following, str) and following:
            # The page size travels too: page numbers count pages of one size, and a limit without its offset
            # would read another page (or, with no default limit, the whole list).
            kept = {*spec.parameters.page, spec.parameters.size}
            page = {k: v for k, v in parse_qsl(urlsplit(following).query) if k in kept}
            result["nextCursor"] = cursors.issue(spec.tool_name, user, arguments, spec.unbound, page)
        return result
    return plain if isinstance(plain, dict) else {"result": plain}


def _messages(data: Any) -> str:
    """DRF's error detail as one line: ``field: message`` per field, the detail alone for a plain refusal."""
    if isinstance(data, dict):
        if set(data) == {"detail"}:
            return str(data["detail"])
        return " ".join(f"{name}: {_flat(value)}" for name, value in data.items())
    return _flat(data)


def _flat(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(_flat(item) for item in value)
    if isinstance(value, dict):
        return "; ".join(f"{name}: {_flat(item)}" for name, item in value.items())
    return str(value)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def _host() -> str:
    """A host the site allows, for the links DRF builds (next pages); the request never leaves the process."""
    for host in settings.ALLOWED_HOSTS:
        if host and host != "*" and not host.startswith("*"):
            return host.lstrip(".")
    return "localhost"
