"""Helpers for browser tests: signing in, finding a tool's admin page, what a user's MCP client gets, and keeping
the pages of a failure.

The fixtures that start the server and the browser live in ``tests.live.browser``; this module starts nothing,
so test modules and ``tests/conftest.py`` import it freely.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from tests.live.servers import ROOT, ServerProcess

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

WIDTH, HEIGHT = 1280, 800
# Every Playwright wait (navigation, a selector, an expectation) gives up after this many milliseconds.
WAIT_MS = 10_000
HTTP_TIMEOUT = 10
ARTIFACTS_VARIABLE = "MCP_BROWSER_ARTIFACTS"
DEFAULT_ARTIFACTS = ROOT / ".ci" / "artifacts" / "browser"
MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
MAX_LIST_PAGES = 50
TOOLS = "/admin/mcp_tools/tool/"

# The browsers this process launched and has not closed yet; their pages are what a failure keeps.
open_browsers: list[Browser] = []


def log_in(page: Page, server: ServerProcess, username: str, password: str, then: str = "/admin/") -> None:
    """Sign in through the admin's login form and land on ``then``."""
    page.goto(server.url(f"/admin/login/?next={then}"))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("#login-form [type=submit]")
    page.wait_for_url(server.url(then))


def tool_change_url(page: Page, server: ServerProcess, name: str) -> str:
    """The admin change page of the tool called ``name``, found through the changelist's search."""
    from playwright.sync_api import expect

    page.goto(server.url(f"{TOOLS}?q={name}"))
    link = page.locator(f"#result_list th a:text-is({json.dumps(name)})")
    expect(link).to_have_count(1)
    return server.url(str(link.get_attribute("href")))


def mcp_reply(server: ServerProcess, token: str, method: str, params: dict[str, Any], **headers: str) -> Any:
    """The JSON-RPC answer (a result or an error) to one stateless (2026-07-28) request to the server's /mcp."""
    sent = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
        **headers,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": MODERN_META}}
    reply = httpx.post(server.url("/mcp"), json=body, headers=sent, timeout=HTTP_TIMEOUT)
    assert reply.status_code == 200, reply.text
    return reply.json()


def mcp_request(server: ServerProcess, token: str, method: str, params: dict[str, Any], **headers: str) -> Any:
    """The result of one stateless (2026-07-28) JSON-RPC request to the server's /mcp."""
    answer = mcp_reply(server, token, method, params, **headers)
    assert "result" in answer, answer
    return answer["result"]


def tool_names(server: ServerProcess, token: str) -> list[str]:
    """The names of every tool the token's user may use, page after page of ``tools/list``."""
    names: list[str] = []
    params: dict[str, Any] = {}
    for _page in range(MAX_LIST_PAGES):
        result = mcp_request(server, token, "tools/list", params)
        names.extend(tool["name"] for tool in result["tools"])
        if not result.get("nextCursor"):
            return names
        params = {"cursor": result["nextCursor"]}
    raise AssertionError(f"tools/list did not end within {MAX_LIST_PAGES} pages")


def artifacts_directory() -> Path:
    return Path(os.environ.get(ARTIFACTS_VARIABLE) or DEFAULT_ARTIFACTS)


def open_pages() -> list[Page]:
    return [page for browser in open_browsers for context in browser.contexts for page in context.pages]


def keep_pages(test: str, directory: Path, pages: list[Page]) -> list[Path]:
    """Save a full-page screenshot and the HTML of each page under ``directory``; the files written."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", test).strip("_")[:150]
    directory.mkdir(parents=True, exist_ok=True)
    saved: list[Path] = []
    for number, page in enumerate(pages, start=1):
        base = directory / f"{stem}-page{number}"
        try:
            page.screenshot(path=f"{base}.png", full_page=True, timeout=WAIT_MS)
            saved.append(Path(f"{base}.png"))
            Path(f"{base}.html").write_text(f"<!-- {page.url} -->\n{page.content()}")
            saved.append(Path(f"{base}.html"))
        except Exception as exc:  # a page that cannot be kept must not hide the failure
            Path(f"{base}.txt").write_text(f"{page.url}\nnot saved: {exc}\n")
            saved.append(Path(f"{base}.txt"))
    return saved


def report_pages(test: str) -> str | None:
    """Keep the open pages of a failed test; one line per file for its report, or None with no page open."""
    pages = open_pages()
    if not pages:
        return None
    return "\n".join(str(path) for path in keep_pages(test, artifacts_directory(), pages))
