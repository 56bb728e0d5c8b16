"""The landing page: connection instructions and a live console."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import get_commands
from django.urls import NoReverseMatch, reverse
from django.views.generic import TemplateView

STDIO_USER = "alice"


class LandingView(TemplateView):
    template_name = "landing.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        from mcp_tools.routing import http_urlpatterns

        context = super().get_context_data(**kwargs)
        host = self.request.get_host()
        secure = self.request.is_secure()
        context["ws_url"] = f"{'wss' if secure else 'ws'}://{host}/mcp/ws"
        # Only advertise the transports this installation actually serves.
        context["http_url"] = f"{'https' if secure else 'http'}://{host}/mcp" if http_urlpatterns else ""
        context["has_stdio"] = "mcp_stdio" in get_commands()
        context.update(stdio_instructions())
        context["connected_apps_url"] = _connected_apps_url()
        return context


def stdio_instructions() -> dict[str, str]:
    """The stdio command with absolute paths, as a command line and as a client's ``mcpServers`` entry.

    Clients start the process in a folder of their own, so a relative ``manage.py`` would not be found.
    """
    command = [sys.executable, str(manage_py()), "mcp_stdio", "--user", STDIO_USER]
    server = {
        "command": command[0],
        "args": command[1:],
        "env": {"DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE},
    }
    return {
        "stdio_command": shlex.join(command),
        "stdio_config": json.dumps({"mcpServers": {"shop": server}}, indent=2),
    }


def manage_py() -> Path:
    """The site's ``manage.py``: beside ``BASE_DIR``'s contents, else in the folder above the settings package."""
    base = getattr(settings, "BASE_DIR", None)
    candidates = [Path(base) / "manage.py"] if base else []
    settings_package = sys.modules[settings.SETTINGS_MODULE.partition(".")[0]]
    if settings_package.__file__:
        candidates.append(Path(settings_package.__file__).resolve().parent.parent / "manage.py")
    return next((path.resolve() for path in candidates if path.is_file()), Path("manage.py").resolve())


def _connected_apps_url() -> str:
    """The page listing the apps a user connected, when the site serves OAuth (mcp_tools.oauth)."""
    try:
        return reverse("mcp-connected-apps")
    except NoReverseMatch:
        return ""
