"""An ASGI application that answers the lifespan protocol, for the "lifespan" key of a site's ProtocolTypeRouter.

Uvicorn opens a lifespan connection to every application it serves; a router with no "lifespan" entry
refuses it, and uvicorn logs "ASGI 'lifespan' protocol appears unsupported" on every start. The site needs
nothing done at start-up or shut-down (Django opens its connections on first use), so this only agrees.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]
ANSWERS = {
    "lifespan.startup": "lifespan.startup.complete",
    "lifespan.shutdown": "lifespan.shutdown.complete",
}


async def lifespan(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    """Complete the server's start-up and shut-down at once; the connection ends with the shut-down."""
    while True:
        message = await receive()
        answer = ANSWERS.get(message["type"])
        if answer is not None:
            await send({"type": answer})
        if message["type"] == "lifespan.shutdown":
            return
