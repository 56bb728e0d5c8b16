"""An API-action tool as calls need it: the routed action and where each argument goes."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_tools.conf import mcp_settings
from mcp_tools.tools.executors.api.actions import ApiAction, find
from mcp_tools.tools.executors.api.schema import Parameters, inspect


@dataclass(frozen=True)
class ApiSpec:
    tool_name: str
    action: ApiAction
    parameters: Parameters

    @property
    def unbound(self) -> frozenset[str]:
        """Arguments a page cursor is not bound to: the cursor itself and the page size."""
        return frozenset({"cursor", *([self.parameters.size] if self.parameters.size else [])})


def build(key: str, tool_name: str) -> ApiSpec | None:
    """The spec of the action ``key`` names, or None when the site routes no such action (any more)."""
    action = find(key)
    if action is None:
        return None
    return ApiSpec(tool_name, action, inspect(action, int(mcp_settings.ROW_CAP)))
