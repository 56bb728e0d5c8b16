"""Putting a tool's questions (``ctx.ask``) to the client of its call, as the call's revision allows.

A legacy session's client is sent each request on the session's own channel and the tool awaits the answer
(:mod:`mcp_tools.server.questions`). A 2026-07-28 call cannot be sent requests: the tool's first unanswered
questions end the run with ``input_required`` and a signed state (:mod:`mcp_tools.access.ask_state`) carrying
the answers given so far; the client retries the call with the new answers, and the tool runs again from the
start, each ``ask`` returning what was given. Answers for the round the state awaits come from the retry's
``inputResponses``; a state that does not open brings nothing and everything is asked again. Either way a
request the client did not declare the capability for is refused in band, before anything is sent.

A call confirmed by a person (:mod:`.confirmation`) carries that yes in its questions' state, so the person
confirms once; the state is then spent as it is used, so that replaying it runs nothing.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async

from mcp_tools.access import ask_state, confirmation_state
from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import CannotAsk, InputRequired, NotConfirmed
from mcp_tools.protocol import versions as v
from mcp_tools.server.calls.confirmation import Confirmed, call_binding, needs_confirmation
from mcp_tools.server.questions import Unanswered
from mcp_tools.tools import asks
from mcp_tools.tools.entries import Entry

if TYPE_CHECKING:
    from mcp_tools.server.calls.call import Call

ASKED = "The tool asked the client for input."
NO_CHANNEL = "This connection cannot carry the tool's questions to the client. Nothing was asked."
TOO_MUCH = "The answers given so far are too large to carry to the next question."


def declares(revision: v.Revision, capabilities: dict[str, Any], method: str, params: dict[str, Any]) -> bool:
    """Whether the client declared what ``method`` needs; for elicitation, also the mode (form unless it says)."""
    declared = capabilities.get(asks.CAPABILITY[method])
    if not isinstance(declared, dict):
        return False
    if method != "elicitation/create":
        return True
    mode = params.get("mode", "form")
    modes = {"form", "url"} & set(declared)
    return revision >= v.V2025_06_18 and (mode in modes if modes else mode == "form")


def refuse_undeclared(call: Call, requests: asks.Requests) -> None:
    for key, request in requests.items():
        if not declares(call.revision, call.capabilities, request["method"], request["params"]):
            capability = asks.CAPABILITY[request["method"]]
            raise CannotAsk(f"The client cannot answer {key!r}: it did not declare the {capability} capability.")


class SessionAsker:
    """Asks over a legacy session's channel, one request after another, each answer awaited (holding no thread)."""

    def __init__(self, call: Call) -> None:
        self.call = call

    def can_ask(self, method: str) -> bool:
        call = self.call
        return call.session.questions is not None and declares(call.revision, call.capabilities, method, {})

    async def ask(self, requests: asks.Requests) -> asks.Answers:
        refuse_undeclared(self.call, requests)
        questions, session = self.call.session.questions, self.call.session
        if questions is None:
            raise CannotAsk(NO_CHANNEL)
        user_key = session.user.pk if getattr(session.user, "is_authenticated", False) else None
        seconds = float(mcp_settings.CONFIRMATION_SECONDS)
        answers: asks.Answers = {}
        for key, request in requests.items():
            method = request["method"]
            try:
                answer = await questions.ask(session.emit, user_key, method, request["params"], seconds)
            except Unanswered:
                raise CannotAsk(f"The client did not answer {key!r}.") from None
            except NotConfirmed as exc:
                raise CannotAsk(exc.message) from None
            if not asks.readable(method, answer):
                raise CannotAsk(f"The client's answer to {key!r} could not be read.")
            answers[key] = asks.within_size(key, answer)
        return answers


class StateAsker:
    """Asks a 2026-07-28 client through ``input_required`` rounds, whose answers a signed state carries.

    Made for every modern call, it reads the call's state only when the tool first asks: most tools never do.
    """

    def __init__(self, call: Call, entry: Entry, arguments: dict[str, Any], confirmed: Confirmed | None) -> None:
        self.call, self.entry, self.arguments, self.confirmed = call, entry, arguments, confirmed
        self.next_round = 0
        self.took_responses = False  # the retry's answers are for one round only

    @cached_property
    def binding(self) -> confirmation_state.Binding:
        return binding(self.call, self.entry, self.arguments)

    @cached_property
    def opened(self) -> ask_state.AskState | None:
        return ask_state.open_state(self.call.request.params.get("requestState"), self.binding)

    @cached_property
    def rounds(self) -> list[ask_state.Round]:
        return list(self.opened.rounds) if self.opened is not None else []

    @cached_property
    def responses(self) -> dict[str, Any]:
        params = self.call.request.params
        responses = params.get("inputResponses")
        # A state that does not open takes its round's answers with it: everything is asked again.
        fresh = params.get("requestState") is None or self.opened is not None
        return responses if isinstance(responses, dict) and fresh else {}

    @cached_property
    def carried(self) -> ask_state.Carried | None:
        confirmed = self.confirmed
        return ask_state.Carried(confirmed.state, confirmed.how) if confirmed is not None else None

    def can_ask(self, method: str) -> bool:
        return declares(self.call.revision, self.call.capabilities, method, {})

    async def ask(self, requests: asks.Requests) -> asks.Answers:
        refuse_undeclared(self.call, requests)
        index, asked = self.next_round, confirmation_state.digest(requests)
        self.next_round += 1
        if index >= len(self.rounds) or self.rounds[index].asked != asked:
            # Other questions than those answered before (or none yet): what came after them no longer holds.
            del self.rounds[index:]
            self.rounds.append(ask_state.Round(asked, {}))
        known = dict(self.rounds[index].answers)
        if len(known) < len(requests) and not self.took_responses:
            self.took_responses = True
            known.update(self.answered(requests, known))
            self.rounds[index] = ask_state.Round(asked, known)
        missing = {key: request for key, request in requests.items() if key not in known}
        if not missing:
            return {key: known[key] for key in requests}
        state = ask_state.issue(self.binding, self.rounds, self.carried)
        if state is None:
            raise CannotAsk(TOO_MUCH)
        raise InputRequired({"resultType": "input_required", "inputRequests": missing, "requestState": state}, ASKED)

    def answered(self, requests: asks.Requests, known: asks.Answers) -> asks.Answers:
        """The retry's readable answers to ``requests`` not yet known; others are asked for again."""
        return {
            key: asks.within_size(key, self.responses[key])
            for key, request in requests.items()
            if key not in known and asks.readable(request["method"], self.responses.get(key))
        }


def binding(call: Call, entry: Entry, arguments: dict[str, Any]) -> confirmation_state.Binding:
    """The call a state of its questions belongs to; rows play no part (a confirmation binds those)."""
    return call_binding(call, entry, arguments)


def asker(call: Call, entry: Entry, arguments: dict[str, Any]) -> asks.Asker:
    """Who puts this call's questions to its client."""
    if call.revision.is_modern:
        return StateAsker(call, entry, arguments, call.confirmed)
    return SessionAsker(call)


async def carried_confirmation(call: Call, entry: Entry, arguments: dict[str, Any]) -> Confirmed | None:
    """The yes an earlier round of this very call got, carried by its questions' state; spent as it is used."""
    if not call.revision.is_modern or not needs_confirmation(entry):
        return None
    opened = ask_state.open_state(call.request.params.get("requestState"), binding(call, entry, arguments))
    if opened is None or opened.confirmed is None:
        return None
    if not await database_sync_to_async(confirmation_state.spend)(opened.nonce):
        return None
    return Confirmed(opened.confirmed.state, opened.confirmed.how, call.session.user)
