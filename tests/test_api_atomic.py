"""The transactions opened around an API action as Django's handler opens them around a view, and the adapter that
reads Django's ``non_atomic_requests`` marker."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections, transaction
from django.http import HttpResponse

from mcp_tools.tools.executors.api.atomic import atomic_requests, exempt_aliases


def plain_view(request: Any) -> HttpResponse:
    return HttpResponse()


@transaction.non_atomic_requests(using="default")
def exempt_view(request: Any) -> HttpResponse:
    return HttpResponse()


def test_the_adapter_reads_the_aliases_djangos_decorator_marks():
    # Pins Django's private marker: if Django renames it, this fails rather than every view turning atomic.
    assert exempt_aliases(exempt_view) == {"default"}
    assert exempt_aliases(plain_view) == set()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("view", "atomic"), [(plain_view, True), (exempt_view, False)])
def test_a_transaction_is_opened_only_where_atomic_requests_asks(view: Any, atomic: bool):
    before = connections.settings["default"].get("ATOMIC_REQUESTS", False)
    connections.settings["default"]["ATOMIC_REQUESTS"] = True
    try:
        with atomic_requests(view):
            assert connections["default"].in_atomic_block is atomic
    finally:
        connections.settings["default"]["ATOMIC_REQUESTS"] = before
