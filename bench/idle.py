"""Server memory per idle session: the server's VmRSS before and after opening N listening sessions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cli import add_session_arguments, run, session_options
from rpc import BenchError, JsonObject, SessionOptions
from transports import close_sessions, open_sessions, transport_name


def rss_kb(pid: int) -> int:
    """The process's resident set size, in KB, from /proc/PID/status."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError as exc:
        raise BenchError(f"cannot read the memory of process {pid}: {exc}") from exc
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise BenchError(f"no VmRSS line for process {pid}")


async def measure(options: SessionOptions, pid: int, sessions: int, warmup: int, concurrency: int) -> JsonObject:
    """Open `warmup` sessions (first-use allocations), read RSS, open `sessions` more, read RSS again."""
    warm = await open_sessions(options, warmup, concurrency, listen=True) if warmup else []
    try:
        before = rss_kb(pid)
        idle = await open_sessions(options, sessions, concurrency, listen=True)
        after = rss_kb(pid)
        await close_sessions(idle)
    finally:
        await close_sessions(warm)
    return {
        "transport": transport_name(options),
        "url": options.url,
        "pid": pid,
        "sessions": sessions,
        "warmup_sessions": warmup,
        "rss_before_kb": before,
        "rss_after_kb": after,
        "kb_per_session": round((after - before) / sessions, 1),
    }


def summary_line(figures: JsonObject) -> str:
    return (
        f"idle {figures['transport']} sessions={figures['sessions']} "
        f"rss {figures['rss_before_kb']} -> {figures['rss_after_kb']} KB: "
        f"{figures['kb_per_session']:.1f} KB per session (pid {figures['pid']})"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    add_session_arguments(parser)
    parser.add_argument("--pid", type=int, required=True, help="the server process whose memory is read")
    parser.add_argument("--sessions", type=int, default=500, help="idle sessions measured (default 500)")
    parser.add_argument("--warmup", type=int, default=20, help="sessions opened before the baseline (default 20)")
    parser.add_argument("--concurrency", type=int, default=50, help="handshakes in flight while opening")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a line")
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.warmup < 0 or args.concurrency < 1:
        parser.error("--sessions and --concurrency must be at least 1, --warmup at least 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        rss_kb(args.pid)
        figures = run(measure(session_options(args), args.pid, args.sessions, args.warmup, args.concurrency))
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(figures) if args.json else summary_line(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
