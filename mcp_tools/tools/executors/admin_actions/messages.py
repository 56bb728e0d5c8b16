"""The admin's messages of one action run, collected instead of shown on the next page.

Adapter: Django's messages framework reads a request's storage from ``request._messages``, which
``MessageMiddleware`` sets (checked against Django 5.2 and 6.1; tests/test_admin_actions.py pins it). A
``BaseStorage`` subclass that keeps what it is given is the framework's documented way to store messages.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.messages.storage.base import BaseStorage, Message

LEVELS = {messages.DEBUG: "debug", messages.INFO: "info", messages.SUCCESS: "success", messages.WARNING: "warning"}


class Collected(BaseStorage):
    """Messages kept in memory for the duration of one request."""

    def __init__(self, request: Any) -> None:
        super().__init__(request)
        self.kept: list[Message] = []

    def _get(self, *args: Any, **kwargs: Any) -> tuple[list[Message], bool]:
        return list(self.kept), True

    def _store(self, messages: list[Message], response: Any, *args: Any, **kwargs: Any) -> list[Message]:
        self.kept = list(messages)
        return []


def collect(request: Any) -> Collected:
    """Give ``request`` a message storage that keeps what the admin adds; returns it."""
    storage = Collected(request)
    request._messages = storage
    return storage


def shown(storage: Collected) -> list[dict[str, str]]:
    """The messages, as a person would read them on the admin's next page."""
    return [{"level": LEVELS.get(m.level, "error"), "message": str(m.message)} for m in storage]
