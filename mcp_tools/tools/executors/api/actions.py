"""The ViewSet actions of the site's DRF routers, found in its URLconf: what an API-action tool can name.

A router's URL patterns hold views made by ``ViewSetMixin.as_view``, which carry their class (``cls``), their
init arguments and their method-to-action map (``actions``). Each (URL name, action) is one action here; its
key, ``"<namespaced URL name>.<action>"`` (``api:order-list.list``), is what a tool stores.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

#: The HTTP methods an action may answer, in the order one is preferred when an action answers several.
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class ApiAction:
    """One ViewSet action as a router routes it."""

    key: str
    url_name: str
    action: str
    method: str  # upper case
    route: str
    view: Callable[..., Any]
    lookup: str | None  # the URL keyword of a detail route

    @property
    def viewset(self) -> type[Any]:
        return self.view.cls  # type: ignore[attr-defined]

    @property
    def label(self) -> str:
        return f"{self.method} /{self.route} ({self.viewset.__name__}.{self.action})"


def available(urlconf: str | None = None) -> dict[str, ApiAction]:
    """Every routed ViewSet action of the URLconf, by key, in URL order."""
    return _routed(get_resolver(urlconf))


@lru_cache(maxsize=8)
def _routed(resolver: URLResolver) -> dict[str, ApiAction]:
    # Django keeps one resolver per URLconf (and a new one when settings change it), so one walk each.
    found: dict[str, ApiAction] = {}
    for action in _walk(resolver.url_patterns, "", ""):
        found.setdefault(action.key, action)
    return found


def find(key: str, urlconf: str | None = None) -> ApiAction | None:
    return available(urlconf).get(key)


def _walk(patterns: list[Any], prefix: str, namespace: str) -> Iterator[ApiAction]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
        elif isinstance(pattern, URLPattern):
            yield from _actions(pattern, prefix, namespace)


def _actions(pattern: URLPattern, prefix: str, namespace: str) -> Iterator[ApiAction]:
    view = pattern.callback
    actions = getattr(view, "actions", None)
    if not pattern.name or not isinstance(actions, dict) or not hasattr(view, "cls"):
        return
    route = prefix + str(pattern.pattern)
    if "<format>" in route or "(?P<format>" in route:
        return  # the format-suffixed twin of a route already listed
    keywords = list(pattern.pattern.regex.groupindex)
    lookup = keywords[-1] if keywords else None
    by_action: dict[str, str] = {}
    for method in METHODS:
        name = actions.get(method)
        if isinstance(name, str):
            by_action.setdefault(name, method)
    for name, method in by_action.items():
        yield ApiAction(
            key=f"{namespace}{pattern.name}.{name}",
            url_name=f"{namespace}{pattern.name}",
            action=name,
            method=method.upper(),
            route=_readable(route),
            view=view,
            lookup=lookup,
        )


def _readable(route: str) -> str:
    """A router's regex route as people read it: ``^orders/(?P<pk>[^/.]+)/$`` reads ``orders/{pk}/``."""
    text = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route)
    return text.replace("^", "").replace("$", "").replace("\\.", ".")
