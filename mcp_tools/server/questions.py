"""Requests the server sends a client, and the answers it awaits: one table per session, capped.

Only legacy revisions carry server-to-client requests (2026-07-28 asks through ``input_required`` instead).
A question goes out on the session's own channel (the WebSocket, stdio, or the SSE stream of the legacy HTTP
POST it belongs to) and its answer comes back as a JSON-RPC response with the same id, which
:meth:`Questions.answer` hands to the waiting call. Ids are random, so that no other party can guess one; a
session holds at most ``MAX_PENDING_QUESTIONS`` at once and a user at most ``MAX_PENDING_QUESTIONS_PER_USER``
in this process; a question unanswered within its time is dropped. Waiting holds no thread and no transaction.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import Callable
from typing import Any

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import NotConfirmed
from mcp_tools.loops import Deadline
from mcp_tools.protocol.jsonrpc import RequestId, Response

Send = Callable[[Any], None]

# Questions awaiting an answer per user, in this process: one client cannot hold a worker's memory with them.
_per_user: Counter[Any] = Counter()


class Unanswered(Exception):
    """The client answered with an error, or not at all within the question's time."""


class Questions:
    """The questions one session has asked and awaits answers to, by request id."""

    def __init__(self) -> None:
        self.pending: dict[RequestId, asyncio.Future[Any]] = {}

    async def ask(self, send: Send, user_key: Any, method: str, params: dict[str, Any], seconds: float) -> Any:
        """Send ``method`` with ``params`` and return the client's result; ``Unanswered`` for an error or after
        ``seconds``; ``NotConfirmed`` when the session or user already waits for as many answers as it may."""
        if len(self.pending) >= int(mcp_settings.MAX_PENDING_QUESTIONS):
            raise NotConfirmed("Too many questions are waiting for an answer in this session; answer those first.")
        if _per_user[user_key] >= int(mcp_settings.MAX_PENDING_QUESTIONS_PER_USER):
            raise NotConfirmed("Too many questions are waiting for your answer; answer those first.")
        request_id = f"q-{secrets.token_urlsafe(12)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        _per_user[user_key] += 1
        try:
            send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            with Deadline(seconds):
                return await future
        except TimeoutError:
            raise Unanswered("no answer in time") from None
        finally:
            self.pending.pop(request_id, None)
            _per_user[user_key] -= 1
            if _per_user[user_key] <= 0:
                del _per_user[user_key]

    def answer(self, response: Response) -> bool:
        """Hand a client's response to the question it answers; False when no question here has its id."""
        future = self.pending.get(response.id) if response.id is not None else None
        if future is None or future.done():
            return False
        if isinstance(response.result, dict):
            future.set_result(response.result)
        else:
            future.set_exception(Unanswered("the client refused the question"))
        return True

    def close(self) -> None:
        """The session is gone: questions still waiting are answered by nobody."""
        for future in self.pending.values():
            if not future.done():
                future.set_exception(Unanswered("the session closed"))
