"""What a tool may ask its client mid-call, and what counts as an answer: the shapes and caps both eras share.

A tool asks with :meth:`mcp_tools.Context.ask`: a map of keys to requests (``elicitation/create``,
``sampling/createMessage``, ``roots/list``), answered by key. The server puts the questions (an
:class:`Asker`, in :mod:`mcp_tools.server.calls.asking`); this module checks them before they leave and the
answers when they come back, whatever carried them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_tools.exceptions import CannotAsk

#: The client capability each request needs.
CAPABILITY = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
MAX_REQUESTS = 8  # requests in one round
MAX_KEY_CHARS = 64
MAX_ANSWER_CHARS = 16_384  # one answer, encoded as JSON
ELICIT_KEY = "elicitation"
ELICIT_ACTIONS = frozenset({"accept", "decline", "cancel"})
Requests = dict[str, dict[str, Any]]
Answers = dict[str, dict[str, Any]]


class Asker(Protocol):
    """Puts a tool's questions to the client of its call, as that call's revision and transport allow."""

    def can_ask(self, method: str) -> bool: ...

    async def ask(self, requests: Requests) -> Answers: ...


@dataclass(frozen=True)
class Elicited:
    """A person's answer to :meth:`mcp_tools.Context.elicit`: ``accept`` with ``content``, or ``decline``/``cancel``."""

    action: str
    content: dict[str, Any]

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


def checked_requests(requests: Any) -> Requests:
    """``requests`` as the wire carries them; ``CannotAsk`` for too many, an unknown method or a malformed one."""
    if not isinstance(requests, dict) or not requests:
        raise CannotAsk("A tool asks with a map of keys to requests, and at least one.")
    if len(requests) > MAX_REQUESTS:
        raise CannotAsk(f"A tool may ask at most {MAX_REQUESTS} questions at once.")
    checked: Requests = {}
    for key, request in requests.items():
        if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY_CHARS:
            raise CannotAsk(f"Each question needs a key of 1 to {MAX_KEY_CHARS} characters.")
        method = request.get("method") if isinstance(request, dict) else None
        params = request.get("params", {}) if isinstance(request, dict) else None
        if method not in CAPABILITY or not isinstance(params, dict):
            raise CannotAsk(f"Question {key!r} must be one of {', '.join(CAPABILITY)} with a params object.")
        checked[key] = {"method": method, "params": params}
    return checked


def readable(method: str, answer: Any) -> bool:
    """Whether ``answer`` is a result of ``method`` a tool can read (its size is checked apart)."""
    if not isinstance(answer, dict):
        return False
    if method == "elicitation/create":
        content = answer.get("content", {})
        return answer.get("action") in ELICIT_ACTIONS and isinstance(content, dict)
    if method == "sampling/createMessage":
        return isinstance(answer.get("content"), dict | list)
    return isinstance(answer.get("roots"), list)


def within_size(key: str, answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` once it fits ``MAX_ANSWER_CHARS``; ``CannotAsk`` when it does not."""
    if len(json.dumps(answer, separators=(",", ":"), default=str)) > MAX_ANSWER_CHARS:
        raise CannotAsk(f"The answer to {key!r} is larger than this server accepts.")
    return answer


def elicited(answer: dict[str, Any]) -> Elicited:
    return Elicited(str(answer["action"]), dict(answer.get("content") or {}))
