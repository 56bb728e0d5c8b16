"""Django set up on the demo's settings and bench database for the peer servers, which are no Django sites:
their ``list_orders`` runs ``orders.py``'s query through the ORM.

Importing this module configures Django (``DJANGO_SETTINGS_MODULE``, by default ``bench.settings_tmpdb`` with
``BENCH_DB``), and ``stateless()`` reads how the peers should keep sessions: ``BENCH_PEER_SESSIONS=stateful``
(the default) keeps a server session per ``Mcp-Session-Id``; ``stateless`` answers every POST with a fresh one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings_tmpdb")

import django

django.setup()

#: What the peers' ``add`` and ``list_orders`` say of themselves, as the demo's tools do.
ADD_DESCRIPTION = "Add two integers."
LIST_ORDERS_DESCRIPTION = "List shop orders with their customer's name (alice's customers, oldest first)."


def stateless() -> bool:
    mode = os.environ.get("BENCH_PEER_SESSIONS", "stateful")
    if mode not in ("stateless", "stateful"):
        raise ValueError(f"BENCH_PEER_SESSIONS is {mode!r}: stateless or stateful")
    return mode == "stateless"
