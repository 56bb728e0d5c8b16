"""Where the server's time goes, in process: no network, no client, one thread of the event loop.

Run from the project root with the server's environment (DJANGO_DEBUG=0, DATABASE_URL, ...)::

    DJANGO_DEBUG=0 .venv/bin/python bench/breakdown.py
    DJANGO_DEBUG=0 .venv/bin/python bench/breakdown.py --tool top_customers --args '{"limit": 20}'

It drives ``mcp_tools.server.dispatch.server`` with a session of the demo user ``alice`` and prints the cost of
each piece in microseconds per operation (median of --rounds rounds):

- a whole ``tools/call`` of ``add`` and of the ORM tool: parse, dispatch, validation, the tool,
  the result, the encoded response;
- their parts: the tool's function called directly, input and output schema validation;
- the work the bare consumer in ``baseline.py`` does per ``add`` (parse, answer, encode);
- a full ``tools/list`` (every page) and the permission filter it runs per page;
- the list_changed fan-out to N sessions through the process hub, with writers that do nothing.

Figures on a busy machine vary; compare pieces within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

Figures = dict[str, float]


def setup_django() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()


def per_op_us(func: Callable[[], Any], count: int, rounds: int) -> float:
    func()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(count):
            func()
        samples.append((time.perf_counter() - started) / count * 1e6)
    return statistics.median(samples)


async def per_op_us_async(func: Callable[[], Awaitable[Any]], count: int, rounds: int) -> float:
    await func()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(count):
            await func()
        samples.append((time.perf_counter() - started) / count * 1e6)
    return statistics.median(samples)


class Client:
    """A session whose responses land in memory; ``request`` returns the encoded response."""

    def __init__(self, user: Any) -> None:
        from mcp_tools.server.session import Session

        self.waiting: asyncio.Future[Any] | None = None
        self.session = Session(transport="websocket", user=user, emit=self._emit, can_notify=True)
        self.next_id = 0

    def _emit(self, message: Any) -> None:
        if self.waiting is not None and not self.waiting.done():
            self.waiting.set_result(message)

    async def request(self, method: str, params: dict[str, Any]) -> str:
        from mcp_tools.protocol.jsonrpc import encode
        from mcp_tools.server.dispatch import server

        self.next_id += 1
        self.waiting = asyncio.get_running_loop().create_future()
        frame = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        await server.receive(self.session, frame)
        return encode(await self.waiting)


async def call_figures(client: Client, tool: str, arguments: dict[str, Any], count: int, rounds: int) -> Figures:
    from mcp_tools.tools.catalog import catalog
    from mcp_tools.tools.kinds.callables import CallableRun
    from mcp_tools.tools.kinds.results import to_result
    from mcp_tools.tools.registry import registry

    async def call() -> None:
        text = await client.request("tools/call", {"name": tool, "arguments": arguments})
        if '"isError":false' not in text:
            raise SystemExit(f"error: tools/call {tool} failed: {text[:300]}")

    entry = (await catalog.get()).by_name[tool]
    runs = entry.plan.runs if entry.plan is not None else None
    registered = registry.get(runs.key) if isinstance(runs, CallableRun) else None
    figures = {"tools/call, whole (no network)": await per_op_us_async(call, count, rounds)}
    if registered is None:  # not a registered callable (a model query): the whole call and its schemas only
        figures["input validation (jsonschema)"] = per_op_us(
            lambda: entry.input_check.first_error(arguments), count, rounds
        )
        output_check = entry.output_check
        if output_check is not None:
            text = await client.request("tools/call", {"name": tool, "arguments": arguments})
            structured = json.loads(text)["result"].get("structuredContent")
            figures["output validation (jsonschema)"] = per_op_us(
                lambda: output_check.first_error(structured), count, rounds
            )
        return figures
    given = dict(arguments)
    if registered.takes_context:
        from mcp_tools.tools.context import Context

        # The tool's ctx, as a call hands it over (its user is the session's).
        given["ctx"] = Context(user=client.session.user, tool_name=tool)
    if registered.is_async:

        async def direct() -> Any:
            return await registered.func(**given)

        figures["the tool's function, awaited directly"] = await per_op_us_async(direct, count, rounds)
        value = await direct()
    else:
        # In one worker thread, timed there: the function alone, without the hop to the thread.
        figures["the tool's function, called directly (in a thread)"] = await asyncio.to_thread(
            per_op_us, lambda: registered.func(**given), count, rounds
        )
        value = await asyncio.to_thread(lambda: registered.func(**given))
    has_output_schema = entry.spec.output_schema is not None
    result = to_result(value, wraps_result=registered.wraps_result, has_output_schema=has_output_schema)
    figures["input validation (jsonschema)"] = per_op_us(
        lambda: entry.input_check.first_error(arguments), count, rounds
    )
    output_check = entry.output_check
    if output_check is not None:
        structured = result.structured
        figures["output validation (jsonschema)"] = per_op_us(
            lambda: output_check.first_error(structured), count, rounds
        )
    figures["return value to result (to_result)"] = per_op_us(
        lambda: to_result(value, wraps_result=registered.wraps_result, has_output_schema=has_output_schema),
        count,
        rounds,
    )
    return figures


def visible(client: Client, snapshot: Any) -> Any:
    """What tools/list runs to filter the catalog for the caller (per page)."""
    return snapshot.view(client.session.user).entries


def next_cursor(text: str) -> str | None:
    """The nextCursor of an encoded tools/list response, found without decoding the page."""
    marker = '"nextCursor":"'
    start = text.rfind(marker)
    if start < 0:
        return None
    start += len(marker)
    return text[start : text.index('"', start)]


async def list_figures(client: Client, count: int, rounds: int) -> Figures:
    from mcp_tools.tools.catalog import catalog

    pages = 0
    size = 0
    first_page = ""

    async def full_listing() -> None:
        nonlocal pages, size, first_page
        params: dict[str, Any] = {}
        pages = size = 0
        while True:
            text = await client.request("tools/list", params)
            pages += 1
            size += len(text)
            first_page = first_page or text
            cursor = next_cursor(text)
            if cursor is None:
                return
            params = {"cursor": cursor}

    snapshot = await catalog.get()
    whole = await per_op_us_async(full_listing, count, rounds)
    return {
        f"tools/list, all {pages} pages of {len(snapshot.entries)} tools ({size // 1024} KB), server side": whole,
        "  of which the permission filter, per page": per_op_us(lambda: visible(client, snapshot), count, rounds),
        f"client json.loads of the first page ({len(first_page) // 1024} KB)": per_op_us(
            lambda: json.loads(first_page), count, rounds
        ),
    }


async def fanout_figures(user: Any, sessions: int, rounds: int) -> Figures:
    from mcp_tools.notify.events import EVENT_TYPE
    from mcp_tools.notify.hub import Hub
    from mcp_tools.protocol import versions
    from mcp_tools.server.session import Session
    from mcp_tools.transports.outbox import Outbox

    written = 0
    all_written = asyncio.Event()

    async def write(text: str) -> None:
        nonlocal written
        written += 1
        if written == sessions:
            all_written.set()

    hub = Hub()
    listeners = []
    for _ in range(sessions):
        outbox = Outbox(write)
        session = Session(transport="websocket", user=user, emit=outbox.put, can_notify=True)
        session.revision = versions.LATEST_LEGACY
        hub.listeners.add(session)
        listeners.append(session)

    async def change(number: int) -> None:
        if hasattr(hub, "deliver"):
            for session in listeners:
                session.fingerprint = frozenset()  # an outdated list, so that every session is told
            await hub.deliver({"type": EVENT_TYPE, "stamp": f"breakdown-{number}"})
        else:
            hub.dispatch(f"breakdown-{number}")

    samples = []
    for number in range(rounds + 1):
        written = 0
        all_written.clear()
        started = time.perf_counter()
        await change(number)
        await all_written.wait()
        samples.append((time.perf_counter() - started) * 1e6)
    figures = {f"list_changed to {sessions} sessions: event to every outbox write": statistics.median(samples[1:])}
    if hasattr(hub, "deliver"):
        from mcp_tools.tools.catalog import catalog

        async def reload() -> None:
            catalog.invalidate()
            await catalog.get()

        figures["  of which reloading the catalog (worker thread)"] = await per_op_us_async(reload, 5, rounds)
    return figures


def baseline_figures(count: int, rounds: int) -> Figures:
    from baseline import answer

    frame = json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    )

    def bare() -> str:
        response = answer(json.loads(frame))
        return json.dumps(response, separators=(",", ":"))

    return {"bare consumer's own work per add (parse, answer, encode)": per_op_us(bare, count, rounds)}


async def main_async(args: argparse.Namespace) -> None:
    from asgiref.sync import sync_to_async
    from django.contrib.auth import get_user_model

    user = await sync_to_async(get_user_model().objects.get)(username=args.user)
    client = Client(user)
    await client.request(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "breakdown", "version": "0"}},
    )
    sections: list[tuple[str, Figures]] = [
        ("add", await call_figures(client, "add", {"a": 1, "b": 2}, args.count, args.rounds)),
        ("baseline.py", baseline_figures(args.count, args.rounds)),
        (
            f"{args.tool} {json.dumps(args.arguments)}",
            await call_figures(client, args.tool, args.arguments, max(1, args.count // 50), args.rounds),
        ),
        ("tools/list", await list_figures(client, max(1, args.count // 200), args.rounds)),
        ("fan-out", await fanout_figures(user, args.sessions, args.rounds)),
    ]
    for title, figures in sections:
        print(title)
        for name, value in figures.items():
            print(f"  {value:10.1f} us  {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", default="find_customers", help="the ORM tool (default find_customers)")
    parser.add_argument("--args", default='{"query": "a", "limit": 20}', help="its arguments as JSON")
    parser.add_argument("--user", default="alice", help="the session's user (default alice)")
    parser.add_argument("--count", type=int, default=10000, help="operations per round for add (default 10000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the median is printed (default 5)")
    parser.add_argument("--sessions", type=int, default=1000, help="sessions for the fan-out (default 1000)")
    args = parser.parse_args()
    args.arguments = json.loads(args.args)
    setup_django()
    try:
        import uvloop

        uvloop.run(main_async(args))
    except ImportError:
        asyncio.run(main_async(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
