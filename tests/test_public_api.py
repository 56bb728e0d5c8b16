"""What a site imports: the package's public names, and the old module paths that still work for a release."""

from __future__ import annotations

import importlib

import pytest

import mcp_tools
from mcp_tools.access import permissions, sensitive
from mcp_tools.notify import counters
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
    ("old", "name", "new"),
    [
        ("mcp_tools.permissions", "IsAuthenticated", permissions),
        ("mcp_tools.permissions", "BasePermission", permissions),
        ("mcp_tools.content", "ToolResult", content),
        ("mcp_tools.sensitive", "is_secret_name", sensitive),
        ("mcp_tools.polling", "bump", counters),
    ],
)
def test_an_old_path_still_works_with_a_deprecation_warning_naming_the_new_one(old: str, name: str, new: object):
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} moved to {new.__name__}\.{name}"):
        found = getattr(module, name)
    assert found is getattr(new, name)


def test_the_old_permission_class_paths_in_settings_still_decide(settings) -> None:
    from django.contrib.auth.models import AnonymousUser, User

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PERMISSION_CLASSES": ["mcp_tools.permissions.IsAuthenticated"]}
    with pytest.warns(DeprecationWarning):
        allowed = permissions.may_use(User(username="u", is_active=True), tool=None)
    assert allowed and not permissions.may_use(AnonymousUser(), tool=None)
