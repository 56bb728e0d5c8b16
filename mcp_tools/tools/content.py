"""What a tool produces: content blocks, ``ToolResult`` for tool authors, and ``CallResult`` for the server."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

NO_STRUCTURED: Any = object()  # "no structured content", as distinct from a structured None
# The string fields each known kind of block must carry; a kind not named here is sent as a text placeholder.
_REQUIRED: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "resource": (),
    "resource_link": ("uri", "name"),
}


class Unsendable(Exception):
    """A tool produced a value that cannot be sent as JSON."""


class MalformedContent(Unsendable):
    """A tool produced a content block that clients cannot read."""


class Content(dict[str, Any]):
    """A content block; returning one (or a list of them) from a tool sends it as is."""


def text(value: str) -> Content:
    return Content(type="text", text=value)


def image(data: bytes, mime_type: str) -> Content:
    return Content(type="image", data=base64.b64encode(data).decode(), mimeType=mime_type)


def audio(data: bytes, mime_type: str) -> Content:
    return Content(type="audio", data=base64.b64encode(data).decode(), mimeType=mime_type)


def embedded_resource(uri: str, *, text: str, mime_type: str = "text/plain") -> Content:
    return Content(type="resource", resource={"uri": uri, "mimeType": mime_type, "text": text})


def resource_link(uri: str, name: str, *, mime_type: str | None = None, description: str = "") -> Content:
    link = Content(type="resource_link", uri=uri, name=name)
    if mime_type:
        link["mimeType"] = mime_type
    if description:
        link["description"] = description
    return link


def block_problem(block: Any) -> str | None:
    """What is wrong with a content block (for the log), or None when a client can read it."""
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return "a content block is not an object with a string type"
    missing = [name for name in _REQUIRED.get(block["type"], ()) if not isinstance(block.get(name), str)]
    if missing:
        return f"a {block['type']} block lacks the string fields {', '.join(missing)}"
    if block["type"] == "resource" and not isinstance(block.get("resource"), dict):
        return "a resource block lacks its resource object"
    return None


@dataclass
class ToolResult:
    """Return this from a tool for full control over content, structured content and ``isError``."""

    content: list[dict[str, Any]] = field(default_factory=list)
    structured: Any = NO_STRUCTURED
    is_error: bool = False


@dataclass
class CallResult:
    """What a call produced, in the newest content vocabulary; the server shapes it for each revision."""

    content: list[dict[str, Any]]
    structured: Any = NO_STRUCTURED
    is_error: bool = False
    value: Any = None  # the plain value, for the draft's ``toolResult``

    @property
    def has_structured(self) -> bool:
        return self.structured is not NO_STRUCTURED
