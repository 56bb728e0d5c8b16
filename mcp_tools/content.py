"""Deprecated: moved to :mod:`mcp_tools.tools.content`; this path works until the next release."""

from mcp_tools.deprecation import moved

__getattr__ = moved(__name__, "mcp_tools.tools.content")
