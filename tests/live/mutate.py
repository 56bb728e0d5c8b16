"""Changes a live-test database from a process of its own, as ``manage.py shell`` or a worker would.

Run as ``python -m tests.live.mutate ACTION ARG...`` with the site's environment; prints a JSON value:

- ``restrict TOOL USER``: the tool is granted to USER only (no longer to everyone).
- ``ungrant TOOL USER`` / ``disable TOOL`` / ``enable TOOL``
- ``user NAME``: create an active user; ``deactivate NAME``
- ``issue USER``: a new token for USER (prints the secret); ``revoke SECRET``: delete that token
- ``expire SECRET``: the token's expiry is saved one minute in the past
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta
from typing import Any


def run(action: str, *args: str) -> Any:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from mcp_tools.models import AccessToken, Tool, UserGrant, hash_token

    users = get_user_model()._default_manager
    if action in ("enable", "disable"):
        tool = Tool.objects.get(name=args[0])
        tool.enabled = action == "enable"
        tool.save()
    elif action == "restrict":
        tool = Tool.objects.get(name=args[0])
        tool.everyone = False
        tool.save()
        UserGrant.objects.get_or_create(tool=tool, user=users.get(username=args[1]))
    elif action == "ungrant":
        UserGrant.objects.get(tool__name=args[0], user__username=args[1]).delete()
    elif action == "user":
        return users.create_user(args[0]).pk
    elif action == "deactivate":
        user = users.get(username=args[0])
        user.is_active = False
        user.save()
    elif action == "issue":
        return AccessToken.objects.issue(users.get(username=args[0]), name="freshness")[1]
    elif action == "revoke":
        AccessToken.objects.get(digest=hash_token(args[0])).delete()
    elif action == "expire":
        token = AccessToken.objects.get(digest=hash_token(args[0]))
        token.expires_at = timezone.now() - timedelta(minutes=1)
        token.save()
    else:
        raise SystemExit(f"Unknown action {action!r}")
    return None


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    json.dump(run(*sys.argv[1:]), sys.stdout)


if __name__ == "__main__":
    main()
