"""Serve MCP over stdin/stdout for a local client (Claude Desktop, Claude Code, Cursor, ...)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_tools.access import permissions
from mcp_tools.transports import stdio


class Command(BaseCommand):
    help = "Speak MCP as USER on stdin/stdout (newline-delimited JSON-RPC). Logs go to stderr."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="The username the client acts as.")

    def handle(self, *args: Any, user: str | None = None, **options: Any) -> None:
        caller = self.caller(user)
        with stdio.stdout_reserved() as stdout, contextlib.suppress(KeyboardInterrupt):
            try:
                asyncio.run(stdio.serve(caller, stdout=stdout.buffer))
            except stdio.SessionEnded as exc:
                raise CommandError(f"Session ended: {exc}") from None

    def caller(self, username: str | None) -> Any:
        if username is None:
            if permissions.may_connect(AnonymousUser()):
                return AnonymousUser()
            raise CommandError("Give --user NAME (anonymous access is off).")
        model = get_user_model()
        try:
            found = model._default_manager.get_by_natural_key(username)
        except model.DoesNotExist:
            raise CommandError(f"No user {username!r}.") from None
        if not permissions.may_connect(found):
            raise CommandError(f"User {username!r} is not active.")
        return found
