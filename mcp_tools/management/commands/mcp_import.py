"""Import tools, grants and rate overrides from a file that mcp_export wrote: show the diff, then apply it."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_tools.tools.transfer import report
from mcp_tools.tools.transfer.document import FORMATS, MAX_BYTES, TransferError, guess_format, parse
from mcp_tools.tools.transfer.importer import Plan, run


class Command(BaseCommand):
    help = (
        "Show how a tools file differs from this site's tools, then apply it in one transaction. Every tool is "
        "checked as the admin checks it: nothing is written if any tool, query, source, grant or rate is "
        "refused. Tools only on this site are kept (reported) unless --prune."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help='The file to import ("-" for standard input).')
        parser.add_argument("--format", choices=FORMATS, help="json or yaml (default: from the file name, else json).")
        parser.add_argument("--dry-run", action="store_true", help="Show the diff and what would be refused only.")
        parser.add_argument(
            "--noinput",
            "--no-input",
            action="store_false",
            dest="interactive",
            help="Apply without asking for confirmation.",
        )
        parser.add_argument(
            "--skip-missing",
            action="store_true",
            help="Skip grants and rates naming users or groups this site lacks (default: refuse the import).",
        )
        parser.add_argument(
            "--prune",
            action="store_true",
            help="Disable the tools not in the file and remove group default rates the file does not set.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: str = options["file"]
        try:
            document = parse(self.read(path), options["format"] or guess_format(path))
        except TransferError as exc:
            raise CommandError("The file cannot be imported:\n" + str(exc)) from None
        settings = {"skip_missing": options["skip_missing"], "prune": options["prune"]}
        plan = run(document, **settings)
        self.show(plan)
        if plan.errors:
            raise CommandError("Nothing was imported: fix the errors above.")
        if options["dry_run"]:
            self.stdout.write("Dry run: nothing was written.")
            return
        if not plan.has_changes:
            self.stdout.write("Nothing to change.")
            return
        if options["interactive"] and not self.confirm():
            self.stdout.write("Import cancelled.")
            return
        applied = run(document, apply=True, **settings)
        if applied.errors:
            self.show(applied)
            raise CommandError("Nothing was imported: fix the errors above.")
        added, changed = len(applied.by_status("added")), len(applied.by_status("changed"))
        self.stdout.write(self.style.SUCCESS(f"Imported: {added} tool(s) added, {changed} changed."))

    def read(self, path: str) -> bytes:
        try:
            if path == "-":
                return sys.stdin.buffer.read(MAX_BYTES + 1)
            with open(path, "rb") as handle:
                return handle.read(MAX_BYTES + 1)  # parse() refuses more than MAX_BYTES
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}.") from None

    def show(self, plan: Plan) -> None:
        for line in report.lines(plan):
            if line.startswith("Error:"):
                line = self.style.ERROR(line)
            elif line.startswith("Warning:"):
                line = self.style.WARNING(line)
            self.stdout.write(line)

    def confirm(self) -> bool:
        answer = input("Apply these changes? Type 'yes' to continue, or 'no' to cancel: ")
        return answer == "yes"
