"""A call's progress notifications: what is sent, cut or dropped, and nothing once the call has ended."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcp_tools.protocol.jsonrpc import encode
from mcp_tools.server.progress import ELLIPSIS, MAX_MESSAGE_CHARS, MAX_NOTIFICATION_BYTES, ProgressSender


class Sent(list[Any]):
    def __call__(self, message: Any) -> None:
        self.append(message)


def progress(params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


def test_a_well_formed_notification_is_sent_as_it_is_encoded() -> None:
    sent = Sent()
    ProgressSender(sent, "t")({"progressToken": "p", "progress": 1, "total": 2, "message": "half"})

    assert sent == [progress({"progressToken": "p", "progress": 1, "total": 2, "message": "half"})]
    assert encode(sent[0]) == '{"jsonrpc":"2.0","method":"notifications/progress","params":' + (
        '{"progressToken":"p","progress":1,"total":2,"message":"half"}}'
    )


def test_a_long_message_is_cut_to_the_cap_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    sent = Sent()
    sender = ProgressSender(sent, "chatty")
    with caplog.at_level(logging.WARNING, "mcp_tools"):
        sender({"progressToken": 1, "progress": 1, "message": "y" * 5000})
        sender({"progressToken": 1, "progress": 2, "message": "y" * 5000})

    assert [m["params"]["message"] for m in sent] == ["y" * (MAX_MESSAGE_CHARS - 1) + ELLIPSIS] * 2
    assert caplog.messages == [f"Tool chatty: progress message of 5000 characters cut to {MAX_MESSAGE_CHARS}"]


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"progress": float("nan")}, "progress is not a finite number"),
        ({"progress": float("inf")}, "progress is not a finite number"),
        ({"progress": True}, "progress is not a finite number"),
        ({"progress": "1"}, "progress is not a finite number"),
        ({"progress": 1, "total": float("-inf")}, "total is not a finite number"),
        ({"progress": 1, "message": object()}, "message is not text"),
        ({"progress": 10**5000}, "Exceeds the limit"),
        ({"progressToken": "t" * MAX_NOTIFICATION_BYTES, "progress": 1}, f"larger than {MAX_NOTIFICATION_BYTES} bytes"),
    ],
    ids=["nan", "infinity", "bool", "text", "total", "message", "int-too-long", "too-large"],
)
def test_a_notification_that_cannot_be_sent_is_dropped_without_raising(
    params: dict[str, Any], problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    sent = Sent()
    with caplog.at_level(logging.WARNING, "mcp_tools"):
        ProgressSender(sent, "bad")({"progressToken": 1, **params})

    assert sent == []
    [logged] = caplog.messages
    assert logged.startswith("Tool bad: progress notification dropped: ") and problem in logged


def test_nothing_is_sent_once_the_call_is_closed(caplog: pytest.LogCaptureFixture) -> None:
    sent = Sent()
    sender = ProgressSender(sent, "late")
    sender.close()
    with caplog.at_level(logging.WARNING, "mcp_tools"):
        sender({"progressToken": 1, "progress": 1})
        sender({"progressToken": 1, "progress": 2})

    assert sent == []
    assert caplog.messages == ["Tool late: progress reported after the call ended was dropped"]
