"""The actions the site's admin offers on its registered models, and which of them a tool can run.

An action that answers with a page of its own (the built-in delete asks for confirmation; others render a form)
needs a person at a browser: such actions are listed as not usable, with the reason. An action is found to answer
with a page when it is the built-in delete, or when its code returns a value anywhere; a call that gets a page
anyway changes nothing (see ``run``).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.apps import apps
from django.contrib.admin import AdminSite, ModelAdmin
from django.contrib.admin.actions import delete_selected
from django.contrib.admin.utils import model_format_dict
from django.db import models
from django.utils.module_loading import import_string

from mcp_tools.conf import mcp_settings

#: How a tool names an action: "<app_label>.<model_name>:<action name>", e.g. "shop.order:mark_shipped".
KEY_SEP = ":"


@dataclass(frozen=True)
class OfferedAction:
    """One action of one registered model's ModelAdmin."""

    key: str
    model: type[models.Model]
    name: str
    description: str
    func: Callable[..., Any]
    problem: str = ""  # why a tool cannot run it; empty when it can

    @property
    def usable(self) -> bool:
        return not self.problem

    @property
    def allowed_permissions(self) -> tuple[str, ...]:
        return tuple(getattr(self.func, "allowed_permissions", ()))

    @property
    def label(self) -> str:
        shown = f"{self.model._meta.verbose_name_plural}: {self.description}"
        return shown if self.usable else f"{shown} (not usable: {self.problem})"


def admin_site() -> AdminSite:
    """The admin site whose actions tools run (setting ADMIN_SITE, a dotted path to an AdminSite instance)."""
    site = import_string(str(mcp_settings.ADMIN_SITE))
    if not isinstance(site, AdminSite):
        raise TypeError(f"MCP_TOOLS['ADMIN_SITE'] names {type(site).__name__}, not an AdminSite")
    return site


def model_admin(model: type[models.Model]) -> ModelAdmin[Any] | None:
    site = admin_site()
    return site.get_model_admin(model) if site.is_registered(model) else None


def offered() -> dict[str, OfferedAction]:
    """Every action of every ModelAdmin of the site's admin, by key, before any user's permissions narrow them."""
    site = admin_site()
    found: dict[str, OfferedAction] = {}
    for model in apps.get_models():
        admin = model_admin(model)
        if admin is None:
            continue
        for func, name, description in actions_of(site, admin):
            key = f"{model._meta.label_lower}{KEY_SEP}{name}"
            shown = str(description) % model_format_dict(model._meta)
            found[key] = OfferedAction(key, model, name, shown, func, page_problem(func))
    return found


def actions_of(site: AdminSite, admin: ModelAdmin[Any]) -> list[tuple[Callable[..., Any], str, str]]:
    """(function, name, description) of each action ``admin`` has, the site's own first (as the admin orders
    them), through the public ``AdminSite.actions`` and ``ModelAdmin.get_action``."""
    if admin.actions is None:
        return []  # the ModelAdmin turned actions off
    named: dict[str, tuple[Callable[..., Any], str, str]] = {}
    for action in [name for name, _func in site.actions] + list(admin.actions):
        found = admin.get_action(action)
        if found is not None:
            func, name, description = action_parts(found)
            named[name] = (func, name, description)
    return list(named.values())


def action_parts(found: Any) -> tuple[Callable[..., Any], str, str]:
    """(function, name, description) of an action as ``ModelAdmin.get_action`` and ``get_actions`` give it: a tuple
    up to Django 6.0, an ``Action`` with those attributes from 6.1 (which deprecates unpacking it)."""
    if isinstance(found, tuple):
        func, name, description = found
        return func, str(name), str(description)
    description = getattr(found, "plural_description", None) or found.description
    return found.func, str(found.name), str(description)


def find(key: str) -> OfferedAction | None:
    return offered().get(key)


def page_problem(func: Callable[..., Any]) -> str:
    """Why ``func`` cannot run as a tool (it answers with a page of its own); empty when it can."""
    if func is delete_selected:
        return "it asks for confirmation on a page of its own"
    if returns_value(func):
        return "it may answer with a page of its own"
    return ""


@lru_cache(maxsize=1024)  # an action's code does not change while the process runs; reading it is not cheap
def returns_value(func: Callable[..., Any]) -> bool:
    """Whether the code of ``func`` returns a value anywhere (besides a bare ``return`` or ``return None``)."""
    try:
        source = textwrap.dedent(inspect.getsource(inspect.unwrap(func)))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return False  # no source to read: a call that gets a page anyway changes nothing
    function = tree.body[0] if tree.body else None
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    return any(isinstance(node, ast.Return) and _is_value(node.value) for node in _own_nodes(function))


def _is_value(node: ast.expr | None) -> bool:
    return node is not None and not (isinstance(node, ast.Constant) and node.value is None)


def _own_nodes(function: ast.AST) -> list[ast.AST]:
    # The function's own statements, not those of functions defined inside it.
    found: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found
