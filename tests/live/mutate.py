"""Changes a live-test database from a process of its own, as ``manage.py shell`` or a worker would.

Run as ``python -m tests.live.mutate ACTION ARG...`` with the site's environment; prints a JSON value:

- ``restrict TOOL USER``: the tool is granted to USER only (no longer to everyone).
- ``ungrant TOOL USER`` / ``disable TOOL`` / ``enable TOOL``
- ``limit TOOL TIMEOUT MAX``: the tool's timeout (seconds) and concurrent calls per user (``-``: blank)
- ``user NAME``: create an active user; ``deactivate NAME``
- ``issue USER``: a new token for USER (prints the secret); ``revoke SECRET``: delete that token;
  ``token-id SECRET``: its primary key
- ``expire SECRET``: the token's expiry is saved one minute in the past
- ``issue-oauth USER RESOURCE``: a django-oauth-toolkit access token for USER, issued for RESOURCE with scope
  ``mcp`` (prints the secret); ``revoke-oauth SECRET``: delete that token
- ``expire-oauth SECRET``: the OAuth token's expiry is saved one minute in the past
- ``oauth-expires-in SECRET SECONDS``: the OAuth token's expiry is saved SECONDS from now
- ``introspector-oauth NAME CLIENT_ID``: a confidential client (a resource server) with that client ID and a
  new secret, which introspects tokens where ``OAUTH_INTROSPECTION_CLIENTS`` names it (prints [client_id, secret])
- ``last-call TOOL``: the newest audit row of TOOL (read only): username, client, token id, outcome
- ``ok-calls TOOL``: the arguments of every audit row of TOOL whose outcome is ok (read only)
- ``account-names``: the name of every ``testapp.Account`` (read only)
- ``last-outcome TOOL``: the outcome and message of the newest audit row of TOOL (read only)
- ``staff NAME CODENAME...``: a staff user NAME (password NAME) holding those mcp_tools permissions
- ``running-calls``: tool name and whether a cancel was requested, of every calls-in-flight row (read only)
- ``stale-call TOOL``: a calls-in-flight row of TOOL that a process which died last renewed an hour ago
"""

from __future__ import annotations

import json
import os
import secrets
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
    elif action == "limit":
        tool = Tool.objects.get(name=args[0])
        tool.timeout_seconds, tool.max_concurrent_calls = (None if a == "-" else int(a) for a in args[1:3])
        tool.save()
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
    elif action == "token-id":
        return AccessToken.objects.get(digest=hash_token(args[0])).pk
    elif action == "revoke":
        AccessToken.objects.get(digest=hash_token(args[0])).delete()
    elif action == "expire":
        token = AccessToken.objects.get(digest=hash_token(args[0]))
        token.expires_at = timezone.now() - timedelta(minutes=1)
        token.save()
    elif action.endswith("-oauth") or action.startswith("oauth-"):
        return oauth(action, *args)
    elif action == "last-call":
        from mcp_tools.models import ToolCall

        call = ToolCall.objects.filter(tool_name=args[0]).order_by("-pk").first()
        assert call is not None, f"no call of {args[0]} was recorded"
        return {"username": call.username, "client": call.client, "token": call.token_id, "outcome": call.outcome}
    elif action == "ok-calls":
        from mcp_tools.models import ToolCall

        return list(ToolCall.objects.filter(tool_name=args[0], outcome="ok").values_list("arguments", flat=True))
    elif action.startswith(("running-", "stale-", "staff", "last-outcome")):
        return running_calls(action, *args)
    elif action == "account-names":
        from tests.testapp.models import Account

        return list(Account.objects.values_list("name", flat=True))
    else:
        raise SystemExit(f"Unknown action {action!r}")
    return None


def running_calls(action: str, *args: str) -> Any:
    """Actions on the rows of calls in flight, their audit, and the staff who may see or cancel them."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from django.utils import timezone

    from mcp_tools.models import RunningCall, ToolCall

    if action == "last-outcome":
        call = ToolCall.objects.filter(tool_name=args[0]).order_by("-pk").first()
        assert call is not None, f"no call of {args[0]} was recorded"
        return [call.outcome, call.message]
    if action == "staff":
        user = get_user_model()._default_manager.create_user(args[0], password=args[0], is_staff=True)
        user.user_permissions.add(
            *Permission.objects.filter(content_type__app_label="mcp_tools", codename__in=args[1:])
        )
        return user.pk
    if action == "running-calls":
        rows = RunningCall.objects.order_by("pk")
        return [[row.tool_name, row.cancel_requested_at is not None] for row in rows]
    if action == "stale-call":
        long_ago = timezone.now() - timedelta(hours=1)
        row = RunningCall.objects.create(
            process="gone:1:000000", key="1", tool_name=args[0], started_at=long_ago, seen_at=long_ago
        )
        return row.pk
    raise SystemExit(f"Unknown action {action!r}")


def oauth(action: str, *args: str) -> Any:
    """Actions on django-oauth-toolkit's access tokens (each ``save``/``delete`` sends its signals)."""
    import hashlib

    from django.contrib.auth import get_user_model
    from django.utils import timezone
    from oauth2_provider.models import get_access_token_model, get_application_model

    tokens = get_access_token_model().objects
    if action == "introspector-oauth":
        Application = get_application_model()
        secret = secrets.token_urlsafe(30)
        # Asked again (a fixture per test), the same client is given a new secret.
        resource_server, _ = Application.objects.update_or_create(
            client_id=args[1],
            defaults={
                "name": args[0],
                "client_type": Application.CLIENT_CONFIDENTIAL,
                "authorization_grant_type": Application.GRANT_CLIENT_CREDENTIALS,
                "client_secret": secret,
            },
        )
        return [resource_server.client_id, secret]
    if action == "issue-oauth":
        Application = get_application_model()
        application = Application.objects.create(
            name="freshness",
            client_type=Application.CLIENT_PUBLIC,
            authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
            redirect_uris="http://127.0.0.1/callback",
        )
        raw = secrets.token_urlsafe(30)
        tokens.create(
            user=get_user_model()._default_manager.get(username=args[0]),
            application=application,
            token=raw,
            expires=timezone.now() + timedelta(hours=1),
            scope="mcp",
            resource=[args[1]],
        )
        return raw
    token = tokens.get(token_checksum=hashlib.sha256(args[0].encode()).hexdigest())
    if action == "revoke-oauth":
        token.delete()
    elif action == "expire-oauth":
        token.expires = timezone.now() - timedelta(minutes=1)
        token.save()
    elif action == "oauth-expires-in":
        token.expires = timezone.now() + timedelta(seconds=float(args[1]))
        token.save()
        return token.expires.isoformat()
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
