"""The tool-kind interface: what one kind of tool owns, from its configuration to running a call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from django import forms

from mcp_tools.tools.confirmations import Changes

if TYPE_CHECKING:
    from mcp_tools.models import Tool
    from mcp_tools.tools.context import Context

#: The parts of a tool row a kind may keep its configuration in (see ``ToolKind.uses``): two fields, the
#: model-query and search-source rows, and the free-form ``config`` object.
CONFIGURATION_PARTS = frozenset({"callable_name", "api_action", "query", "sources", "config"})


@dataclass(frozen=True)
class Plan:
    """What a kind built from one tool row: how its calls run and what a caller may send.

    ``runs`` is the kind's own object, handed back to ``ToolKind.run``. The schemas are what clients see; a
    kind that generates them from its configuration returns them here, so that an edited or stale row can
    never widen what a call may name.
    """

    runs: Any = None
    input_schema: dict[str, Any] | None = None  # None: the row's own
    output_schema: dict[str, Any] | None = None
    argument_names: frozenset[str] | None = None  # when set, other argument names are refused, naming these
    required_permissions: tuple[str, ...] = ()  # Django permissions a caller needs besides the tool's grant
    required_capabilities: dict[str, Any] = field(default_factory=dict)  # client capabilities (2026-07-28)
    check_output: bool = True  # False when results come from the same allow-list as the output schema


class ToolKind:
    """One kind of tool. Subclass it, set ``name`` and ``label``, and register it (``mcp_tools.register_kind``).

    A kind owns its configuration (``uses``, ``config_form``, ``check``), building a plan from a row (``plan``),
    running a call (``run``), its hints (``hints``) and its export/import shape (``uses``: the file carries the
    parts it names). Everything around a call (grants, scopes, rate limits, caps, validation against the input
    schema, the audit row, history, the admin's Try it) is the same for every kind and is not a kind's business.
    """

    #: Stored in ``Tool.kind``: lowercase letters, digits and underscores, at most 50 characters.
    name: ClassVar[str] = ""
    #: What the admin's kind choice shows.
    label: ClassVar[Any] = ""
    #: The parts of the row holding the configuration (see ``CONFIGURATION_PARTS``); a file may carry only these.
    uses: ClassVar[frozenset[str]] = frozenset({"config"})
    #: The parts a file entry of this kind must carry.
    requires: ClassVar[frozenset[str]] = frozenset()
    #: Whether the schemas derive from the configuration (read-only in the admin, never in a file).
    generates_schemas: ClassVar[bool] = True
    #: A form whose fields edit ``Tool.config`` in the admin; its ``cleaned_data`` is stored as the config.
    config_form: ClassVar[type[forms.Form] | None] = None

    def check(self, tool: Tool) -> None:
        """Raise ``ValidationError`` for a configuration that cannot run; fill what derives from it (schemas,
        a description). Called by ``Tool.full_clean()``: the admin, imports and ``mcp_sync`` all pass here."""

    def plan(self, tool: Tool) -> Plan | None:
        """The plan of ``tool``, or None when its configuration no longer fits what it names (a model field
        removed, a route gone): such a tool is offered to nobody until fixed. Called when the catalog loads."""
        return Plan(runs=tool.config)

    async def run(self, plan: Plan, arguments: dict[str, Any], ctx: Context) -> Any:
        """Run one call with arguments that passed the input schema; return what a ``@tool`` callable may
        (a value, content blocks, a ``ToolResult``) or raise ``ToolError``. Sync work goes through
        ``mcp_tools.tools.threads.run_sync``, the pool that serves users in turn."""
        raise NotImplementedError(f"{type(self).__name__} does not run calls")

    def hints(self, tool: Tool) -> dict[str, bool]:
        """The annotations that follow from what the tool does (``readOnlyHint``...); the owner's win."""
        return {}

    def confirmation(self, tool: Tool) -> str:
        """Who confirms the calls of a tool whose row leaves its confirmation blank (a ``Tool.Confirmation``
        value); "": the user when the tool writes, nobody when it reads."""
        return ""

    async def changes(self, plan: Plan, arguments: dict[str, Any], ctx: Context) -> Changes:
        """What a call with ``arguments`` would change, worked out without writing anything: lines a person
        reads, and a digest of the rows it would touch (``Changes.state``). Asked only of tools whose calls a
        person confirms. A kind that returns a state finds it unchanged when it writes (``ctx.confirmed_state``)
        or raises ``mcp_tools.exceptions.RowsChanged``; raise ``ToolError`` for a call that could not run."""
        return Changes()

    def implementation(self, tool: Tool) -> str:
        """What runs the tool, in a word or two for the admin's list."""
        return ""

    def unconfigured(self, tool: Tool) -> str | None:
        """What a just-saved tool still lacks before it can run, said to the person who saved it; None when
        nothing."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
