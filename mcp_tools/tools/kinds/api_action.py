"""API actions: the site's own Django REST framework ViewSet actions, run as their HTTP requests would run."""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from mcp_tools.models import Tool
from mcp_tools.tools.content import CallResult
from mcp_tools.tools.context import Context
from mcp_tools.tools.executors.api.actions import find
from mcp_tools.tools.kinds.base import Plan, ToolKind
from mcp_tools.tools.kinds.model_query import CHANGE, CREATE, READ

logger = logging.getLogger("mcp_tools")

BY_METHOD: dict[str, dict[str, bool]] = {"GET": READ, "POST": CREATE, "PUT": CHANGE, "PATCH": CHANGE, "DELETE": CHANGE}
# A POST to one object's route (an ``@action(detail=True)`` such as ``/orders/{pk}/cancel/``) changes what exists.
POST_ON_OBJECT = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}


class ApiActionKind(ToolKind):
    name = Tool.Kind.API_ACTION.value
    label = Tool.Kind.API_ACTION.label
    uses = frozenset({"api_action"})

    def check(self, tool: Tool) -> None:
        """The tool names a routed action; its schemas and (when blank) description are the API's."""
        if not tool.api_action:
            raise ValidationError({"api_action": _("Choose the API action this tool runs.")})
        try:
            engine = drf_engine()
        except ImportError:
            raise ValidationError({"kind": _("API actions need Django REST framework installed.")}) from None
        api = engine.spec.build(tool.api_action, tool.name)
        if api is None:
            message = _("The site routes no API action %(key)s.") % {"key": tool.api_action}
            raise ValidationError({"api_action": message})
        tool.input_schema = api.parameters.input_schema
        tool.output_schema = api.parameters.output_schema
        if not tool.description:
            tool.description = api.parameters.description

    def plan(self, tool: Tool) -> Plan | None:
        try:
            api = drf_engine().spec.build(tool.api_action, tool.name)
        except Exception:
            logger.exception("Tool %s names API action %s, which could not be inspected", tool.name, tool.api_action)
            return None
        if api is None:
            logger.warning("Tool %s names API action %s, which the site no longer routes", tool.name, tool.api_action)
            return None
        # As for model queries, the schemas come from the API itself, never from an edited or stale row.
        parameters = api.parameters
        return Plan(
            runs=api,
            input_schema=parameters.input_schema,
            output_schema=parameters.output_schema,
            argument_names=frozenset(parameters.input_schema["properties"]),
        )

    async def run(self, plan: Plan, arguments: dict[str, Any], ctx: Context) -> CallResult:
        result: CallResult = await drf_engine().call.run(plan.runs, arguments, ctx)
        return result

    def hints(self, tool: Tool) -> dict[str, bool]:
        """From the action's HTTP method and route; none when the site routes no such action."""
        action = find(tool.api_action)
        if action is None:
            return {}
        if action.method == "POST" and getattr(action.view, "initkwargs", {}).get("detail"):
            return dict(POST_ON_OBJECT)
        return dict(BY_METHOD.get(action.method, {}))

    def implementation(self, tool: Tool) -> str:
        return tool.api_action


class Engine:
    """The parts of the API engine that need Django REST framework."""

    def __init__(self, spec: ModuleType, call: ModuleType) -> None:
        self.spec, self.call = spec, call


_engine: Engine | None = None


def drf_engine() -> Engine:
    """The API engine; ImportError when Django REST framework is not installed."""
    global _engine
    if _engine is None:
        # Django REST framework is an optional extra: imported when an API-action tool is first checked or built.
        from mcp_tools.tools.executors.api import call, spec

        _engine = Engine(spec, call)
    return _engine
