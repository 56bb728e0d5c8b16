"""The official TypeScript SDK's clients on Node: the OAuth client (``tests/oauth_client.mjs``) for the browser
tests, and two bearer-token clients run once: ``tests/token_client.mjs`` lists and calls,
``tests/confirming_client.mjs`` calls a tool that asks its user to confirm.

``make typescript-sdk`` installs ``@modelcontextprotocol/sdk`` under ``.ci/node`` beside the conformance
suite (``.ci/run`` does it in CI); the Node is the suite's Node 22 when it is there, else the machine's.
Without Node or the SDK a test is skipped with the reason, or fails with MCP_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

from tests.live import services
from tests.live.servers import ROOT

NODE_MODULES = ROOT / ".ci" / "node" / "node_modules"
SDK = NODE_MODULES / "@modelcontextprotocol" / "sdk"
SCRIPT = ROOT / "tests" / "oauth_client.mjs"
TOKEN_SCRIPT = ROOT / "tests" / "token_client.mjs"
CONFIRMING_SCRIPT = ROOT / "tests" / "confirming_client.mjs"
TIMEOUT = 10
# Enough for Node to start, load the SDK, exchange the code and make its calls.
FINISH_TIMEOUT = 30


def node() -> str:
    """The Node to run the client on; skips (or fails) when there is none, or no TypeScript SDK for it."""
    bundled = NODE_MODULES / ".bin" / "node"
    found = str(bundled) if bundled.exists() else shutil.which("node")
    if found is None:
        services.unavailable("Needs Node for the TypeScript SDK's clients: run make typescript-sdk")
    if not (SDK / "package.json").exists():
        services.unavailable(f"Needs the TypeScript SDK under {SDK.parent}: run make typescript-sdk")
    return found


class NodeClient:
    """One run of the client: its JSON lines arrive as it prints them, read with bounded waits."""

    def __init__(self, mcp_url: str, tool: str, arguments: dict[str, Any], log_path: Path) -> None:
        env = {**os.environ, "MCP_TS_NODE_MODULES": str(NODE_MODULES)}
        self.log_path = log_path
        with log_path.open("w") as log:
            self.process = subprocess.Popen(
                [node(), str(SCRIPT), mcp_url, tool, json.dumps(arguments)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        self.lines: queue.Queue[str | None] = queue.Queue()
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line)
        self.lines.put(None)

    def next_message(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next JSON line the client prints, within ``timeout`` seconds."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            line = None
        if line is None:
            raise AssertionError(f"the TypeScript client printed nothing more within {timeout}s:\n{self.log()}")
        return dict(json.loads(line))

    def log(self) -> str:
        """What the client wrote to stderr so far."""
        return self.log_path.read_text(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(TIMEOUT)
        self._reader.join(TIMEOUT)
        if self.process.stdout is not None:
            self.process.stdout.close()


def run_once(script: Path, token: str, *args: str) -> dict[str, Any]:
    """The last JSON line ``script`` printed once it had run to its end with the bearer ``token``."""
    env = {**os.environ, "MCP_TS_NODE_MODULES": str(NODE_MODULES), "MCP_TS_TOKEN": token}
    completed = subprocess.run(
        [node(), str(script), *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=FINISH_TIMEOUT,
    )
    lines = completed.stdout.splitlines()
    assert completed.returncode == 0 and lines, f"the TypeScript client failed:\n{completed.stdout}{completed.stderr}"
    return dict(json.loads(lines[-1]))


def token_client(mcp_url: str, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """What the token client printed once it had connected with ``token``, listed the tools and called ``tool``."""
    return run_once(TOKEN_SCRIPT, token, mcp_url, tool, json.dumps(arguments))


def confirming_client(mcp_url: str, token: str, tool: str, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each call of ``plan`` ({"arguments", "answer"}) as the confirming client made it: its protocol version,
    the elicitation params its user was asked with and the tool's result."""
    return list(run_once(CONFIRMING_SCRIPT, token, mcp_url, tool, json.dumps(plan))["calls"])


__all__ = ["FINISH_TIMEOUT", "NodeClient", "confirming_client", "node", "token_client"]
