"""Registered callables the tests call, and the test app's own tool kind (imported here to register it)."""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Literal

from mcp_tools import Context, ToolError, query_scope, tool
from mcp_tools.tools.content import ToolResult, image, text
from tests.testapp import kinds  # noqa: F401  (registers the canned-reply kind)
from tests.testapp.models import Category


@tool(title="Add two integers", annotations={"readOnlyHint": True})
async def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool
def multiply(x: float, y: float = 2.0) -> float:
    """Multiply two numbers in a worker thread."""
    return x * y


@tool
def greet(name: str, punctuation: Literal["!", "."] = "!", shout: bool | None = None) -> str:
    """Greet someone by name."""
    greeting = f"Hello, {name}{punctuation}"
    return greeting.upper() if shout else greeting


@tool
def whoami(ctx: Context) -> dict[str, str]:
    """The calling user's name."""
    return {"username": ctx.user.get_username()}


@tool
def fail_politely(reason: str = "nope") -> str:
    """Always raise a ToolError."""
    raise ToolError(f"Refused: {reason}")


@tool
def crash() -> str:
    """Always raise an unexpected exception whose text must not reach the client."""
    raise RuntimeError("secret database password is hunter2")


@tool
def tags(items: list[str]) -> list[str]:
    """Sort and deduplicate tags."""
    return sorted(set(items))


@tool
async def slow_count(ctx: Context, steps: int = 3) -> dict[str, int]:
    """Count up, reporting progress; waits for release between steps so tests control it."""
    for step in range(1, steps + 1):
        ctx.report_progress(step, steps, f"step {step}")
        await gate.wait()
    return {"counted": steps}


@tool
def sync_progress(ctx: Context, steps: int = 3) -> str:
    """Report progress from a worker thread."""
    for step in range(1, steps + 1):
        ctx.report_progress(step, steps)
    return "done"


@tool
def picture() -> ToolResult:
    """Two content blocks: text and a one-pixel image."""
    return ToolResult(content=[text("a picture"), image(b"\x89PNG\r\n\x1a\n", "image/png")])


@tool(output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
def broken_output() -> dict[str, str]:
    """Returns output that breaks its declared output schema."""
    return {"n": "not a number"}


@tool(requires={"sampling": {}})
def needs_sampling() -> str:
    """Needs the client's sampling capability, which 2026-07-28 requests must declare."""
    return "sampling declared"


@query_scope("testapp.tenant_accounts", model="testapp.Account")
def tenant_accounts(user: Any, queryset: Any) -> Any:
    """Accounts of the tenants named by the caller's groups: wherever accounts are read, not only by tools that
    choose this scope."""
    return queryset.filter(tenant__in=user.groups.values_list("name", flat=True))


@query_scope("testapp.tenant_items")
def tenant_items(user: Any, queryset: Any) -> Any:
    """Items of accounts in the tenants named by the caller's groups."""
    return queryset.filter(account__tenant__in=user.groups.values_list("name", flat=True))


class Gate:
    """An event the tests open to let ``slow_count`` proceed; a fresh asyncio.Event per loop."""

    def __init__(self) -> None:
        self.event: asyncio.Event | None = None

    def reset(self) -> None:
        self.event = asyncio.Event()

    def open(self) -> None:
        if self.event is not None:
            self.event.set()

    async def wait(self) -> None:
        if self.event is None:
            self.reset()
        assert self.event is not None
        await self.event.wait()


gate = Gate()


@tool
def long_text(size: int) -> str:
    """Return ``size`` characters of text, for the result-size limit."""
    return "x" * size


# Set by wait_sync's worker thread when it starts waiting, and once it sees its call cancelled.
sync_started = threading.Event()
sync_cancel_seen = threading.Event()


@tool
def wait_sync(ctx: Context, seconds: float = 10.0) -> str:
    """Hold a worker thread until the call is cancelled or ``seconds`` pass."""
    sync_started.set()
    # Waiting on the context ends the thread as soon as the call is cancelled.
    if ctx.wait_cancelled(seconds):
        sync_cancel_seen.set()
        return "cancelled"
    return "waited"


@tool
def hold(flag: str, seconds: float = 10.0) -> str:
    """Hold a worker thread while the file ``flag`` exists in the temporary directory, at most ``seconds``."""
    return _hold(flag, seconds)


@tool
def hang(flag: str, seconds: float = 10.0) -> str:
    """``hold`` under another name, for a tool whose limits the tests set apart."""
    return _hold(flag, seconds)


def _hold(flag: str, seconds: float) -> str:
    # Deaf to cancellation on purpose: a tool that hangs past its time limit until the test deletes the file.
    path = Path(tempfile.gettempdir()) / Path(flag).name
    deadline = time.monotonic() + min(seconds, 30.0)
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return "released" if not path.exists() else "gave up"


@tool
async def open_gate() -> str:
    """Let the ``slow_count`` calls of this process that wait now take their next step; later ones wait again."""
    gate.open()
    gate.reset()
    return "opened"


@tool(confirm="user", annotations={"readOnlyHint": False, "destructiveHint": False})
def add_category(name: str) -> dict[str, Any]:
    """Add a note category: a write the user confirms before it runs (tests/test_confirmations_live.py)."""
    category = Category.objects.create(name=name, code_hash="-")
    return {"id": category.pk, "name": category.name}


NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COLOUR = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


@tool
async def ask_twice(ctx: Context, topic: str = "") -> dict[str, Any]:
    """Asks the person's name, then (a second round) their colour and the client's roots (tests/test_asks.py)."""
    name = await ctx.elicit(f"Your name? {topic}", NAME_FORM)
    rest = await ctx.ask(
        {
            "colour": {"method": "elicitation/create", "params": {"message": "Colour?", "requestedSchema": COLOUR}},
            "roots": {"method": "roots/list", "params": {}},
        }
    )
    return {
        "name": name.content.get("name") if name.accepted else name.action,
        "colour": rest["colour"].get("content", {}).get("colour"),
        "roots": [root.get("uri") for root in rest["roots"]["roots"]],
    }


@tool
async def ask_many(ctx: Context, count: int = 9, method: str = "roots/list") -> str:
    """Asks ``count`` questions of one ``method`` at once."""
    await ctx.ask({f"q{n}": {"method": method, "params": {}} for n in range(count)})
    return "asked"


@tool
def ask_from_a_thread(ctx: Context) -> str:
    """A sync tool that tries to ask: it may not, whatever the client."""
    asyncio.run(ctx.elicit("From a thread?", NAME_FORM))
    return "asked"


@tool(confirm="user", annotations={"readOnlyHint": False})
async def add_named_category(ctx: Context, code: str) -> dict[str, Any]:
    """A write the user confirms, which asks a name once confirmed, before it writes (tests/test_asks.py)."""
    name = await ctx.elicit("Name the category", NAME_FORM)
    category = await Category.objects.acreate(name=str(name.content.get("name")), code_hash=code)
    return {"id": category.pk, "name": category.name}
