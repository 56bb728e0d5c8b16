"""Delete audit rows older than the retention period."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_tools.access.audit import prune
from mcp_tools.conf import mcp_settings


class Command(BaseCommand):
    help = "Delete tool-call audit rows older than MCP_TOOLS['AUDIT_RETENTION_DAYS'] (or --days)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=None, help="Keep this many days instead of the setting.")

    def handle(self, *args: Any, days: int | None = None, **options: Any) -> None:
        if days is not None and days < 0:
            raise CommandError("--days must be zero or more.")
        deleted = prune(days)
        keep = days if days is not None else mcp_settings.AUDIT_RETENTION_DAYS
        self.stdout.write(f"{deleted} audit row(s) older than {keep} day(s) deleted.")
