"""The landing page: connection instructions and a live console."""

from __future__ import annotations

from typing import Any

from django.core.management import get_commands
from django.urls import NoReverseMatch, reverse
from django.views.generic import TemplateView


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
        context["connected_apps_url"] = _connected_apps_url()
        return context


def _connected_apps_url() -> str:
    """The page listing the apps a user connected, when the site serves OAuth (mcp_tools.oauth)."""
    try:
        return reverse("mcp-connected-apps")
    except NoReverseMatch:
        return ""
