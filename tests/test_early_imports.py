"""What a site imports before Django is set up loads without settings or the app registry.

A site's ``settings.py`` imports ``mcp_tools.oauth.defaults``; its ``wsgi.py`` imports ``mcp_tools.wsgi`` next to
``get_wsgi_application()``; ``python -m mcp_tools`` runs before any settings are chosen; ``INSTALLED_APPS`` loads
the app configurations before any model. Each is imported here in a fresh interpreter with no settings module.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.live.servers import ROOT

pytestmark = pytest.mark.live

EARLY = [
    "mcp_tools",
    "mcp_tools.apps",
    "mcp_tools.oauth.apps",
    "mcp_tools.oauth.defaults",
    "mcp_tools.wsgi",
    "mcp_tools.__main__",
    "mcp_tools.lifespan",
]


@pytest.mark.parametrize("module", EARLY)
def test_a_module_imported_before_django_is_set_up_needs_no_settings(module: str) -> None:
    environment = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    script = f"import {module}; from django.apps import apps; assert not apps.apps_ready"

    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 0, done.stderr
