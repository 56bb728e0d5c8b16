"""``seed_demo``: demo users, shop data, model-query, search and API tools and grants, and optionally a fresh token for
alice."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_tools.history import recording
from project.shop.demo_data import seed
from project.shop.demo_grants import Grants

DEFAULT_BASE_URL = "http://127.0.0.1:8000"


def base_url(value: str) -> str:
    """``value`` without a trailing slash, once it is an http(s) address with a host."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise CommandError(f"--base-url must be an address such as {DEFAULT_BASE_URL}, not {value!r}.")
    return value.rstrip("/")


class Command(BaseCommand):
    help = (
        "Create the demo users (admin, alice, bob), shop data and model tools if missing, and grant the demo tools "
        "to the groups sales and support. Run mcp_sync first so that the registered callables are granted too. "
        "Safe to run repeatedly."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--token", action="store_true", help="Issue a new MCP access token for alice.")
        parser.add_argument(
            "--base-url",
            default=DEFAULT_BASE_URL,
            help=f"Where the site is served, for the addresses printed with --token (default {DEFAULT_BASE_URL}).",
        )

    @recording(source="seed_demo")
    def handle(self, *args: Any, **options: Any) -> None:
        base = base_url(options["base_url"])
        result = seed()
        if result.users_created:
            self.stdout.write(f"Created users: {', '.join(result.users_created)}")
        state = "Created" if result.shop_created else "Kept existing"
        self.stdout.write(
            f"{state} shop data: {result.customers} customers, {result.products} products, {result.orders} orders."
        )
        if result.tools_created:
            self.stdout.write(f"Created tools: {', '.join(result.tools_created)}")
        self.write_grants(result.grants)
        if options["token"]:
            self.write_token(base)

    def write_grants(self, grants: Grants) -> None:
        for group, names in grants.by_group.items():
            self.stdout.write(f"Granted to group {group}: {', '.join(names)}")
        if grants.everyone:
            self.stdout.write(f"Granted to every signed-in user: {', '.join(grants.everyone)}")
        if grants.missing:
            self.stdout.write(
                f"Not granted, no such tool yet: {', '.join(grants.missing)}. "
                "Run `python manage.py mcp_sync --enable`, then seed_demo again."
            )

    def write_token(self, base: str) -> None:
        from mcp_tools.models import AccessToken

        alice = get_user_model().objects.get(username="alice")
        _, raw = AccessToken.objects.issue(alice, name="demo")
        websocket = "ws" + base.removeprefix("http")  # http:// -> ws://, https:// -> wss://
        self.stdout.write(
            "\n"
            f"  Landing page:    {base}/  (endpoints and a live console)\n"
            f"  Admin:           {base}/admin/  (admin / admin; alice / alice; bob / bob)\n"
            f"  MCP endpoint:    {base}/mcp  (WebSocket: {websocket}/mcp/ws)\n"
            f"  Token for alice: {raw}\n"
            "  The token is shown only once; `python manage.py mcp_token create alice` issues another.\n"
        )
