"""The confirmation step: a person's yes, after permission and validation, before a call that needs one runs.

The question (:mod:`mcp_tools.tools.confirmations`) names the tool, its arguments and what its kind says will
change. How it is put depends on the request: a 2026-07-28 call answers ``input_required`` with an
elicitation and a signed ``requestState`` (:mod:`mcp_tools.access.confirmation_state`), and runs when the same
call comes back with the answer and that state; a legacy session whose client declared elicitation gets
``elicitation/create`` on its own channel (:mod:`mcp_tools.server.questions`). A client that can do neither
is refused with a clear result, or, where the site chose ``CONFIRMATION_FALLBACK = "page"``, sent to the
site's confirmation page (:func:`by_page`): by URL-mode elicitation where it declared it, else named in the
result. Nothing is written before the yes, and a yes runs only on the rows as the person saw
them (``Confirmed.state``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from django.urls import reverse

from mcp_tools.access import approvals, confirmation_state
from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import ApprovalPending, Declined, InputRequired, NotConfirmed, UrlElicitationRequired
from mcp_tools.models import Approval, Tool, ToolCall
from mcp_tools.protocol import versions as v
from mcp_tools.server.calls import admission
from mcp_tools.server.questions import Unanswered
from mcp_tools.tools import confirmations
from mcp_tools.tools.context import Context
from mcp_tools.tools.entries import Entry
from mcp_tools.tools.executors.queries.links import absolute, admin_path

if TYPE_CHECKING:
    from mcp_tools.server.calls.call import Call

#: The key of the confirmation among a 2026-07-28 call's ``inputRequests`` and ``inputResponses``.
INPUT_KEY = "mcp_tools.confirm"
CANNOT_ASK = (
    "This tool runs only once a person confirms it, and this client cannot ask its user (it did not declare"
    " form elicitation). Nothing was changed. Use a client that supports elicitation."
)
NO_ANSWER = "Nobody confirmed the call in time. Nothing was changed."
UNREADABLE = "The client's answer to the confirmation could not be read. Nothing was changed."
DECLINED = "The person declined to run this call. Nothing was changed."
REJECTED = "An approver rejected this call. Nothing was changed."
# An approval keeps the call's arguments until the approver has decided: a call larger than this is refused.
MAX_APPROVAL_ARGUMENT_BYTES = 65_536
TOO_LARGE_TO_APPROVE = (
    f"The arguments are too large for an approver to review (at most {MAX_APPROVAL_ARGUMENT_BYTES} bytes of JSON)."
    " Nothing was changed."
)
TOO_LARGE_TO_CONFIRM = (
    f"The arguments are too large to confirm on the site's page (at most {MAX_APPROVAL_ARGUMENT_BYTES} bytes of"
    " JSON). Nothing was changed."
)
TOO_MANY_APPROVALS = (
    "Too many of your calls are waiting for a decision on the site; wait for those first. Nothing was changed."
)
OPEN_PAGE = "This call runs only once you confirm it on the site's page; then make the same call again."


@dataclass(frozen=True)
class Confirmed:
    """A yes: the state of the rows the person saw, how the yes was given, and whose it is."""

    state: str
    how: str  # a ToolCall.Confirmation value
    by: Any  # the user who said yes


def needs_confirmation(entry: Entry) -> bool:
    return entry.confirmation != Tool.Confirmation.NONE


async def confirm(call: Call, entry: Entry, arguments: dict[str, Any], seconds: float) -> Confirmed | None:
    """The yes the call runs on, or None when its tool needs none; raises when it may not run (yet)."""
    if not needs_confirmation(entry):
        return None
    ctx = Context(user=call.session.user, tool_name=entry.name, credential=call.session.token)
    # Worked out in the caller's turn of the tools' threads, like the call itself.
    async with admission.Places(call, entry, seconds):
        changes = await entry.changes(arguments, ctx)
    question = confirmations.question(entry.spec.title or entry.name, arguments, entry.spec.input_schema, changes)
    if entry.confirmation == Tool.Confirmation.APPROVER:
        return await by_approver(call, entry, arguments, question)
    if call.revision.is_modern:
        return await by_input_required(call, entry, arguments, question)
    return await by_elicitation(call, entry, arguments, question)


def asks_forms(revision: v.Revision, capabilities: dict[str, Any]) -> bool:
    """Whether a client declared form elicitation: ``elicitation: {}`` means forms; from 2025-11-25 a client may
    name its modes, and one naming only ``url`` shows no forms."""
    declared = capabilities.get("elicitation")
    if revision < v.V2025_06_18 or not isinstance(declared, dict):
        return False
    modes = {"form", "url"} & set(declared)
    return not modes or "form" in modes


def asks_urls(revision: v.Revision, capabilities: dict[str, Any]) -> bool:
    """Whether a client declared URL-mode elicitation (2025-11-25 on: ``elicitation: {url: {}}``)."""
    declared = capabilities.get("elicitation")
    return revision >= v.V2025_11_25 and isinstance(declared, dict) and "url" in declared


async def by_elicitation(
    call: Call, entry: Entry, arguments: dict[str, Any], question: confirmations.Question
) -> Confirmed:
    """Ask over the session's own channel and wait (holding no thread) for the answer."""
    questions = call.session.questions
    if questions is None or not asks_forms(call.revision, call.capabilities):
        return await by_page(call, entry, arguments, question)
    params = question.elicitation()
    if call.revision < v.V2025_11_25:
        params.pop("mode")
    user = call.session.user
    try:
        answer = await questions.ask(
            call.session.emit, _user_key(user), "elicitation/create", params, float(mcp_settings.CONFIRMATION_SECONDS)
        )
    except Unanswered:
        raise NotConfirmed(NO_ANSWER) from None
    said = confirmations.accepted(answer)
    if said is None:
        raise NotConfirmed(UNREADABLE)
    if not said:
        raise Declined(DECLINED)
    return Confirmed(question.changes.state, ToolCall.Confirmation.ELICITATION, user)


async def by_input_required(
    call: Call, entry: Entry, arguments: dict[str, Any], question: confirmations.Question
) -> Confirmed:
    """Run on an answer whose signed state binds it to this very call; otherwise ask (again)."""
    params = call.request.params
    responses = params.get("inputResponses")
    said = confirmations.accepted(responses.get(INPUT_KEY)) if isinstance(responses, dict) else None
    if said is False:
        raise Declined(DECLINED)
    session = call.session
    binding = call_binding(call, entry, arguments, question.changes.state)
    if said:
        opened = confirmation_state.open_state(params.get("requestState"))
        if (
            opened is not None
            and opened.binding == binding
            and await database_sync_to_async(confirmation_state.spend)(opened.nonce)
        ):
            return Confirmed(question.changes.state, ToolCall.Confirmation.ELICITATION, session.user)
    if not asks_forms(call.revision, call.capabilities):
        return await by_page(call, entry, arguments, question)
    request = {"method": "elicitation/create", "params": question.elicitation()}
    raise InputRequired(
        {
            "resultType": "input_required",
            "inputRequests": {INPUT_KEY: request},
            "requestState": confirmation_state.issue(binding),
        }
    )


async def by_approver(
    call: Call, entry: Entry, arguments: dict[str, Any], question: confirmations.Question
) -> Confirmed:
    """Run once on an approver's yes for this very call; otherwise ask for one and answer at once."""
    if len(json.dumps(arguments, separators=(",", ":"), default=str)) > MAX_APPROVAL_ARGUMENT_BYTES:
        raise NotConfirmed(TOO_LARGE_TO_APPROVE)
    approval, run = await settle(call, entry, arguments, question, Approval.Confirmer.APPROVER)
    if run:
        return Confirmed(question.changes.state, ToolCall.Confirmation.APPROVER, approval.decided_by)
    if approval.status == approval.Status.REJECTED:
        raise Declined(REJECTED)
    raise ApprovalPending(waiting(approval, entry.approvers_name))


async def by_page(call: Call, entry: Entry, arguments: dict[str, Any], question: confirmations.Question) -> Confirmed:
    """For a client that cannot ask its user: refused, or (``CONFIRMATION_FALLBACK = "page"``) the caller
    confirms on the site's confirmation page and the same call, made again, runs once. Nothing waits."""
    user = call.session.user
    if mcp_settings.CONFIRMATION_FALLBACK != "page" or _user_key(user) is None:
        raise NotConfirmed(CANNOT_ASK)
    if len(json.dumps(arguments, separators=(",", ":"), default=str)) > MAX_APPROVAL_ARGUMENT_BYTES:
        raise NotConfirmed(TOO_LARGE_TO_CONFIRM)
    approval, run = await settle(call, entry, arguments, question, Approval.Confirmer.CALLER)
    if run:
        return Confirmed(question.changes.state, ToolCall.Confirmation.PAGE, user)
    if approval.status == approval.Status.REJECTED:
        raise Declined(DECLINED)
    url = absolute(reverse("mcp_tools:confirm", args=[approval.pk]))
    until = approval.expires_at.strftime("%Y-%m-%d %H:%M %Z")
    if asks_urls(call.revision, call.capabilities) and not _opened(call):
        elicitation = {
            "mode": "url",
            "url": url,
            "elicitationId": f"mcp_tools.confirm.{approval.pk}",
            "message": f"{question.message}\n\nOpen the site's page to confirm or decline this call.",
        }
        if call.revision.is_modern:
            # 2026-07-28's URL request carries no id: the retry itself says the page was opened.
            elicitation.pop("elicitationId")
            request = {"method": "elicitation/create", "params": elicitation}
            raise InputRequired({"resultType": "input_required", "inputRequests": {INPUT_KEY: request}})
        raise UrlElicitationRequired(OPEN_PAGE, elicitation)
    raise ApprovalPending(
        f"This call waits for your confirmation: open {url} (signed in as {user.get_username()}) to see what it"
        f" will change and confirm or decline it. Once confirmed, make the same call again with the same"
        f" arguments, before {until}. Nothing was changed."
    )


def _opened(call: Call) -> bool:
    """Whether this 2026-07-28 call comes back from the URL request it was answered with (the client opened the
    page, or said it would): it is then told to come back once the person has decided, rather than asked again."""
    responses = call.request.params.get("inputResponses")
    return call.revision.is_modern and isinstance(responses, dict) and INPUT_KEY in responses


async def settle(
    call: Call, entry: Entry, arguments: dict[str, Any], question: confirmations.Question, confirmer: str
) -> tuple[Approval, bool]:
    """The call's approval by ``confirmer``, and whether it was just spent for these rows (the call runs)."""
    session = call.session
    key = approvals.binding(
        entry.id,
        _user_key(session.user),
        confirmation_state.credential_key(session.token),
        confirmation_state.digest(arguments),
    )
    settled = await database_sync_to_async(approvals.settle)(
        key=key,
        tool_id=entry.id,
        tool_name=entry.name,
        user=session.user,
        group_id=entry.approvers if confirmer == Approval.Confirmer.APPROVER else None,
        arguments=arguments,
        question=question.message,
        state=question.changes.state,
        confirmer=confirmer,
    )
    if settled.approval is None:
        raise NotConfirmed(TOO_MANY_APPROVALS)
    return settled.approval, settled.run


def waiting(approval: Any, group: str) -> str:
    """What the caller is told while an approver has yet to decide: who, where, and what to do then."""
    where = absolute(admin_path(type(approval), approval.pk))
    page = f" at {where}" if where else " in the site's admin"
    until = approval.expires_at.strftime("%Y-%m-%d %H:%M %Z")
    return (
        f"This call waits for an approver: a member of “{group}” must approve it (approval {approval.pk}{page})."
        f" Once approved, make the same call again with the same arguments, before {until}. Nothing was changed."
    )


def call_binding(call: Call, entry: Entry, arguments: dict[str, Any], state: str = "") -> confirmation_state.Binding:
    """What a 2026-07-28 state is for: this tool, caller, credential and arguments, and the rows' ``state``."""
    return confirmation_state.Binding(
        tool=entry.name,
        tool_id=entry.id,
        user=_user_key(call.session.user),
        credential=confirmation_state.credential_key(call.session.token),
        arguments=confirmation_state.digest(arguments),
        state=state,
    )


def _user_key(user: Any) -> Any:
    return user.pk if getattr(user, "is_authenticated", False) else None
