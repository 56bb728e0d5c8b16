"""Server-sent events as the tests read them: frames split from the text, JSON-RPC messages decoded from them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

# An event ends with a blank line; servers may end lines with CRLF, CR or LF.
_NEWLINES = ("\r\n", "\r", "\n")


@dataclass(frozen=True)
class Frame:
    """One event (or comment-only block) of a ``text/event-stream`` body."""

    event: str | None = None
    data: str | None = None
    comments: tuple[str, ...] = ()

    @property
    def message(self) -> Any:
        """The JSON-RPC message the frame's data carries."""
        assert self.data is not None, self
        return json.loads(self.data)


def _lines(block: str) -> list[str]:
    for newline in _NEWLINES[:2]:
        block = block.replace(newline, "\n")
    return block.split("\n")


def parse_frame(block: str) -> Frame:
    event: str | None = None
    data: list[str] = []
    comments: list[str] = []
    for line in _lines(block):
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if not field:
            comments.append(value)
        elif field == "event":
            event = value
        elif field == "data":
            data.append(value)
    return Frame(event, "\n".join(data) if data else None, tuple(comments))


def split_frames(text: str) -> tuple[list[Frame], str]:
    """The complete frames at the start of ``text`` and what is left of an unfinished one."""
    normalised = "\n".join(_lines(text))
    *blocks, rest = normalised.split("\n\n")
    return [parse_frame(block) for block in blocks if block], rest


def messages(text: str) -> list[Any]:
    """The JSON-RPC messages of a finished ``text/event-stream`` body, comments skipped."""
    frames, rest = split_frames(text)
    assert rest == "", f"unfinished event at the end of the stream: {rest!r}"
    return [frame.message for frame in frames if frame.data is not None]


class EventReader:
    """Reads the messages of a streamed ``text/event-stream`` body (any async iterator of text chunks)."""

    def __init__(self, chunks: AsyncIterator[str]) -> None:
        self._chunks = chunks
        self._text = ""
        self._frames: list[Frame] = []

    async def frame(self) -> Frame:
        while not self._frames:
            self._text += await anext(self._chunks)
            frames, self._text = split_frames(self._text)
            self._frames.extend(frames)
        return self._frames.pop(0)

    async def message(self) -> Any:
        """The next JSON-RPC message, skipping comments; StopAsyncIteration once the body has ended."""
        while True:
            frame = await self.frame()
            if frame.data is not None:
                return frame.message
