"""Delete expired OAuth tokens and the self-registered clients (DCR, CIMD) nobody uses any more."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from oauth2_provider.models import clear_expired

from mcp_tools.oauth import redemptions
from mcp_tools.oauth.clients import identify
from mcp_tools.oauth.registrations import delete_stale, retention_days, stale


class Command(BaseCommand):
    help = (
        "Delete expired OAuth tokens and grants (django-oauth-toolkit's clear_expired) and the records of redeemed "
        "codes no longer kept, then the applications "
        "registered by DCR or CIMD more than MCP_TOOLS['OAUTH_CLIENT_RETENTION_DAYS'] (or --days) ago that hold "
        "no live token and no pending grant."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=None, help="Count clients older than this many days.")
        parser.add_argument("--dry-run", action="store_true", help="Only print what would be deleted.")

    def handle(self, *args: Any, days: int | None = None, dry_run: bool = False, **options: Any) -> None:
        if days is not None and days < 0:
            raise CommandError("--days must be zero or more.")
        days = retention_days() if days is None else days
        if dry_run:
            # Tokens that expired are still there, so a client kept alive only by them is not listed.
            found = list(stale(days).order_by("pk"))
        else:
            clear_expired()
            redemptions.prune()
            self.stdout.write("Expired tokens and grants deleted.")
            found = delete_stale(stale(days), days)
        verb = "Would delete" if dry_run else "Deleted"
        for application in found:
            client = identify(application)
            created = application.created.date().isoformat()
            self.stdout.write(f"{verb} {client.source} client {client.client_id} ({client.display_name}), {created}")
        self.stdout.write(f"{verb} {len(found)} unused client(s) registered more than {days} day(s) ago.")
