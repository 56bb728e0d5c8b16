"""Known MCP revisions as an ordered tuple, negotiation and era detection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class Revision:
    """One protocol revision; revisions compare by position, never as strings."""

    position: int
    wire: int | str

    @property
    def is_modern(self) -> bool:
        return self.position >= MODERN_FIRST.position

    def __str__(self) -> str:
        return str(self.wire)


DRAFT_INT = Revision(0, 1)
DRAFT = Revision(1, "2024-10-07")
V2024_11_05 = Revision(2, "2024-11-05")
V2025_03_26 = Revision(3, "2025-03-26")
V2025_06_18 = Revision(4, "2025-06-18")
V2025_11_25 = Revision(5, "2025-11-25")
V2026_07_28 = Revision(6, "2026-07-28")

LEGACY: tuple[Revision, ...] = (DRAFT_INT, DRAFT, V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25)
MODERN: tuple[Revision, ...] = (V2026_07_28,)
MODERN_FIRST = V2026_07_28
LATEST_LEGACY = LEGACY[-1]
LATEST = MODERN[-1]  # the newest revision, whose definitions show every field

_BY_WIRE: dict[tuple[type, int | str], Revision] = {(type(r.wire), r.wire): r for r in LEGACY + MODERN}

PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId"


def lookup(value: Any) -> Revision | None:
    """The revision a wire value names, or None; ``True`` is not the integer 1."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return _BY_WIRE.get((type(value), value))


def negotiate_legacy(requested: Any) -> Revision | None:
    """Echo a supported legacy revision; None for garbage; our latest for unknown dates."""
    revision = lookup(requested)
    if revision is not None and not revision.is_modern:
        return revision
    if isinstance(requested, str) and _looks_like_revision(requested):
        return LATEST_LEGACY
    return None


def _looks_like_revision(value: str) -> bool:
    parts = value.split("-")
    return len(parts) == 3 and all(p.isdigit() for p in parts) and len(parts[0]) == 4


def supported_wire_values() -> list[int | str]:
    return [r.wire for r in LEGACY]


def supported_modern_values() -> list[str]:
    return [str(r.wire) for r in MODERN]


def is_modern_request(params: Any) -> bool:
    """A request belongs to the stateless era when its ``_meta`` names a protocol version."""
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION_META in meta
