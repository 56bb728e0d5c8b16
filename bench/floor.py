"""What the audit row costs at the least: its insert in the bare ``sqlite3`` module, without Django or this project.

Builds the ``mcp_tools_toolcall`` table as Django creates it on SQLite (every index included), fills it
with ``--rows`` rows as a site with history has, then inserts rows shaped like an ``add`` call's in batches of
``--batch`` (one transaction each, as the audit log's group commit does under load) and prints the CPU per row,
the least of ``--reps`` runs. The same for a thread hop (``loop.run_in_executor`` of a function that does
nothing), which every batch (and, at one session, every call) pays::

    python bench/floor.py                  # batch 32, as with 32 sessions
    python bench/floor.py --batch 1        # one session: a commit per call

Set against a bare consumer's CPU per call, these bound the ratio any audited server can reach on this
machine: the bare consumer does the same framing and JSON, and none of this.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = (
    "created_at, user_id, username, token_id, client, transport, session_id, tool_name, arguments, outcome, "
    "message, duration_ms, result_bytes"
)


def schema() -> list[str]:
    """The statements that create the audit table and its indexes, as Django writes them for SQLite."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django
    from django.db import connection

    django.setup()
    from mcp_tools.models import ToolCall

    with connection.schema_editor(collect_sql=True, atomic=False) as editor:
        editor.create_model(ToolCall)
    return [statement.rstrip(";") for statement in editor.collected_sql]


def row(now: str) -> tuple[object, ...]:
    return (now, 1, "alice", None, "", "websocket", "0" * 32, "add", '{"a":1,"b":2}', "ok", "", 0.21, 40)


def insert_cpu(path: Path, statements: list[str], rows: int, batch: int, calls: int, reps: int) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    for statement in statements:
        db.execute(statement)  # foreign keys are not enforced without the pragma: no user or token tables needed
    sql = f"INSERT INTO mcp_tools_toolcall ({COLUMNS}) VALUES ({', '.join(['?'] * 13)})"
    now = str(datetime.now(UTC).replace(tzinfo=None))
    db.execute("BEGIN")
    db.executemany(sql, [row(now)] * rows)
    db.execute("COMMIT")
    best = float("inf")
    for _ in range(reps):
        started = time.process_time()
        for _ in range(max(1, calls // batch)):
            values = [row(str(datetime.now(UTC).replace(tzinfo=None))) for _ in range(batch)]
            db.execute("BEGIN IMMEDIATE")
            db.executemany(sql, values)
            db.execute("COMMIT")
        best = min(best, (time.process_time() - started) / (max(1, calls // batch) * batch))
    db.close()
    return best


async def hop_cpu(hops: int, reps: int) -> float:
    loop = asyncio.get_running_loop()
    best = float("inf")
    for _ in range(reps):
        started = time.process_time()
        for _ in range(hops):
            await loop.run_in_executor(None, int)
        best = min(best, (time.process_time() - started) / hops)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32, help="rows per transaction (default 32)")
    parser.add_argument("--rows", type=int, default=100_000, help="rows already in the table (default 100,000)")
    parser.add_argument("--calls", type=int, default=4_000, help="rows inserted per run (default 4,000)")
    parser.add_argument("--reps", type=int, default=5, help="runs; the least is printed (default 5)")
    args = parser.parse_args()
    statements = schema()
    with tempfile.TemporaryDirectory() as directory:
        per_row = insert_cpu(
            Path(directory) / "floor.sqlite3", statements, args.rows, args.batch, args.calls, args.reps
        )
    per_hop = asyncio.run(hop_cpu(2_000, args.reps))
    print(f"sqlite {sqlite3.sqlite_version}, {len(statements) - 1} indexes, {args.rows:,} rows before")
    print(f"insert, batches of {args.batch}: {per_row * 1e6:.1f} us of CPU per row")
    print(f"thread hop: {per_hop * 1e6:.1f} us of CPU ({per_hop * 1e6 / args.batch:.1f} us per row at this batch)")
    print(f"least audit cost per call: {(per_row + per_hop / args.batch) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
