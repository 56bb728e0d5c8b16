"""Prepares a live-test database and reports what it made as JSON on stdout.

Run as ``python -m tests.live.seed`` with the same environment as the servers that will share the
database: applies migrations, syncs the registered tools enabled, creates the superuser ``admin``
(password ``admin``) and the user ``alice``, and issues a token for alice.
"""

from __future__ import annotations

import io
import json
import os
import sys
from typing import Any

ADMIN = ("admin", "admin")
USER = "alice"


def seed() -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from mcp_tools.models import AccessToken, Tool

    call_command("migrate", interactive=False, verbosity=0, stdout=io.StringIO())
    call_command("mcp_sync", "--enable", "--everyone", verbosity=0, stdout=io.StringIO())
    users = get_user_model()._default_manager
    users.create_superuser(ADMIN[0], "admin@example.com", ADMIN[1])
    alice = users.create_user(USER, password=USER)
    _token, raw = AccessToken.objects.issue(alice, name="live tests")
    return {
        "admin": {"username": ADMIN[0], "password": ADMIN[1]},
        "user": USER,
        "token": raw,
        "tools": dict(Tool.objects.values_list("name", "pk")),
    }


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    json.dump(seed(), sys.stdout)


if __name__ == "__main__":
    main()
