"""A write the user confirms, from the official TypeScript SDK's client (``@modelcontextprotocol/sdk`` 1.x) over
Streamable HTTP: a legacy session whose client declared form elicitation is asked with ``elicitation/create`` on
the call's event stream, and a client that declared none is refused. The SDK speaks no 2026-07-28, so its
``input_required`` round trip is left to the Python SDK (tests/test_confirmations_live.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tools.server.calls.confirmation import CANNOT_ASK, DECLINED
from mcp_tools.tools.confirmations import CONFIRM_FIELD
from tests.live.confirmations import TOOL, categories
from tests.live.legacy_http import LATEST
from tests.live.node_client import confirming_client
from tests.live.servers import ServerProcess
from tests.live.sites import Site

pytestmark = pytest.mark.live
pytest_plugins = ["tests.live.fixtures"]

# The name each call adds, and what the client's user does when asked (None: a client that cannot ask).
ANSWERS: dict[str, str | None] = {
    "ts-yes": "accept",
    "ts-untouched": "untouched",
    "ts-no": "decline",
    "ts-dismissed": "cancel",
    "ts-unasked": None,
}


def refusal(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def assert_asked_about(asked: list[dict[str, Any]], name: str) -> None:
    """One form-mode question naming the argument, with one boolean box that starts unticked."""
    [params] = asked
    assert params["mode"] == "form" and f"\n- name: {name}\n" in params["message"]
    schema = params["requestedSchema"]
    assert schema["required"] == [CONFIRM_FIELD] and list(schema["properties"]) == [CONFIRM_FIELD]
    assert schema["properties"][CONFIRM_FIELD]["type"] == "boolean"
    assert schema["properties"][CONFIRM_FIELD]["default"] is False


def test_the_typescript_sdk_asks_its_user_and_only_a_yes_writes(live_site: Site, uvicorn_server: ServerProcess) -> None:
    plan = [{"arguments": {"name": name}, "answer": answer} for name, answer in ANSWERS.items()]

    calls = confirming_client(uvicorn_server.url("/mcp"), live_site.seeded.token, TOOL, plan)
    made = dict(zip(ANSWERS, calls, strict=True))

    assert {call["protocolVersion"] for call in calls} == {LATEST}
    for name, answer in ANSWERS.items():
        if answer is None:
            assert made[name]["asked"] == []
        else:
            assert_asked_about(made[name]["asked"], name)
    yes = made["ts-yes"]["result"]
    assert yes["isError"] is False and yes["structuredContent"]["name"] == "ts-yes"
    # Accepting the form as it came, with the SDK filling in its default, leaves the box unticked: a no.
    for name in ("ts-untouched", "ts-no", "ts-dismissed"):
        assert made[name]["result"] == refusal(DECLINED), name
    assert made["ts-unasked"]["result"] == refusal(CANNOT_ASK)
    assert [name for name in categories(live_site) if name in ANSWERS] == ["ts-yes"]
