"""One tools/call, step by step: ``call.py`` walks ``admission``, ``run``, ``output`` and ``record``.

Callers import :class:`Call`; the in-band texts a failed call answers with are re-exported for tests and
callers that compare against them. Failures become answers in :mod:`mcp_tools.protocol.errors` alone.
"""

from mcp_tools.protocol.errors import DATABASE_UNAVAILABLE, GENERIC_FAILURE, MALFORMED, UNSENDABLE
from mcp_tools.server.calls.call import Call
from mcp_tools.server.calls.output import MAX_RESULT_DEPTH, TOO_DEEP

__all__ = ["DATABASE_UNAVAILABLE", "GENERIC_FAILURE", "MALFORMED", "MAX_RESULT_DEPTH", "TOO_DEEP", "UNSENDABLE", "Call"]
