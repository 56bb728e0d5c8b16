"""Tools that ask (``ctx.ask``, ``ctx.elicit``): a legacy session's client is sent each request and the tool gets
the answers; a 2026-07-28 call answers input_required rounds whose answers a signed state carries, bound to the
call; refusals are in band; a confirmed tool that asks is confirmed once, and its yes is not replayed."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import signing
from django.test import override_settings

from mcp_tools.access import ask_state
from mcp_tools.server.calls.asking import NO_CHANNEL
from mcp_tools.server.calls.confirmation import INPUT_KEY
from mcp_tools.server.calls.request_state import NOT_VALID
from mcp_tools.tools import asks
from mcp_tools.tools.context import SYNC_CANNOT_ASK
from tests.db import orm
from tests.messages import modern_meta
from tests.queries import failed, ok
from tests.testapp.mcp_tools import NAME_FORM
from tests.testapp.models import Category
from tests.wire import Wire, connected

pytestmark = pytest.mark.django_db(transaction=True)

EVERYTHING = {"elicitation": {}, "sampling": {}, "roots": {}}
ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


async def requests_sent(wire: Wire, count: int) -> list[dict[str, Any]]:
    """The first ``count`` requests the server sent the client, once they have come."""
    sent = lambda: [m for m in wire.sent if isinstance(m, dict) and "method" in m and "id" in m]  # noqa: E731
    await wire.wait_for(lambda _message: len(sent()) >= count)
    return sent()[:count]


async def start(wire: Wire, name: str, arguments: dict[str, Any] | None = None) -> int:
    request_id = wire.new_id()
    params = {"name": name, "arguments": arguments or {}}
    await wire.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
    return request_id


async def reply(wire: Wire, request: dict[str, Any], result: dict[str, Any] | None = None, **error: Any) -> None:
    body = {"result": result} if result is not None else {"error": error}
    await wire.send({"jsonrpc": "2.0", "id": request["id"], **body})


async def test_a_legacy_tool_asks_its_client_in_turn_and_gets_the_answers(user: Any, tools: None) -> None:
    wire = await connected(user, can_ask=True, capabilities=EVERYTHING)
    request_id = await start(wire, "ask_twice")

    [name] = await requests_sent(wire, 1)
    assert name["method"] == "elicitation/create"
    assert name["params"] == {"message": "Your name? ", "requestedSchema": NAME_FORM}
    await reply(wire, name, accept(name="Ada"))
    colour = (await requests_sent(wire, 2))[1]  # one at a time: the next goes once the first is answered
    assert colour["params"]["message"] == "Colour?"
    await reply(wire, colour, accept(colour="teal"))
    roots = (await requests_sent(wire, 3))[2]
    assert roots["method"] == "roots/list" and roots["params"] == {}
    await reply(wire, roots, ROOTS)

    assert ok(await wire.response(request_id)) == {"name": "Ada", "colour": "teal", "roots": ["file:///work"]}
    assert wire.session.questions is not None and wire.session.questions.pending == {}


async def test_a_legacy_question_nobody_can_answer_is_refused_in_band(user: Any, tools: None) -> None:
    undeclared = await connected(user, can_ask=True, capabilities={"elicitation": {}})  # no roots
    no_channel = await connected(user, capabilities=EVERYTHING)  # a transport that carries no requests
    url_only = await connected(user, can_ask=True, capabilities={"elicitation": {"url": {}}})

    assert "did not declare the roots capability" in failed(await undeclared.call("ask_many", {"count": 1}))
    assert failed(await no_channel.call("ask_twice")) == NO_CHANNEL
    assert "did not declare the elicitation capability" in failed(await url_only.call("ask_twice"))
    assert failed(await undeclared.call("ask_from_a_thread")) == SYNC_CANNOT_ASK
    too_many = failed(await undeclared.call("ask_many", {"count": asks.MAX_REQUESTS + 1}))
    assert too_many == f"A tool may ask at most {asks.MAX_REQUESTS} questions at once."
    assert "must be one of" in failed(await undeclared.call("ask_many", {"count": 1, "method": "tools/call"}))
    for wire in (undeclared, url_only):
        assert [m for m in wire.sent if isinstance(m, dict) and "method" in m] == []  # nothing was sent

    # A client that answers with an error, or with what is no answer, ends the call in band too.
    wire = await connected(user, can_ask=True, capabilities=EVERYTHING)
    request_id = await start(wire, "ask_twice")
    await reply(wire, (await requests_sent(wire, 1))[0], code=-32600, message="no")
    assert failed(await wire.response(request_id)) == "The client did not answer 'elicitation'."
    second = await start(wire, "ask_twice")
    await reply(wire, (await requests_sent(wire, 2))[1], {"action": "maybe"})
    assert failed(await wire.response(second)) == "The client's answer to 'elicitation' could not be read."


# 2026-07-28: rounds of input_required ------------------------------------------------------------------


def call_params(name: str = "ask_twice", arguments: Any = None, caps: Any = None, **extra: Any) -> dict[str, Any]:
    meta = modern_meta(capabilities=EVERYTHING if caps is None else caps)
    return {"name": name, "arguments": {} if arguments is None else arguments, **extra, "_meta": meta}


async def modern_call(wire: Wire, *args: Any, **kwargs: Any) -> dict[str, Any]:
    return (await wire.request("tools/call", call_params(*args, **kwargs)))["result"]


async def test_a_modern_tool_asks_in_rounds_and_the_state_carries_earlier_answers(user: Any, tools: None) -> None:
    wire = Wire(user)

    first = await modern_call(wire)
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == [asks.ELICIT_KEY]
    assert first["inputRequests"][asks.ELICIT_KEY]["params"]["message"] == "Your name? "
    second = await modern_call(
        wire,
        inputResponses={asks.ELICIT_KEY: accept(name="Ada"), "stray": accept(x=1)},  # extra keys are ignored
        requestState=first["requestState"],
    )
    assert second["resultType"] == "input_required" and sorted(second["inputRequests"]) == ["colour", "roots"]
    assert second["requestState"] != first["requestState"]

    # Half the answers: asked again for the rest only; what was given rides in the new state.
    half = await modern_call(
        wire, inputResponses={"colour": accept(colour="teal")}, requestState=second["requestState"]
    )
    assert list(half["inputRequests"]) == ["roots"]
    done = await modern_call(wire, inputResponses={"roots": ROOTS}, requestState=half["requestState"])
    assert done["resultType"] == "complete"
    assert done["structuredContent"] == {"name": "Ada", "colour": "teal", "roots": ["file:///work"]}

    # Answers of the wrong shape are asked for again rather than read.
    wrong = await modern_call(wire, inputResponses={asks.ELICIT_KEY: 12345})
    assert wrong["resultType"] == "input_required" and list(wrong["inputRequests"]) == [asks.ELICIT_KEY]
    # The first round's answers may come without a state (there is nothing earlier to carry); a retry answers
    # one round, so answers to questions not asked yet are not taken for them.
    everything = {asks.ELICIT_KEY: accept(name="Bo"), "colour": accept(colour="red"), "roots": ROOTS}
    ahead = await modern_call(wire, inputResponses=everything)
    assert sorted(ahead["inputRequests"]) == ["colour", "roots"]


async def test_a_modern_state_counts_only_for_its_own_call_untouched_and_in_time(user: Any, tools: None) -> None:
    bob = await orm(lambda: get_user_model().objects.create_user("bob", password="pw"))
    alice_wire, bob_wire = Wire(user), Wire(bob)
    first = await modern_call(alice_wire, arguments={"topic": "a"})
    round_two = {"inputResponses": {asks.ELICIT_KEY: accept(name="Ada")}, "requestState": first["requestState"]}
    second = await modern_call(alice_wire, arguments={"topic": "a"}, **round_two)
    state = second["requestState"]
    # With the first round's key too: a state that does not count takes the answers it came with along.
    answers = {asks.ELICIT_KEY: accept(name="Eve"), "colour": accept(colour="teal"), "roots": ROOTS}

    def asked_from_the_start(result: dict[str, Any]) -> bool:
        return result["resultType"] == "input_required" and list(result["inputRequests"]) == [asks.ELICIT_KEY]

    tampered = state[:-3] + ("AAA" if not state.endswith("AAA") else "BBB")
    forged = signing.dumps({"rounds": []}, salt="another.salt")
    # A state that fails its integrity check is refused (-32602), its message giving no reason.
    for bad in (tampered, forged, "", "x" * (ask_state.MAX_STATE_CHARS + 1), 7):
        params = call_params(arguments={"topic": "a"}, inputResponses=answers, requestState=bad)
        assert (await alice_wire.request("tools/call", params))["error"] == {"code": -32602, "message": NOT_VALID}
    assert asked_from_the_start(
        await modern_call(alice_wire, arguments={"topic": "b"}, inputResponses=answers, requestState=state)
    )
    assert asked_from_the_start(
        await modern_call(bob_wire, arguments={"topic": "a"}, inputResponses=answers, requestState=state)
    )
    other_tool = await modern_call(alice_wire, "ask_many", {"count": 1}, inputResponses={}, requestState=state)
    assert other_tool["resultType"] == "input_required" and list(other_tool["inputRequests"]) == ["q0"]
    with override_settings(MCP_TOOLS={"CONFIRMATION_SECONDS": -1}):
        assert asked_from_the_start(
            await modern_call(alice_wire, arguments={"topic": "a"}, inputResponses=answers, requestState=state)
        )
    # The genuine state still counts, for as long as it lives: nothing above spent it.
    done = await modern_call(alice_wire, arguments={"topic": "a"}, inputResponses=answers, requestState=state)
    assert done["structuredContent"]["name"] == "Ada"


async def test_modern_refusals_and_caps_are_answered_in_band(user: Any, tools: None) -> None:
    wire = Wire(user)

    assert "did not declare the elicitation capability" in failed(
        await wire.request("tools/call", call_params(caps={"sampling": {}}))
    )
    too_many = await wire.request("tools/call", call_params("ask_many", {"count": asks.MAX_REQUESTS + 1}))
    assert "at most" in failed(too_many)
    assert failed(await wire.request("tools/call", call_params("ask_from_a_thread"))) == SYNC_CANNOT_ASK
    huge = accept(name="x" * asks.MAX_ANSWER_CHARS)
    oversize = await wire.request("tools/call", call_params(inputResponses={asks.ELICIT_KEY: huge}))
    assert failed(oversize) == f"The answer to {asks.ELICIT_KEY!r} is larger than this server accepts."


def test_a_state_that_would_outgrow_its_cap_is_not_issued() -> None:
    from mcp_tools.access.confirmation_state import Binding

    binding = Binding("t", 1, 2, "", "args", "")
    rounds = [
        ask_state.Round("d", {f"k{n}": {"text": secrets.token_urlsafe(1500)} for n in range(8)}) for _ in range(3)
    ]
    assert ask_state.issue(binding, rounds, None) is None
    small = ask_state.issue(binding, [ask_state.Round("d", {"k": {"action": "decline"}})], None)
    assert small is not None
    assert ask_state.open_state(small, binding) == ask_state.AskState(
        (ask_state.Round("d", {"k": {"action": "decline"}}),), None, ask_state.open_state(small, binding).nonce
    )
    assert ask_state.open_state(small, Binding("t", 1, 3, "", "args", "")) is None  # another caller's


# A confirmed tool that asks -----------------------------------------------------------------------------


async def test_a_confirmed_tool_that_asks_is_confirmed_once_and_its_yes_is_not_replayed(user: Any, tools: None) -> None:
    wire = Wire(user)
    arguments = {"code": "c1"}

    confirming = await modern_call(wire, "add_named_category", arguments)
    assert list(confirming["inputRequests"]) == [INPUT_KEY]
    yes = {"action": "accept", "content": {"confirm": True}}
    asking = await modern_call(
        wire, "add_named_category", arguments, inputResponses={INPUT_KEY: yes}, requestState=confirming["requestState"]
    )
    assert list(asking["inputRequests"]) == [asks.ELICIT_KEY]  # the tool's own question, not the yes again
    final = {"inputResponses": {asks.ELICIT_KEY: accept(name="Blue")}, "requestState": asking["requestState"]}
    done = await modern_call(wire, "add_named_category", arguments, **final)
    assert done["structuredContent"]["name"] == "Blue"

    replayed = await modern_call(wire, "add_named_category", arguments, **final)
    assert list(replayed["inputRequests"]) == [INPUT_KEY]  # the yes was spent: asked again, nothing written
    elsewhere = await modern_call(wire, "add_named_category", {"code": "c2"}, **final)
    assert list(elsewhere["inputRequests"]) == [INPUT_KEY]
    assert await orm(lambda: list(Category.objects.values_list("name", "code_hash"))) == [("Blue", "c1")]


async def test_a_legacy_confirmed_tool_asks_the_yes_then_its_question_in_one_call(user: Any, tools: None) -> None:
    wire = await connected(user, can_ask=True, capabilities={"elicitation": {}})
    request_id = await start(wire, "add_named_category", {"code": "c3"})

    confirm = (await requests_sent(wire, 1))[0]
    assert "confirm" in confirm["params"]["requestedSchema"]["properties"]
    await reply(wire, confirm, {"action": "accept", "content": {"confirm": True}})
    await reply(wire, (await requests_sent(wire, 2))[1], accept(name="Green"))

    assert ok(await wire.response(request_id))["name"] == "Green"
    assert await asyncio.wait_for(orm(lambda: Category.objects.get(code_hash="c3").name), 5) == "Green"
