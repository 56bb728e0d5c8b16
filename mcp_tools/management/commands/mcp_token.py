"""Issue, list and revoke MCP access tokens."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_tools.models import AccessToken, Lifetime
from mcp_tools.models.tokens import default_lifetime_days
from mcp_tools.validators import validate_rate


class Command(BaseCommand):
    help = "Manage MCP access tokens. 'create USER' prints only the new token (and its expiry on stderr)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="Issue a token for USER and print it.")
        create.add_argument("username")
        create.add_argument("--name", default="", help="A label shown in the admin.")
        lifetime = create.add_mutually_exclusive_group()
        lifetime.add_argument(
            "--days", type=int, default=None, help="Expire after this many days (default: TOKEN_LIFETIME_DAYS)."
        )
        lifetime.add_argument("--never", action="store_true", help="Never expire.")
        create.add_argument("--rate", default="", help='Calls across every tool, e.g. "60/m" (default: no own rate).')
        listing = sub.add_parser("list", help="List a user's tokens (never the secrets).")
        listing.add_argument("username")
        revoke = sub.add_parser("revoke", help="Delete tokens starting with PREFIX.")
        revoke.add_argument("prefix")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        getattr(self, f"handle_{action}")(**options)

    def _user(self, username: str) -> Any:
        model = get_user_model()
        try:
            return model._default_manager.get_by_natural_key(username)
        except model.DoesNotExist:
            raise CommandError(f"No user {username!r}.") from None

    def handle_create(
        self, *, username: str, name: str, days: int | None, never: bool, rate: str, **options: Any
    ) -> None:
        if days is not None and days < 1:
            raise CommandError("--days must be at least 1 (--never for a token that never expires).")
        try:
            validate_rate(rate)
        except ValidationError:
            raise CommandError('--rate must be a rate like "30/m", "1000/h" or "10/5s".') from None
        lifetime: int | Lifetime | None = None if never else Lifetime.DEFAULT if days is None else days
        token, raw = AccessToken.objects.issue(self._user(username), name=name, days=lifetime, rate=rate)
        # stdout carries the token alone, so that scripts can capture it; people read the expiry on stderr.
        self.stdout.write(raw)
        self.stderr.write(self._expiry(token, default_lifetime_days() if days is None else days))

    def _expiry(self, token: AccessToken, days: int | None) -> str:
        if token.expires_at is None:
            return "The token never expires."
        after = "1 day" if days == 1 else f"{days} days"
        return f"The token expires at {token.expires_at.isoformat(timespec='seconds')} (in {after})."

    def handle_list(self, *, username: str, **options: Any) -> None:
        for token in AccessToken.objects.filter(user=self._user(username)):
            expires = token.expires_at.isoformat() if token.expires_at else "never"
            used = token.last_used_at.isoformat() if token.last_used_at else "never"
            self.stdout.write(f"{token.hint}…  name={token.name or '-'}  expires={expires}  last_used={used}")

    def handle_revoke(self, *, prefix: str, **options: Any) -> None:
        if len(prefix) < 8:
            raise CommandError("Give at least the first 8 characters of the token.")
        deleted, _ = AccessToken.objects.filter(hint__startswith=prefix[:12]).delete()
        self.stdout.write(f"{deleted} token(s) revoked.")
