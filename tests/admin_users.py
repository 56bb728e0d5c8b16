"""Signed-in admin clients holding chosen permissions, for tests of who may use which admin page."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client


def staff(username: str, *codenames: str, superuser: bool = False) -> Client:
    """A client signed in as a new staff user holding ``codenames`` ("app_label.codename", or an mcp_tools
    codename), or as a new superuser."""
    model = get_user_model()
    if superuser:
        user = model.objects.create_superuser(username, f"{username}@example.com", "pw")
    else:
        user = model.objects.create_user(username, password="pw", is_staff=True)
        for name in codenames:
            app, codename = name.split(".") if "." in name else ("mcp_tools", name)
            user.user_permissions.add(Permission.objects.get(content_type__app_label=app, codename=codename))
    client = Client()
    client.force_login(user)
    return client
