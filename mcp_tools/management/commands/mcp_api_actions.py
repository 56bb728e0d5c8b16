"""List the ViewSet actions of the site's DRF routers that API-action tools can run."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from mcp_tools.models import Tool
from mcp_tools.tools.executors.api.actions import available


class Command(BaseCommand):
    help = "List the routed DRF ViewSet actions an API-action tool can run, and the tools that run them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--unused", action="store_true", help="Only the actions no tool runs yet.")

    def handle(self, *args: Any, unused: bool = False, **options: Any) -> None:
        tools: dict[str, list[str]] = {}
        for name, key in Tool.objects.filter(kind=Tool.Kind.API_ACTION).values_list("name", "api_action"):
            tools.setdefault(key, []).append(name)
        routed = available()
        if not routed:
            self.stdout.write("No DRF router routes a ViewSet action in this site's URLconf.")
            return
        for key, action in routed.items():
            if unused and key in tools:
                continue
            used = f"  tools: {', '.join(tools[key])}" if key in tools else ""
            self.stdout.write(
                f"{key}  {action.method} /{action.route}  {action.viewset.__name__}.{action.action}{used}"
            )
        for key in sorted(set(tools) - set(routed)):
            self.stdout.write(self.style.WARNING(f"{key}  not routed  tools: {', '.join(tools[key])}"))
