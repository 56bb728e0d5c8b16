"""Each tool's change history: who changed what, when and from where (see ``actor`` and ``recorder``)."""

from mcp_tools.history.actor import Actor, current, recording

__all__ = ["Actor", "current", "recording"]
