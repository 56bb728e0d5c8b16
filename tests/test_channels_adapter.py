"""The dispatch adapter: Channels' dispatch without the per-message database hop, and a tripwire on Channels."""

from __future__ import annotations

import inspect
import textwrap

import channels.consumer
import channels.generic.websocket
import pytest
from channels.consumer import AsyncConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.testing import WebsocketCommunicator

from mcp_tools.transports.channels_adapter import DirectDispatch
from mcp_tools.transports.websocket import MCPWebsocketConsumer
from tests.websocket import TIMEOUT, WSClient

# What DirectDispatch copies, minus the aclose_old_connections() line. When this test fails, Channels has
# changed how it dispatches: read the new AsyncConsumer.dispatch, bring DirectDispatch in line with it
# (keeping everything but the database hop), then update this text.
CHANNELS_DISPATCH = '''\
async def dispatch(self, message):
    """
    Works out what to do with a message.
    """
    handler = getattr(self, get_handler_name(message), None)
    if handler:
        await aclose_old_connections()
        await handler(message)
    else:
        raise ValueError("No handler for message type %s" % message["type"])
'''


class Echo(AsyncWebsocketConsumer):
    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        await self.send(text_data=text_data)


class DirectEcho(DirectDispatch, Echo):
    pass


def count_hops(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    """Every ``aclose_old_connections()`` a consumer awaits from now on, wherever Channels calls it."""
    calls: list[None] = []

    async def counted() -> None:
        calls.append(None)

    for module in (channels.consumer, channels.generic.websocket):
        monkeypatch.setattr(module, "aclose_old_connections", counted)
    return calls


def test_channels_dispatch_is_still_the_one_the_adapter_copies() -> None:
    found = textwrap.dedent(inspect.getsource(AsyncConsumer.dispatch))

    assert found == CHANNELS_DISPATCH, "Channels changed AsyncConsumer.dispatch: review DirectDispatch"
    assert AsyncWebsocketConsumer.dispatch is AsyncConsumer.dispatch


def test_the_mcp_websocket_consumer_dispatches_through_the_adapter() -> None:
    assert MCPWebsocketConsumer.dispatch is DirectDispatch.dispatch


@pytest.mark.parametrize(("consumer", "hops"), [(Echo, 3), (DirectEcho, 0)], ids=["channels", "adapter"])
async def test_each_frame_costs_channels_one_database_hop_and_the_adapter_none(
    consumer: type[Echo], hops: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_hops(monkeypatch)
    communicator = WebsocketCommunicator(consumer.as_asgi(), "/")
    assert (await communicator.connect(TIMEOUT))[0]
    before = len(calls)

    echoed = []
    for number in range(3):
        await communicator.send_to(text_data=str(number))
        echoed.append(await communicator.receive_from(TIMEOUT))

    assert (echoed, len(calls) - before) == (["0", "1", "2"], hops)
    await communicator.disconnect(TIMEOUT)


@pytest.mark.parametrize("consumer", [Echo, DirectEcho], ids=["channels", "adapter"])
async def test_a_message_without_a_handler_is_refused_as_channels_refuses_it(consumer: type[Echo]) -> None:
    with pytest.raises(ValueError, match=r"^No handler for message type mcp\.nothing$"):
        await consumer().dispatch({"type": "mcp.nothing"})


@pytest.mark.django_db(transaction=True)
async def test_mcp_websocket_frames_reach_the_server_without_a_database_hop(
    ws: WSClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_hops(monkeypatch)

    replies = [await ws.request("ping") for _ in range(3)]

    assert (replies, calls) == ([{"jsonrpc": "2.0", "id": number, "result": {}} for number in (1, 2, 3)], [])
