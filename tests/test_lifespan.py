"""``mcp_tools.lifespan`` under a real uvicorn: the demo's application answers the lifespan protocol, so
uvicorn completes start-up and shut-down without calling the protocol unsupported."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.live.browser import DemoServer
from tests.live.sites import child_environment

pytestmark = pytest.mark.live

UNSUPPORTED = "ASGI 'lifespan' protocol appears unsupported"
STARTED = "Application startup complete."
STOPPED = "Application shutdown complete."


class LifespanDemoServer(DemoServer):
    """The demo's ASGI application served as ``make demo`` serves it: uvicorn's lifespan left on (auto)."""

    def command(self) -> list[str]:
        command = super().command()
        at = command.index("--lifespan")
        return command[:at] + command[at + 2 :]


def test_uvicorn_completes_the_demos_start_up_and_shut_down_without_calling_lifespan_unsupported(
    tmp_path: Path,
) -> None:
    env = child_environment({"MCP_DEMO_DATABASE": str(tmp_path / "demo.sqlite3")}, "tests.demo_settings")
    server = LifespanDemoServer("demo-lifespan", env, tmp_path / "server.log")
    assert "--lifespan" not in server.command()

    server.start()
    try:
        assert server.logged(STARTED)
    finally:
        server.stop()

    log = server.log()  # complete: stop() waits for the process and for the thread copying its output
    assert UNSUPPORTED not in log
    assert STOPPED in log, log
    assert log.index(STARTED) < log.index("Uvicorn running on") < log.index(STOPPED)
