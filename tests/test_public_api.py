"""What a site imports: the package's public names, and not the old module paths, removed in 0.1.0."""

from __future__ import annotations

import importlib

import pytest

import mcp_tools
from mcp_tools.access import permissions
from mcp_tools.tools import content


def test_every_public_name_resolves_to_the_object_its_module_defines() -> None:
    for name in mcp_tools.__all__:
        assert getattr(mcp_tools, name) is not None
    assert mcp_tools.IsAuthenticated is permissions.IsAuthenticated
    assert mcp_tools.ToolResult is content.ToolResult


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        mcp_tools.nothing  # noqa: B018


@pytest.mark.parametrize(
    "old",
    ["mcp_tools.permissions", "mcp_tools.content", "mcp_tools.sensitive", "mcp_tools.polling", "mcp_tools.deprecation"],
)
def test_the_old_module_paths_are_gone(old: str) -> None:
    with pytest.raises(ModuleNotFoundError, match=rf"No module named '{old}'"):
        importlib.import_module(old)


def test_an_old_permission_class_path_in_settings_is_refused_by_its_check(settings) -> None:
    from mcp_tools.checks import check_settings

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PERMISSION_CLASSES": ["mcp_tools.permissions.IsAuthenticated"]}

    assert [message.id for message in check_settings()] == ["mcp_tools.E003"]
