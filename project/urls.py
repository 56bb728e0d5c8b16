"""URLs of the demo site: the admin, the shop's REST API, OAuth for connectors (with its sign-in page), the MCP
endpoint for WSGI and plain ASGI servers (``project.asgi`` routes it through Channels first) and the landing
page."""

from django.contrib import admin
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from project.shop.api.urls import router
from project.shop.views import LandingView

# What browsers ask every site for: the admin's blue, with a plug.
FAVICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    '<rect width="16" height="16" rx="3" fill="#417690"/>'
    '<path d="M5 2v4M11 2v4M3.5 6h9v2.5a4.5 4.5 0 0 1-9 0zM8 13v2" stroke="#fff" stroke-width="1.6" fill="none"/>'
    "</svg>"
)


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    return HttpResponse(FAVICON, content_type="image/svg+xml")


urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("api/", include((router.urls, "api"))),
    path("", include("mcp_tools.oauth.urls")),
    path("", include("mcp_tools.urls")),
    path("", LandingView.as_view(), name="landing"),
]
# uvicorn does not serve static files; with DEBUG on, Django serves the admin's own.
urlpatterns += staticfiles_urlpatterns()
