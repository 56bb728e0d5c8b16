"""URLs of the demo site: the admin, sign-in, the shop's REST API, OAuth for connectors and the landing page
(MCP routes live in ``project.asgi``)."""

from django.contrib import admin
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.urls import include, path

from project.shop.api.urls import router
from project.shop.views import LandingView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include((router.urls, "api"))),
    path("", include("mcp_tools.oauth.urls")),
    path("", LandingView.as_view(), name="landing"),
]
# uvicorn does not serve static files; with DEBUG on, Django serves the admin's own.
urlpatterns += staticfiles_urlpatterns()
