"""The calls-in-flight admin: read-only, hiding stale rows, and cancelling only for those allowed to."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from mcp_tools.models import RunningCall
from tests.admin_users import staff

pytestmark = pytest.mark.django_db
CHANGELIST = "/admin/mcp_tools/runningcall/"


def running(tool: str, seen_seconds_ago: float = 0) -> RunningCall:
    seen = timezone.now() - timedelta(seconds=seen_seconds_ago)
    started = seen - timedelta(seconds=125)
    return RunningCall.objects.create(
        process="host:1:abcdef", key=tool, tool_name=tool, username="alice", started_at=started, seen_at=seen
    )


@pytest.mark.parametrize(
    ("codenames", "status"),
    [
        (("cancel_runningcall",), 403),
        (("view_runningcall",), 403),
        (("view_runningcall", "cancel_runningcall"), 302),
    ],
)
def test_cancelling_a_call_needs_both_view_and_cancel_permissions(codenames, status):
    row = running("slow")
    client = staff("someone", *codenames)

    response = client.post(f"{CHANGELIST}{row.pk}/cancel/")

    row.refresh_from_db()
    assert response.status_code == status
    assert (row.cancel_requested_at is not None) == (status == 302)


def test_the_cancel_address_takes_only_posts():
    row = running("slow")

    response = staff("root", superuser=True).get(f"{CHANGELIST}{row.pk}/cancel/")

    row.refresh_from_db()
    assert response.status_code == 405
    assert row.cancel_requested_at is None


def test_the_list_shows_live_calls_only_and_offers_cancel_but_no_edit():
    running("slow")
    running("ghost", seen_seconds_ago=3600)
    client = staff("root", superuser=True)

    page = client.get(CHANGELIST).content.decode()
    added = client.get(f"{CHANGELIST}add/")

    assert "slow" in page and "ghost" not in page
    assert "2 min 5 s" in page
    assert 'value="cancel_calls"' in page and "delete_selected" not in page
    assert added.status_code == 403


def test_a_stale_call_cannot_be_opened_or_cancelled():
    ghost = running("ghost", seen_seconds_ago=3600)
    client = staff("root", superuser=True)

    opened = client.get(f"{CHANGELIST}{ghost.pk}/change/")
    cancelled = client.post(f"{CHANGELIST}{ghost.pk}/cancel/", follow=True)

    ghost.refresh_from_db()
    assert opened.status_code == 302  # the admin's "does not exist" redirect
    # After the change view's own "does not exist" message:
    assert [str(m) for m in cancelled.context["messages"]][-1] == (
        "No call to cancel: it ended, or is being cancelled already."
    )
    assert ghost.cancel_requested_at is None
