"""list_changed fan-out: N listening sessions, one trigger command, each session's arrival time."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace

from cli import add_session_arguments, run, session_options
from latency import summary_ms
from rpc import LIST_CHANGED, BenchError, JsonObject, SessionOptions, Transport
from transports import close_sessions, open_sessions, transport_name


@dataclass(frozen=True)
class TriggerRun:
    returncode: int
    started_ns: int
    finished_ns: int
    marked_ns: int | None
    timed_out: bool
    output: str


def run_trigger(command: str, mark: str | None, timeout: float) -> TriggerRun:
    """Run the shell command that changes a tool (blocking: call it in a thread), noting when it
    prints `mark`. Reading in a thread keeps that moment exact while the event loop is busy receiving."""
    started = time.monotonic_ns()
    process = subprocess.Popen(
        command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    timed_out = threading.Event()
    stopper = threading.Timer(timeout, stop, (process, timed_out))
    stopper.start()
    marked: int | None = None
    lines: list[bytes] = []
    try:
        for line in process.stdout or ():
            if marked is None and mark is not None:
                marked = marked_at(line.decode(errors="replace"), mark)
            lines.append(line)
        process.wait()
    finally:
        stopper.cancel()
    output = b"".join(lines).decode(errors="replace")
    return TriggerRun(process.returncode, started, time.monotonic_ns(), marked, timed_out.is_set(), output)


def stop(process: subprocess.Popen[bytes], timed_out: threading.Event) -> None:
    timed_out.set()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def marked_at(line: str, mark: str) -> int | None:
    """When `line` shows `mark`: the CLOCK_MONOTONIC nanoseconds printed after it, else now."""
    if mark not in line:
        return None
    after = line.split(mark, 1)[1].split()
    return int(after[0]) if after and after[0].isdigit() else time.monotonic_ns()


class Countdown:
    """Set once `total` sessions have reported in."""

    def __init__(self, total: int) -> None:
        self.left = total
        self.done = asyncio.Event()

    def arrive(self) -> None:
        self.left -= 1
        if self.left == 0:
            self.done.set()


async def arrival(transport: Transport, listening: Countdown) -> int:
    """Wait for list_changed on one session; return its arrival time."""
    listening.arrive()
    await transport.notification(LIST_CHANGED)
    return time.monotonic_ns()


def spread(options: SessionOptions, urls: list[str]) -> list[SessionOptions]:
    """The session options for each server: `options` itself, then the same for each of `urls`."""
    return [options, *(replace(options, url=url) for url in urls)]


async def open_spread(servers: list[SessionOptions], sessions: int, concurrency: int) -> list[Transport]:
    """Open `sessions` listening sessions split evenly over `servers` (the first ones take the remainder)."""
    opened: list[Transport] = []
    try:
        for index, options in enumerate(servers):
            count = sessions // len(servers) + (index < sessions % len(servers))
            if count:
                opened += await open_sessions(options, count, concurrency, listen=True)
    except BaseException:
        await close_sessions(opened)
        raise
    return opened


async def measure(
    servers: list[SessionOptions], sessions: int, concurrency: int, trigger: str, mark: str | None
) -> JsonObject:
    """Open the sessions over `servers`, run the trigger, and time each session's list_changed."""
    options = servers[0]
    transports = await open_spread(servers, sessions, concurrency)
    try:
        listening = Countdown(sessions)
        waiters = [asyncio.create_task(arrival(transport, listening)) for transport in transports]
        await asyncio.wait_for(listening.done.wait(), options.timeout)
        trigger_task = asyncio.create_task(asyncio.to_thread(run_trigger, trigger, mark, options.timeout))
        done, pending = await asyncio.wait(waiters, timeout=options.timeout)
        for waiter in pending:
            waiter.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        triggered = await trigger_task
    finally:
        await close_sessions(transports)
    if triggered.timed_out:
        raise BenchError(f"trigger still running after {options.timeout:g}s: {trigger}")
    if mark is not None and triggered.marked_ns is None:
        raise BenchError(f"the trigger never printed {mark!r}; its output:\n{triggered.output[-500:]}")
    origin = triggered.started_ns if triggered.marked_ns is None else triggered.marked_ns
    arrivals = [task.result() - origin for task in done if task.exception() is None]
    failures = [repr(task.exception()) for task in done if task.exception() is not None]
    return report(servers, sessions, arrivals, failures, triggered)


def report(
    servers: list[SessionOptions], sessions: int, arrivals: list[int], failures: list[str], triggered: TriggerRun
) -> JsonObject:
    figures = summary_ms(arrivals, ranks=(50, 99))
    first = min(arrivals, default=0)
    return {
        "transport": transport_name(servers[0]),
        "url": " ".join(options.url for options in servers),
        "sessions": sessions,
        "received": len(arrivals),
        "timeout_s": servers[0].timeout,
        **figures,
        "first_ms": round(first / 1e6, 3),
        "spread_ms": round((max(arrivals, default=0) - first) / 1e6, 3),
        "origin": "trigger start" if triggered.marked_ns is None else "ready line",
        "trigger_ms": round((triggered.finished_ns - triggered.started_ns) / 1e6, 3),
        "trigger_exit": triggered.returncode,
        "trigger_output": triggered.output[-500:],
        "failures": failures[:5],
    }


def summary_line(figures: JsonObject) -> str:
    return (
        f"fanout {figures['transport']} sessions={figures['sessions']} "
        f"received={figures['received']}/{figures['sessions']} within {figures['timeout_s']:g}s "
        f"p50={figures['p50_ms']:.1f}ms p99={figures['p99_ms']:.1f}ms max={figures['max_ms']:.1f}ms "
        f"first={figures['first_ms']:.1f}ms spread={figures['spread_ms']:.1f}ms "
        f"trigger={figures['trigger_ms']:.1f}ms (exit {figures['trigger_exit']}; t0 = {figures['origin']})"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    add_session_arguments(parser)
    parser.add_argument("--trigger", required=True, help="shell command that changes a tool the sessions see")
    parser.add_argument(
        "--ready-line",
        metavar="MARK",
        help="measure from the moment the trigger prints a line containing MARK (excludes its start-up)",
    )
    parser.add_argument(
        "--also-url",
        action="append",
        default=[],
        metavar="URL",
        help="another server (e.g. a second worker on its own port); sessions are spread evenly over every URL",
    )
    parser.add_argument("--sessions", type=int, default=100, help="listening sessions (default 100)")
    parser.add_argument("--concurrency", type=int, default=50, help="handshakes in flight while opening")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a line")
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.concurrency < 1:
        parser.error("--sessions and --concurrency must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # The thread reading the trigger's output needs the GIL to timestamp its ready line promptly.
    sys.setswitchinterval(0.0005)
    try:
        servers = spread(session_options(args), args.also_url)
        figures = run(measure(servers, args.sessions, args.concurrency, args.trigger, args.ready_line))
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(figures) if args.json else summary_line(figures))
    if figures["trigger_exit"]:
        print(f"trigger failed:\n{figures['trigger_output']}", file=sys.stderr)
    for failure in figures["failures"]:
        print(f"  session failed: {failure}", file=sys.stderr)
    return 0 if figures["received"] == args.sessions and not figures["trigger_exit"] else 1


if __name__ == "__main__":
    sys.exit(main())
