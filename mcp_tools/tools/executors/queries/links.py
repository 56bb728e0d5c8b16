"""The url of a search result: the row's own page or its admin change page, made absolute with ``SITE_URL``."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.urls import NoReverseMatch, reverse

from mcp_tools.conf import mcp_settings
from mcp_tools.models import SearchSource

Link = SearchSource.Link


def needs_instances(link: str) -> bool:
    return link in (Link.PAGE, Link.PAGE_OR_ADMIN)


def url(link: str, model: type[models.Model], pk: Any, instance: models.Model | None) -> str:
    """The absolute url the source's link choice gives for one row; "" when there is none."""
    path = ""
    if instance is not None and needs_instances(link) and hasattr(instance, "get_absolute_url"):
        path = str(instance.get_absolute_url())
    if not path and link in (Link.ADMIN, Link.PAGE_OR_ADMIN):
        path = admin_path(model, pk)
    return absolute(path)


def admin_path(model: type[models.Model], pk: Any) -> str:
    meta = model._meta
    try:
        return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[pk])
    except NoReverseMatch:
        return ""  # the model is not registered in the admin


def absolute(path: str) -> str:
    """``path`` on ``SITE_URL`` when it is site-relative; as it is otherwise."""
    base = str(mcp_settings.SITE_URL or "").rstrip("/")
    return f"{base}{path}" if base and path.startswith("/") else path
