"""The demo data, seeded once for the session, and API clients signed in as the demo users."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from rest_framework.test import APIClient

from project.shop.demo_data import seed


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> None:
    with django_db_blocker.unblock():
        seed()


@pytest.fixture(autouse=True)
def _fresh_throttles() -> None:
    cache.clear()


@pytest.fixture
def api(db: None) -> Callable[[str | None], APIClient]:
    """An API client signed in (through the session, as a browser would be) as the named demo user."""

    def client_for(username: str | None) -> APIClient:
        client = APIClient()
        if username is not None:
            client.force_login(get_user_model().objects.get(username=username))
        return client

    return client_for
