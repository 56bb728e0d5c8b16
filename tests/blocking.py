"""Runs async tool callables under blockbuster, which makes a blocking call inside the event loop raise.

``python -m tests.blocking`` (settings ``tests.demo_settings``) builds a demo database, runs every async
callable the demo registers with the arguments below, and prints JSON: ``{"checked": [...], "problems":
{tool: why}}``. A tool with no arguments here is a problem too, so a new async demo tool cannot go unchecked.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from collections.abc import Iterable
from typing import Any

from blockbuster import BlockingError, blockbuster_ctx

DEMO_MODULE_PREFIX = "project."
DEMO_USER = "alice"
# Realistic arguments for each async callable of the demo, by registry key.
ARGUMENTS: dict[str, dict[str, Any]] = {
    "add": {"a": 2, "b": 40},
}


def blocking(tools: Iterable[Any], arguments: dict[str, dict[str, Any]], user: Any) -> dict[str, str]:
    """Each of ``tools`` (registered callables) that blocked the event loop or could not be run, and why."""
    with blockbuster_ctx():
        return asyncio.run(_run_all(list(tools), arguments, user))


async def _run_all(tools: list[Any], arguments: dict[str, dict[str, Any]], user: Any) -> dict[str, str]:
    from django.core.exceptions import SynchronousOnlyOperation

    from mcp_tools import Context

    problems: dict[str, str] = {}
    for registered in tools:
        if registered.key not in arguments:
            problems[registered.key] = "no realistic arguments in tests/blocking.py ARGUMENTS"
            continue
        kwargs = dict(arguments[registered.key])
        if registered.takes_context:
            kwargs["ctx"] = Context(user=user, tool_name=registered.key)
        try:
            await registered.func(**kwargs)
        except (BlockingError, SynchronousOnlyOperation) as exc:
            problems[registered.key] = f"blocks the event loop: {exc}"
    return problems


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.demo_settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from mcp_tools.tools.registry import registry

    call_command("migrate", interactive=False, verbosity=0, stdout=io.StringIO())
    call_command("seed_demo", stdout=io.StringIO())
    user = get_user_model()._default_manager.get_by_natural_key(DEMO_USER)
    tools = [r for r in registry.all() if r.is_async and r.func.__module__.startswith(DEMO_MODULE_PREFIX)]
    report = {"checked": [r.key for r in tools], "problems": blocking(tools, ARGUMENTS, user)}
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
