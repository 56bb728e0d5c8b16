"""Delete what mcp_tools no longer needs: old audit rows, the rows of ended or expired sessions, and the rows
of calls in flight that no process renews any more."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_tools.access import audit
from mcp_tools.conf import mcp_settings
from mcp_tools.server import running_calls
from mcp_tools.transports import http_sessions


class Command(BaseCommand):
    help = (
        "Delete tool-call audit rows older than MCP_TOOLS['AUDIT_RETENTION_DAYS'] (or --days) and the rows of "
        "Streamable HTTP sessions that ended or were idle for MCP_TOOLS['SESSION_TTL_SECONDS'], and of calls in "
        "flight that no worker process renewed for MCP_TOOLS['RUNNING_CALLS_STALE_SECONDS']."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=None, help="Keep this many days of audit rows instead.")

    def handle(self, *args: Any, days: int | None = None, **options: Any) -> None:
        if days is not None and days < 0:
            raise CommandError("--days must be zero or more.")
        deleted = audit.prune(days)
        keep = days if days is not None else mcp_settings.AUDIT_RETENTION_DAYS
        self.stdout.write(f"{deleted} audit row(s) older than {keep} day(s) deleted.")
        self.stdout.write(f"{http_sessions.prune()} ended or expired session(s) deleted.")
        self.stdout.write(f"{running_calls.prune()} stale call(s) in flight deleted.")
