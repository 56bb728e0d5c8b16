"""The demo's settings on a throwaway database, for benchmark runs that must not touch db.sqlite3.

    BENCH_DB=/tmp/mcp-bench/db.sqlite3 DJANGO_SETTINGS_MODULE=bench.settings_tmpdb DJANGO_DEBUG=0 ...

With DATABASE_URL (PostgreSQL) the database is the URL's and BENCH_DB is not needed.

Optional: BENCH_PAGE_SIZE (tools/list page size), BENCH_AUDIT=0 (MCP_TOOLS["AUDIT"] off),
BENCH_AUDIT_FLUSH_SECONDS (audit rows batched behind the answers instead of committed before them),
BENCH_REDIS_NO_TIMEOUT=1 (no socket read timeout on the Redis channel layer; needs REDIS_URL).
"""

import os

from mcp_tools.conf import DEFAULTS
from project.settings import *  # noqa: F403
from project.settings import DATABASES, INSTALLED_APPS, MCP_TOOLS

# The bench's own sync @tool callable, list_orders_sync (bench/sync_orders).
INSTALLED_APPS = [*INSTALLED_APPS, "bench.sync_orders"]

if not os.environ.get("DATABASE_URL"):
    DATABASES["default"]["NAME"] = os.environ["BENCH_DB"]
# Every session of a run is alice's: the per-user bounds would measure the isolation between users (which
# the tests hold) instead of the throughput. The fair pool still schedules every job, so its cost is measured.
MCP_TOOLS = {
    **MCP_TOOLS,
    "MAX_CALLS_PER_USER": 10_000,
    "USER_THREADS": MCP_TOOLS.get("TOOL_THREADS", DEFAULTS["TOOL_THREADS"]),
}
if os.environ.get("BENCH_PAGE_SIZE"):
    MCP_TOOLS = {**MCP_TOOLS, "PAGE_SIZE": int(os.environ["BENCH_PAGE_SIZE"])}
if os.environ.get("BENCH_AUDIT", "1") == "0":
    MCP_TOOLS = {**MCP_TOOLS, "AUDIT": False}
if os.environ.get("BENCH_AUDIT_FLUSH_SECONDS"):
    MCP_TOOLS = {**MCP_TOOLS, "AUDIT_FLUSH_SECONDS": float(os.environ["BENCH_AUDIT_FLUSH_SECONDS"])}
if os.environ.get("BENCH_REDIS_NO_TIMEOUT") == "1":
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": os.environ["REDIS_URL"], "socket_timeout": None}]},
        }
    }
# The benchmarks open hundreds of sessions and connections for one user; the per-user caps would end them.
MCP_TOOLS = {**MCP_TOOLS, "MAX_SESSIONS_PER_USER": 100_000, "MAX_CONNECTIONS_PER_USER": 100_000}
