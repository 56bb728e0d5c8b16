"""A site without the ``[oauth]`` extra: nothing imports django-oauth-toolkit, and refusals point nowhere."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.live.servers import ROOT

pytestmark = pytest.mark.live

# Run in a process of its own where importing the toolkit fails, as it would where it is not installed.
SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os, sys

    class Absent:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("oauth2_provider", "oauthlib"):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, Absent())
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings_without_oauth"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("check", "--fail-level", "ERROR")
    from mcp_tools.access.authentication import AuthenticationFailed, refusal_challenge
    from mcp_tools.transports.http_request import connection_request
    import mcp_tools.routing

    request = connection_request({"type": "http", "headers": [(b"host", b"testserver")], "path": "/mcp"})
    print(json.dumps([refusal_challenge(request), refusal_challenge(request, AuthenticationFailed("No."))]))
    """
)


def test_without_the_toolkit_the_site_checks_clean_and_refusals_name_no_metadata() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )

    assert completed.returncode == 0, completed.stderr[-2000:]
    assert json.loads(completed.stdout.strip().splitlines()[-1]) == [
        'Bearer realm="mcp"',
        'Bearer realm="mcp", error="invalid_token", error_description="No."',
    ]
