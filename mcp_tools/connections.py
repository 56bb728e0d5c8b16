"""Lost database connections: telling them from other database errors, and retrying once on a fresh one.

A connection the server cut (``pg_terminate_backend``, a restart, a failover) or that cannot be opened fails
the statement that meets it; Django then closes it, and the next statement in that thread connects anew.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from django.db import InterfaceError, OperationalError, connections

logger = logging.getLogger("mcp_tools")
P = ParamSpec("P")
T = TypeVar("T")

# SQLSTATE classes and codes of a connection that is gone or refused: 08 (connection exception) and
# 57P01-57P04 (administrator or crash shutdown, cannot connect now, database dropped). Not 57014, a
# cancelled statement (the statement timeout), nor 40001/40P01: there the connection is fine.
_LOST_CLASS = "08"
_LOST_CODES = ("57P01", "57P02", "57P03", "57P04")
# MySQL's client errors for a server it cannot reach or lost (CR_CONNECTION_ERROR ... CR_SERVER_LOST).
_MYSQL_LOST = (2002, 2003, 2006, 2013)


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the database connection was lost or could not be made (rather than a bad query)."""
    if isinstance(exc, InterfaceError):
        return True
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if isinstance(code, str):
        return code.startswith(_LOST_CLASS) or code in _LOST_CODES
    module = type(cause).__module__
    if module.startswith("psycopg"):  # psycopg and psycopg2
        # No SQLSTATE: the client library lost the server ("server closed the connection unexpectedly").
        return True
    return bool(module.startswith("MySQLdb") and cause is not None and cause.args and cause.args[0] in _MYSQL_LOST)


def log_lost(exc: BaseException, doing: str) -> None:
    """Log a lost connection without a traceback: the cause is the database's, and the line says which."""
    logger.warning("Lost the database connection %s: %s", doing, exc)


def retried(func: Callable[P, T], alias: str) -> Callable[P, T]:
    """``func`` (sync), run again once on a fresh connection to ``alias`` when its connection was lost.

    Only for work that is safe to repeat and runs outside a transaction of the caller's: a read, or an insert
    that a lost connection leaves either committed or not at all. (A commit whose acknowledgement was lost
    is then done twice: for the audit trail, a row kept twice is better than a row lost.)
    """

    @wraps(func)
    def retrying(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return func(*args, **kwargs)
        except (OperationalError, InterfaceError) as exc:
            connection = connections[alias]
            if connection.in_atomic_block or not connection_lost(exc):
                raise
            connection.close()
        return func(*args, **kwargs)

    return retrying
