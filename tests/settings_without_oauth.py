"""The test settings of a site without the ``[oauth]`` extra: no django-oauth-toolkit, no mcp_tools.oauth."""

from __future__ import annotations

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in ("oauth2_provider", "mcp_tools.oauth")]
ROOT_URLCONF = "tests.urls_without_oauth"
