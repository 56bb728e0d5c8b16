"""The 2026-07-28 per-request envelope: ``_meta`` validation and the version check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_tools.exceptions import InvalidParams, UnsupportedProtocolVersion
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.versions import Revision


@dataclass(frozen=True)
class Envelope:
    """What a modern request says about its client."""

    requested: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any]


def envelope(params: dict[str, Any]) -> Envelope:
    """The request's ``_meta`` envelope; -32602 naming what is missing."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise InvalidParams(
            "Missing _meta: 2026-07-28 requests carry the protocol version and client capabilities",
            {"missing": [v.PROTOCOL_VERSION_META, v.CLIENT_CAPABILITIES_META]},
        )
    missing = [key for key in (v.PROTOCOL_VERSION_META, v.CLIENT_CAPABILITIES_META) if key not in meta]
    if missing:
        raise InvalidParams(f"_meta lacks {', '.join(missing)}", {"missing": missing})
    requested, capabilities = meta[v.PROTOCOL_VERSION_META], meta[v.CLIENT_CAPABILITIES_META]
    if not isinstance(requested, str):
        raise InvalidParams(f"_meta {v.PROTOCOL_VERSION_META} must be a string")
    if not isinstance(capabilities, dict):
        raise InvalidParams(f"_meta {v.CLIENT_CAPABILITIES_META} must be an object")
    info = meta.get(v.CLIENT_INFO_META)
    return Envelope(requested, capabilities, info if isinstance(info, dict) else {})


def revision(requested: str) -> Revision:
    """The modern revision named by ``requested``; -32022 with the supported list otherwise."""
    found = v.lookup(requested)
    if found is None or not found.is_modern:
        raise UnsupportedProtocolVersion(data={"supported": v.supported_modern_values(), "requested": requested})
    return found
