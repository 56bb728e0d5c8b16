"""Closed-loop MCP load: N sessions, each sending M sequential tools/call (or tools/list) requests."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from cli import add_session_arguments, loop_name, run, session_options
from latency import summary_ms
from rpc import BenchError, JsonObject, RpcError, SessionOptions, Transport, TransportError
from transports import close_sessions, open_sessions, transport_name


class ToolFailed(BenchError):
    """A tools/call result with `isError: true`."""


@dataclass(frozen=True)
class Plan:
    method: str
    tool: str
    arguments: JsonObject
    warmup: int
    calls: int
    timeout: float


@dataclass
class SessionRun:
    latencies: list[int] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    started: int = 0
    finished: int = 0


async def operation(transport: Transport, plan: Plan) -> None:
    """One measured op: a tools/call, or a full tools/list following `nextCursor` to the end."""
    if plan.method == "call":
        result = await transport.request("tools/call", {"name": plan.tool, "arguments": plan.arguments})
        if result.get("isError") is True:
            raise ToolFailed(f"isError result: {json.dumps(result.get('content'))[:200]}")
        return
    params: JsonObject = {}
    while True:
        result = await transport.request("tools/list", params)
        cursor = result.get("nextCursor")
        if not cursor:
            return
        params = {"cursor": cursor}


async def bounded_operation(transport: Transport, plan: Plan) -> None:
    async with asyncio.timeout(plan.timeout):
        await operation(transport, plan)


Mark = Callable[[], None]


async def drive(transport: Transport, plan: Plan, barrier: asyncio.Barrier, on_start: Mark | None) -> SessionRun:
    """Warm up, wait for every other session, then run the measured round trips back to back."""
    try:
        for _ in range(plan.warmup):
            await bounded_operation(transport, plan)
    except BaseException:
        await barrier.abort()
        raise
    if await barrier.wait() == 0 and on_start is not None:
        on_start()
    session = SessionRun(started=time.perf_counter_ns())
    for done in range(plan.calls):
        begin = time.perf_counter_ns()
        try:
            await bounded_operation(transport, plan)
        except (RpcError, ToolFailed) as exc:
            session.errors[str(exc)] += 1
        except (TransportError, TimeoutError) as exc:
            session.errors[f"session stopped after {done} ops: {exc!r}"] += 1
            break
        session.latencies.append(time.perf_counter_ns() - begin)
    session.finished = time.perf_counter_ns()
    return session


async def measure(
    options: SessionOptions, plan: Plan, sessions: int, on_start: Mark | None = None, on_end: Mark | None = None
) -> JsonObject:
    """Run `plan` on `sessions` sessions; `on_start` and `on_end` are called as the measured phase starts and ends
    (for readings of the server taken around that phase alone, such as its CPU time)."""
    transports = await open_sessions(options, sessions, concurrency=min(sessions, 64), listen=False)
    try:
        barrier = asyncio.Barrier(sessions)
        outcomes = await asyncio.gather(
            *(drive(transport, plan, barrier, on_start) for transport in transports), return_exceptions=True
        )
        if on_end is not None:
            on_end()
    finally:
        await close_sessions(transports)
    runs = [outcome for outcome in outcomes if isinstance(outcome, SessionRun)]
    if len(runs) < sessions:
        failure = next(o for o in outcomes if isinstance(o, BaseException) and not is_broken_barrier(o))
        raise BenchError(f"warm-up failed: {failure!r}")
    return report(options, plan, runs, transports[0].protocol_version)


def is_broken_barrier(outcome: BaseException) -> bool:
    return isinstance(outcome, asyncio.BrokenBarrierError)


def report(options: SessionOptions, plan: Plan, runs: list[SessionRun], version: str) -> JsonObject:
    latencies = [latency for session in runs for latency in session.latencies]
    errors: Counter[str] = sum((session.errors for session in runs), Counter())
    wall_ns = max(session.finished for session in runs) - min(session.started for session in runs)
    return {
        "transport": transport_name(options),
        "url": options.url,
        "protocol_version": version,
        "method": f"tools/{plan.method}",
        "tool": plan.tool if plan.method == "call" else None,
        "sessions": len(runs),
        "ops": len(latencies),
        "errors": sum(errors.values()),
        "error_messages": dict(errors.most_common(5)),
        "wall_s": round(wall_ns / 1e9, 3),
        "ops_per_s": round(len(latencies) / (wall_ns / 1e9), 1) if wall_ns else 0.0,
        **summary_ms(latencies),
        "loop": loop_name(),
    }


def summary_line(figures: JsonObject) -> str:
    what = figures["method"] + (f" {figures['tool']}" if figures["tool"] else "")
    return (
        f"{figures['transport']} sessions={figures['sessions']} ops={figures['ops']} "
        f"errors={figures['errors']} "
        f"ops/s={figures['ops_per_s']:.0f} p50={figures['p50_ms']:.3f}ms p90={figures['p90_ms']:.3f}ms "
        f"p99={figures['p99_ms']:.3f}ms ({what}, {figures['protocol_version']}, {figures['loop']})"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    add_session_arguments(parser)
    parser.add_argument("--sessions", type=int, default=1, help="concurrent sessions (default 1)")
    parser.add_argument("--calls", type=int, default=1000, help="measured ops per session (default 1000)")
    parser.add_argument("--method", choices=("call", "list"), default="call", help="tools/call or tools/list")
    parser.add_argument("--tool", default="add", help="tool name for --method call (default add)")
    parser.add_argument("--args", default='{"a": 1, "b": 2}', help="tool arguments as a JSON object")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured ops per session first (default 20)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a line")
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.calls < 1 or args.warmup < 0:
        parser.error("--sessions and --calls must be at least 1, --warmup at least 0")
    arguments = json.loads(args.args)
    if not isinstance(arguments, dict):
        parser.error("--args must be a JSON object")
    args.arguments = arguments
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = Plan(args.method, args.tool, args.arguments, args.warmup, args.calls, args.timeout)
    try:
        figures = run(measure(session_options(args), plan, args.sessions))
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(figures) if args.json else summary_line(figures))
    for message, count in figures["error_messages"].items():
        print(f"  {count} x {message}", file=sys.stderr)
    return 1 if figures["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
