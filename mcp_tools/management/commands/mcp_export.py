"""Write the site's tools, grants and rate overrides to a versioned file (JSON or YAML)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_tools.tools.transfer.document import FORMATS, TransferError, dumps
from mcp_tools.tools.transfer.export import export, tools_queryset


class Command(BaseCommand):
    help = (
        "Export tools by name with their model queries, search sources, user and group grants and rate "
        "overrides, and the groups' default rates, to a file that mcp_import reads. Ids, timestamps, tokens "
        "and the audit trail are left out."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", help="Export only these tools (default: every tool).")
        parser.add_argument("--output", "-o", help="Write to this file (default: standard output).")
        parser.add_argument("--format", choices=FORMATS, default="json", help="json (default) or yaml.")

    def handle(self, *args: Any, **options: Any) -> None:
        names: list[str] = options["names"]
        output: str | None = options["output"]
        tools = list(tools_queryset(names or None))
        missing = sorted(set(names) - {tool.name for tool in tools})
        if missing:
            raise CommandError(f"No tool named {', '.join(missing)}.")
        try:
            text = dumps(export(tools), options["format"])
        except TransferError as exc:
            raise CommandError(str(exc)) from None
        if output is None:
            self.stdout.write(text, ending="")
            return
        Path(output).write_text(text, encoding="utf-8")
        self.stderr.write(f"{len(tools)} tool(s) written to {output}.")
