"""Calls confirmed on the site: asked for once per call, decided by a person, spent by the call's retry.

Two people may decide: an approver in the admin (:func:`may_decide`), or, for a client that cannot ask its
user, the caller on the site's confirmation page (:func:`may_confirm_own`). A call is bound (:func:`binding`)
to the tool, the caller, their credential and the exact arguments. Its first try records an
:class:`~mcp_tools.models.Approval` and ends at once; retries of the same call find it still pending,
rejected, or approved, and an approved one runs the retry once (it is spent in the same transaction that finds
it, so two retries racing in two processes run the call once). Nothing waits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from mcp_tools.access.confirmation_state import digest
from mcp_tools.conf import mcp_settings
from mcp_tools.models import Approval

Status = Approval.Status
Confirmer = Approval.Confirmer


def binding(tool_id: int, user_pk: Any, credential: str, arguments_digest: str) -> str:
    """What an approval is for, as one key: the tool, the caller, their credential and the arguments."""
    return digest([tool_id, user_pk, credential, arguments_digest])


@dataclass(frozen=True)
class Settled:
    """Where a call's approval stands: ``approval`` (None: too many pending); ``run`` when it was just spent."""

    approval: Approval | None
    run: bool = False


def settle(
    *,
    key: str,
    tool_id: int,
    tool_name: str,
    user: Any,
    group_id: int | None,
    arguments: dict[str, Any],
    question: str,
    state: str,
    confirmer: str = Confirmer.APPROVER,
) -> Settled:
    """Spend the call's approval if its ``confirmer`` gave it for these rows, else say where it stands, asking for
    one when none is open. Sync: it reads and writes the database."""
    now = timezone.now()
    # A yes binds to who gave it: the caller's own yes never stands in for an approver's, nor one group's for
    # another's.
    live = Approval.objects.filter(
        binding=key, tool_id=tool_id, confirmer=confirmer, approvers_id=group_id, expires_at__gt=now
    )
    with transaction.atomic():
        approved = live.select_for_update().filter(status=Status.APPROVED).order_by("-decided_at").first()
        if approved is not None:
            if approved.state == state:
                approved.status = Status.USED
                approved.save(update_fields=["status"])
                approved.decided_by  # noqa: B018  (loaded here: the audit row names who approved)
                return Settled(approved, run=True)
            # Approved for rows that have changed since: the approver is asked again, about these rows.
            approved.expires_at = now
            approved.save(update_fields=["expires_at"])
        open_ = live.filter(status__in=(Status.PENDING, Status.REJECTED)).order_by("-created_at").first()
        if open_ is not None:
            return Settled(open_)
        user_pk = user.pk if getattr(user, "is_authenticated", False) else None
        callers = Approval.objects.filter(user__isnull=True) if user_pk is None else Approval.objects.filter(user=user)
        waiting = callers.filter(status=Status.PENDING, expires_at__gt=now).count()
        if waiting >= int(mcp_settings.MAX_PENDING_APPROVALS_PER_USER):
            return Settled(None)
        created = Approval.objects.create(
            tool_id=tool_id,
            tool_name=tool_name[:128],
            user_id=user_pk,
            binding=key,
            arguments=arguments,
            question=question,
            state=state,
            approvers_id=group_id,
            confirmer=confirmer,
            expires_at=now + timedelta(seconds=float(mcp_settings.APPROVAL_SECONDS)),
        )
        return Settled(created)


def may_decide(approver: Any, approval: Approval) -> bool:
    """Whether ``approver`` may approve or reject ``approval``: the permission, a member of its approvers, never
    the caller, and only while it is pending and unexpired."""
    return (
        approval.confirmer == Confirmer.APPROVER
        and approval.status == Status.PENDING
        and not approval.expired
        and approval.user_id != approver.pk
        and approval.approvers_id is not None
        and approver.has_perm("mcp_tools.approve_call")
        and approver.groups.filter(pk=approval.approvers_id).exists()
    )


def may_confirm_own(person: Any, approval: Approval) -> bool:
    """Whether ``person`` may confirm or decline ``approval`` on the confirmation page: their own call, sent
    there by a client that could not ask them, while it is pending and unexpired."""
    return (
        approval.confirmer == Confirmer.CALLER
        and approval.status == Status.PENDING
        and not approval.expired
        and approval.user_id is not None
        and approval.user_id == person.pk
        and person.is_active
    )


def decide(approver: Any, approval_id: int, *, approve: bool, state: str) -> Approval | None:
    """Record ``approver``'s decision on a pending approval, binding a yes to the rows as they saw them
    (``state``); None when they may not decide it (any more): an approver's in the admin, or a caller's own on
    the confirmation page, as the approval says. Sync."""
    with transaction.atomic():
        approval = Approval.objects.select_for_update().filter(pk=approval_id).first()
        if approval is None:
            return None
        allowed = may_confirm_own if approval.confirmer == Confirmer.CALLER else may_decide
        if not allowed(approver, approval):
            return None
        approval.status = Status.APPROVED if approve else Status.REJECTED
        approval.state = state if approve else approval.state
        approval.decided_by = approver
        approval.decided_at = timezone.now()
        approval.save(update_fields=["status", "state", "decided_by", "decided_at"])
        return approval
