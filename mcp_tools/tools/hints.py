"""What a tool tells clients about itself besides its schemas: its title and the hints derived from what it does.

A hint left unset on the row (null) is derived; one the owner set wins. Registered callables derive none:
only their author knows what they do.
"""

from __future__ import annotations

from django.utils.text import capfirst

from mcp_tools.models import ModelQuery, Tool

Operation = ModelQuery.Operation

READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
CREATE = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
CHANGE = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
BY_OPERATION: dict[str, dict[str, bool]] = {
    Operation.LIST: READ,
    Operation.GET: READ,
    Operation.COUNT: READ,
    Operation.AGGREGATE: READ,
    Operation.CREATE: CREATE,
    Operation.UPDATE: CHANGE,
    Operation.DELETE: CHANGE,
}


BY_METHOD: dict[str, dict[str, bool]] = {
    "GET": READ,
    "POST": CREATE,
    "PUT": CHANGE,
    "PATCH": CHANGE,
    "DELETE": CHANGE,
}
# A POST to one object's route (an ``@action(detail=True)`` such as ``/orders/{pk}/cancel/``) changes what exists.
POST_ON_OBJECT = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}


def derived(row: Tool) -> dict[str, bool]:
    """The hints that follow from what the tool does: model reads, creates, changes, an API action's HTTP method;
    nothing for callables."""
    if row.searches_models:
        return dict(READ)
    if row.kind == Tool.Kind.API_ACTION:
        return api_hints(row.api_action)
    query = getattr(row, "query", None) if row.kind == Tool.Kind.MODEL_QUERY else None
    return dict(BY_OPERATION.get(query.operation, {})) if query is not None else {}


def annotations_of(row: Tool) -> dict[str, bool]:
    """The hints a client sees: the derived ones, overridden by those set on the row."""
    return {**derived(row), **row.annotations}


def humanised(name: str) -> str:
    """A title made from a tool name: ``list_orders`` reads "List orders"."""
    words = " ".join(name.replace("_", " ").replace("-", " ").replace(".", " ").split())
    return str(capfirst(words))


def title(row: Tool) -> str:
    return row.title or humanised(row.name)


def api_hints(key: str) -> dict[str, bool]:
    """The hints of the API action ``key`` names, from its HTTP method and route; none when DRF is missing or the
    site routes no such action."""
    try:
        from mcp_tools.tools.executors.api.actions import find  # needs DRF, which is optional
    except ImportError:
        return {}
    action = find(key)
    if action is None:
        return {}
    if action.method == "POST" and getattr(action.view, "initkwargs", {}).get("detail"):
        return dict(POST_ON_OBJECT)
    return dict(BY_METHOD.get(action.method, {}))
