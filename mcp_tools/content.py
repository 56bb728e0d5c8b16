"""Deprecated: moved to :mod:`mcp_tools.protocol.content`; this path works until the next release."""

from mcp_tools.deprecation import moved

__getattr__ = moved(__name__, "mcp_tools.protocol.content")
