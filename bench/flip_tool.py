"""A fan-out trigger: flip one tool's ``enabled`` flag and report where the trigger's own time went.

Run from the project root with the server's REDIS_URL, as ``fanout.py --ready-line GO --trigger``::

    .venv/bin/python bench/flip_tool.py            # cold: the first group_send of a fresh process
    .venv/bin/python bench/flip_tool.py --warm     # the channel layer used once before the change

It prints ``GO <CLOCK_MONOTONIC ns>`` just before ``save()``, then how long the save took to commit and
how long the commit hook that publishes list_changed took. ``--warm`` sends one throwaway group message
first, so imports and the channel layer's set-up stay out of the measured change, as in a long-running
process that has published before.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", default="add", help="the tool to flip (default add)")
    parser.add_argument("--warm", action="store_true", help="use the channel layer once before the change")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()
    from asgiref.sync import async_to_sync

    from mcp_tools.models import Tool
    from mcp_tools.notify import events as notifications

    tool = Tool.objects.get(name=args.tool)
    if args.warm:
        layer = notifications.channel_layer()
        if layer is not None:
            async_to_sync(layer.group_send)("bench.warmup", {"type": "bench.warmup"})
    marks: dict[str, int] = {}
    publish = notifications.publish_tools_changed

    def timed_publish() -> None:
        marks["commit"] = time.monotonic_ns()
        publish()
        marks["published"] = time.monotonic_ns()

    notifications.publish_tools_changed = timed_publish  # looked up at save time by schedule_tools_changed
    tool.enabled = not tool.enabled
    started = time.monotonic_ns()
    print("GO", started, flush=True)
    tool.save()
    if "commit" in marks:
        print(
            f"{args.tool} enabled={tool.enabled}: save to commit {(marks['commit'] - started) / 1e6:.1f} ms, "
            f"publish (catalog + group_send) {(marks['published'] - marks['commit']) / 1e6:.1f} ms",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
