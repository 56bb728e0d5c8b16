"""Create a Tool row for every registered callable that has none."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from mcp_tools.conf import mcp_settings
from mcp_tools.history import recording
from mcp_tools.models import HINT_FIELDS, Tool
from mcp_tools.tools.registry import registry


class Command(BaseCommand):
    help = "Create a tool for each registered callable that no tool runs yet."

    def add_arguments(self, parser: CommandParser) -> None:
        state = parser.add_mutually_exclusive_group()
        state.add_argument("--enable", action="store_true", default=None, help="Create the new tools enabled.")
        state.add_argument("--disable", action="store_true", default=None, help="Create the new tools disabled.")
        parser.add_argument("--everyone", action="store_true", help="Grant the new tools to every authenticated user.")

    @transaction.atomic
    @recording(source="mcp_sync")
    def handle(
        self,
        *args: Any,
        enable: bool | None = None,
        disable: bool | None = None,
        everyone: bool = False,
        **options: Any,
    ) -> None:
        enabled = bool(enable) if enable or disable else bool(mcp_settings.SYNC_CREATES_ENABLED)
        taken = set(Tool.objects.values_list("callable_name", flat=True))
        names = set(Tool.objects.values_list("name", flat=True))
        created = 0
        for registered in registry.all():
            if registered.key in taken:
                continue
            if registered.key in names:
                self.stderr.write(f"Skipped {registered.key}: a tool of that name runs something else.")
                continue
            Tool.objects.create(
                name=registered.key,
                title=registered.title,
                description=registered.description,
                input_schema=registered.input_schema,
                output_schema=registered.output_schema,
                enabled=enabled,
                everyone=everyone,
                kind=Tool.Kind.CALLABLE,
                callable_name=registered.key,
                **_hints(registered.annotations),
            )
            created += 1
            self.stdout.write(f"Created {registered.key} ({'enabled' if enabled else 'disabled'})")
        self.stdout.write(f"{created} tool(s) created.")


def _hints(annotations: dict[str, bool]) -> dict[str, bool]:
    return {attr: annotations[wire] for attr, wire in HINT_FIELDS.items() if wire in annotations}
