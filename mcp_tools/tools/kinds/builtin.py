"""The kinds this package brings, registered when the app is ready."""

from __future__ import annotations

from mcp_tools.tools.kinds import checks  # noqa: F401  (registers the kinds' system checks)
from mcp_tools.tools.kinds.admin_action import AdminActionKind
from mcp_tools.tools.kinds.api_action import ApiActionKind
from mcp_tools.tools.kinds.callables import CallableKind
from mcp_tools.tools.kinds.documents import FetchKind, SearchKind
from mcp_tools.tools.kinds.model_query import ModelQueryKind
from mcp_tools.tools.kinds.registry import kinds

BUILTIN = (CallableKind, ModelQueryKind, SearchKind, FetchKind, ApiActionKind, AdminActionKind)


def register_builtin() -> None:
    for kind in BUILTIN:
        kinds.register(kind)
