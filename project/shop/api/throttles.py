"""Throttles of the shop's API: order writes have a rate of their own."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.throttling import UserRateThrottle


class OrderWriteThrottle(UserRateThrottle):
    """Counts each user's order writes against the ``order_writes`` rate; reads are not counted."""

    scope = "order_writes"

    def allow_request(self, request: Request, view: Any) -> bool:
        if request.method in SAFE_METHODS:
            return True
        return super().allow_request(request, view)
