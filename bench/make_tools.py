"""Create (or remove) N extra enabled tools for tools/list benchmarks, in one transaction.

Run from the project root with the same environment as the server (DATABASE_URL, REDIS_URL)::

    .venv/bin/python bench/make_tools.py 1000        # bench_tool_0001 .. bench_tool_1000
    .venv/bin/python bench/make_tools.py --delete    # every bench_tool_* row

Each tool runs the registered ``add`` callable with its input schema, so any of them can also be
called. The rows are inserted with ``bulk_create`` (no per-row signals); one list_changed event is
announced when the transaction commits, so running servers that share the channel layer reload
their catalog. A server on the in-memory layer reloads when its first session connects after all
earlier ones closed, or on restart.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

PREFIX = "bench_tool_"
TOPICS = (
    "invoice totals",
    "shipping quotes",
    "stock levels",
    "refund amounts",
    "loyalty points",
    "tax estimates",
    "discount codes",
    "delivery windows",
)


def setup_django() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()


def description(number: int) -> str:
    topic = TOPICS[number % len(TOPICS)]
    return (
        f"Combine two integer amounts used when reconciling {topic} (benchmark tool {number}). "
        "Returns their sum; both arguments are required and no other fields are accepted."
    )


def create(count: int) -> int:
    from django.db import transaction

    from mcp_tools.models import Tool
    from mcp_tools.notify.events import schedule_tools_changed
    from mcp_tools.tools.registry import registry

    registered = registry.get("add")
    if registered is None:
        raise SystemExit("error: no callable is registered as 'add' (is the demo app installed?)")
    width = max(4, len(str(count)))
    # Where tools are visible only to the users they are granted to, grant these to everyone.
    extra = {"everyone": True} if any(f.name == "everyone" for f in Tool._meta.get_fields()) else {}
    rows = [
        Tool(
            name=f"{PREFIX}{number:0{width}d}",
            title=f"Benchmark tool {number}",
            description=description(number),
            input_schema=registered.input_schema,
            read_only_hint=True,
            enabled=True,
            kind=Tool.Kind.CALLABLE,
            callable_name="add",
            **extra,
        )
        for number in range(1, count + 1)
    ]
    with transaction.atomic():
        Tool.objects.filter(name__startswith=PREFIX).delete()
        Tool.objects.bulk_create(rows, batch_size=500)
        schedule_tools_changed()
    return len(rows)


def delete() -> int:
    from django.db import transaction

    from mcp_tools.models import Tool
    from mcp_tools.notify.events import schedule_tools_changed

    with transaction.atomic():
        deleted, _ = Tool.objects.filter(name__startswith=PREFIX).delete()
        if deleted:
            schedule_tools_changed()
    return deleted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int, nargs="?", default=1000, help="tools to create (default 1000)")
    parser.add_argument("--delete", action="store_true", help=f"remove every {PREFIX}* tool instead")
    args = parser.parse_args(argv)
    setup_django()
    from mcp_tools.models import Tool

    if args.delete:
        print(f"deleted {delete()} {PREFIX}* tools")
    else:
        if args.count < 1:
            parser.error("count must be at least 1")
        print(f"created {create(args.count)} {PREFIX}* tools")
    print(f"{Tool.objects.filter(enabled=True).count()} enabled tools")
    return 0


if __name__ == "__main__":
    sys.exit(main())
