from django.contrib import admin
from django.urls import include, path

from tests.testapp import admin as back_office
from tests.testapp.api import router

urlpatterns = [
    path("admin/", admin.site.urls),
    path("backoffice/", back_office.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include((router.urls, "api"), namespace="api")),
    path("", include("mcp_tools.oauth.urls")),
    path("", include("mcp_tools.urls")),
]
