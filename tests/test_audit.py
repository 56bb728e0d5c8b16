"""The audit trail: one ToolCall row per tools/call and outcome, redaction, batching, pruning, and its admin."""

from __future__ import annotations

import asyncio
import hashlib
import io
import re
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.management import CommandError, call_command
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from mcp_tools.access import audit as audit_module
from mcp_tools.access import audit_arguments
from mcp_tools.access.audit import audit_log
from mcp_tools.access.audit_arguments import MASK, SecretNames, compact
from mcp_tools.access.sensitive import SECRET_PARTS, SECRET_WORDS, is_secret_name
from mcp_tools.conf import DEFAULTS
from mcp_tools.exceptions import INVALID_PARAMS
from mcp_tools.models import AccessToken, Tool, ToolCall
from mcp_tools.protocol.jsonrpc import encode
from mcp_tools.server.calls import GENERIC_FAILURE
from tests.db import db_call, lost_connection
from tests.live.asgi_http import HttpClient
from tests.messages import error, rpc, text_result
from tests.testapp.mcp_tools import gate
from tests.websocket import TIMEOUT, WSClient, ws_headers
from tests.wire import connected, start_slow_count

FIELDS = (
    "user_id",
    "username",
    "token_id",
    "transport",
    "session_id",
    "tool_name",
    "arguments",
    "outcome",
    "message",
    "result_bytes",
)
CHANGELIST = "/admin/mcp_tools/toolcall/"
LOCMEM = "django.core.cache.backends.locmem.LocMemCache"


def row(user: Any, tool_name: str, outcome: str, **fields: Any) -> dict[str, Any]:
    """An expected audit row of a call on a ``Wire`` session (no token, no session id)."""
    expected = {
        "user_id": user.pk,
        "username": user.get_username(),
        "token_id": None,
        "transport": "test",
        "session_id": "",
        "tool_name": tool_name,
        "arguments": {},
        "outcome": outcome,
        "message": "",
        "result_bytes": 0,
    }
    return expected | fields


def digest(value: Any) -> dict[str, Any]:
    """The marker of a value the audit trail cut: the SHA-256 and size of its compact JSON."""
    text = compact(value)
    return {"_truncated": True, "sha256": hashlib.sha256(text.encode()).hexdigest(), "bytes": len(text)}


def rows() -> list[dict[str, Any]]:
    return list(ToolCall.objects.order_by("pk").values(*FIELDS))


def durations() -> list[float]:
    return list(ToolCall.objects.order_by("pk").values_list("duration_ms", flat=True))


# One row per call and outcome -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
class TestOutcomes:
    async def test_a_successful_call_is_recorded_as_ok_with_its_result_size(self, tools, user):
        wire = await connected(user)

        reply = await wire.call("add", {"a": 1, "b": 2})

        assert await db_call(rows) == [
            row(user, "add", "ok", arguments={"a": 1, "b": 2}, result_bytes=len(encode(reply["result"])))
        ]
        [duration] = await db_call(durations)
        assert duration > 0

    async def test_a_tool_error_is_recorded_as_error_with_its_message(self, tools, user):
        wire = await connected(user)

        reply = await wire.call("fail_politely", {"reason": "closed"})

        assert reply["result"] == text_result("Refused: closed", is_error=True)
        assert await db_call(rows) == [
            row(
                user,
                "fail_politely",
                "error",
                arguments={"reason": "closed"},
                message="Refused: closed",
                result_bytes=len(encode(reply["result"])),
            )
        ]

    @pytest.mark.parametrize("version", [1, "2024-10-07"])
    async def test_a_draft_clients_failed_call_is_recorded_with_the_tools_message(self, tools, user, version):
        wire = await connected(user, version)

        reply = await wire.call("fail_politely", {"reason": "closed"})

        assert reply == error(2, INVALID_PARAMS, "Tool execution failed", {"reason": "Refused: closed"})
        assert [(r["outcome"], r["message"]) for r in await db_call(rows)] == [("error", "Refused: closed")]

    async def test_an_unexpected_exception_is_recorded_as_error_without_its_text(self, tools, user):
        wire = await connected(user)

        reply = await wire.call("crash")

        assert await db_call(rows) == [
            row(user, "crash", "error", message=GENERIC_FAILURE, result_bytes=len(encode(reply["result"])))
        ]

    async def test_an_unknown_tool_is_recorded_as_denied(self, tools, user):
        wire = await connected(user)

        reply = await wire.call("no_such_tool", {"x": 1})

        assert reply == error(2, INVALID_PARAMS, "Unknown tool: no_such_tool", {"reason": "Unknown tool: no_such_tool"})
        assert await db_call(rows) == [
            row(user, "no_such_tool", "denied", arguments={"x": 1}, message="Unknown tool: no_such_tool")
        ]

    async def test_a_tool_not_granted_to_the_caller_is_recorded_as_denied_like_an_unknown_one(self, tools, user):
        await db_call(revoke_everyone, "whoami")
        wire = await connected(user)

        reply = await wire.call("whoami")

        assert reply == error(2, INVALID_PARAMS, "Unknown tool: whoami", {"reason": "Unknown tool: whoami"})
        assert await db_call(rows) == [row(user, "whoami", "denied", message="Unknown tool: whoami")]

    async def test_a_rate_limited_call_is_recorded_as_rate_limited(self, tools, user, settings):
        settings.CACHES = {"default": {"BACKEND": LOCMEM, "LOCATION": f"audit-{uuid.uuid4().hex}"}}
        # A day-long window: the two calls cannot fall into two windows.
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DEFAULT_RATE": "1/d"}
        wire = await connected(user)

        await wire.call("add", {"a": 1, "b": 2})
        refused = await wire.call("add", {"a": 1, "b": 2})

        text = refused["result"]["content"][0]["text"]
        assert text.startswith("Rate limit 1/d exceeded: retry after ")
        assert (await db_call(rows))[1] == row(
            user,
            "add",
            "rate_limited",
            arguments={"a": 1, "b": 2},
            message=text,
            result_bytes=len(encode(refused["result"])),
        )

    @pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
    async def test_invalid_arguments_are_recorded_as_invalid_in_band_or_not(self, tools, user, version):
        wire = await connected(user, version)

        await wire.call("add", {"a": "x", "b": 1})

        assert await db_call(rows) == [
            row(user, "add", "invalid", arguments={"a": "x", "b": 1}, message="a: 'x' is not of type 'integer'")
        ]

    async def test_a_call_that_times_out_is_recorded_as_timeout(self, tools, user):
        gate.reset()
        await db_call(set_timeout, "slow_count", 1)
        wire = await connected(user)

        reply = await wire.call("slow_count", {"steps": 1})

        message = "The tool did not finish within 1 s."
        assert reply["result"] == text_result(message, is_error=True)
        assert await db_call(rows) == [
            row(
                user,
                "slow_count",
                "timeout",
                arguments={"steps": 1},
                message=message,
                result_bytes=len(encode(reply["result"])),
            )
        ]
        [duration] = await db_call(durations)
        assert duration >= 1000

    async def test_a_call_the_client_cancels_is_recorded_as_cancelled(self, tools, user):
        gate.reset()
        wire = await connected(user)
        task = await start_slow_count(wire, "slow")

        await wire.notify("notifications/cancelled", {"requestId": "slow", "reason": "changed my mind"})
        await asyncio.wait_for(asyncio.wait({task}), TIMEOUT)

        assert await db_call(rows) == [
            row(user, "slow_count", "cancelled", arguments={"steps": 2}, message="cancelled by the client")
        ]

    async def test_a_call_cut_off_by_a_closed_connection_is_recorded_as_cancelled(self, tools, user):
        gate.reset()
        wire = await connected(user)
        task = await start_slow_count(wire, 3)

        wire.session.close()
        await asyncio.wait_for(asyncio.wait({task}), TIMEOUT)

        assert [r["outcome"] for r in await db_call(rows)] == ["cancelled"]

    async def test_requests_other_than_tools_call_write_no_row(self, tools, user):
        wire = await connected(user)

        await wire.request("tools/list")
        await wire.request("ping")

        assert await db_call(rows) == []

    async def test_audit_off_writes_nothing_and_calls_still_work(self, tools, user, settings):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT": False}
        wire = await connected(user)

        reply = await wire.call("add", {"a": 1, "b": 2})
        await wire.call("nope")

        assert reply["result"]["structuredContent"] == {"result": 3}
        assert await db_call(rows) == []


def revoke_everyone(name: str) -> None:
    tool = Tool.objects.get(name=name)
    tool.everyone = False
    tool.save()


def set_timeout(name: str, seconds: int) -> None:
    tool = Tool.objects.get(name=name)
    tool.timeout_seconds = seconds
    tool.save()


async def open_ws(ws_connect: Any, token: str) -> WSClient:
    communicator, accepted, _ = await ws_connect(ws_headers(token))
    assert accepted
    client = WSClient(communicator)
    await client.initialize()
    return client


# Who, how and where ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
class TestCaller:
    async def test_an_http_call_records_the_user_token_transport_and_session(self, tools, user, token):
        client = HttpClient(token)
        await client.initialize("2025-11-25")

        reply = await client.send(rpc(1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}}))

        token_id = await db_call(lambda: AccessToken.objects.get().pk)
        result = reply.json()["result"]
        assert await db_call(rows) == [
            row(
                user,
                "add",
                "ok",
                token_id=token_id,
                transport="http",
                session_id=client.session_id,
                arguments={"a": 2, "b": 2},
                result_bytes=len(encode(result)),
            )
        ]

    async def test_a_websocket_call_records_the_token_and_transport(self, ws, user):
        await ws.initialize()

        await ws.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})

        token_id = await db_call(lambda: AccessToken.objects.get().pk)
        [recorded] = await db_call(rows)
        assert (recorded["token_id"], recorded["transport"], recorded["user_id"]) == (token_id, "websocket", user.pk)

    async def test_an_anonymous_call_records_no_user(self, tools, settings):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "ALLOW_ANONYMOUS": True}
        wire = await connected(AnonymousUser())

        await wire.call("add", {"a": 1, "b": 1})

        [recorded] = await db_call(rows)
        assert (recorded["user_id"], recorded["username"], recorded["outcome"]) == (None, "", "ok")

    async def test_calls_of_a_revoked_tokens_open_session_are_still_recorded(self, ws_connect, tools, user, token):
        client = await open_ws(ws_connect, token)
        # Deleted behind Django's back, so that the open session is not told its token was revoked and
        # its next call is recorded against a token that no longer exists.
        await db_call(delete_tokens_silently)

        await client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})

        [recorded] = await db_call(rows)
        assert (recorded["user_id"], recorded["username"], recorded["token_id"]) == (user.pk, "alice", None)


# What is stored of the arguments -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
class TestArguments:
    async def test_secret_keys_are_masked_at_any_depth_and_in_any_case(self, tools, user):
        wire = await connected(user)
        arguments = {
            "a": 1,
            "password": "hunter2",
            "nested": {"Token": "t0k", "list": [{"API_KEY": "k", "keep": "visible"}], "secret": {"deep": 1}},
            "Authorization": "Bearer x",
        }

        await wire.call("add", arguments)

        [recorded] = await db_call(rows)
        assert recorded["arguments"] == {
            "a": 1,
            "password": MASK,
            "nested": {"Token": MASK, "list": [{"API_KEY": MASK, "keep": "visible"}], "secret": MASK},
            "Authorization": MASK,
        }

    async def test_keys_are_masked_by_the_secret_name_rule_in_any_spelling(self, tools, user):
        wire = await connected(user)
        arguments = {
            "apiKey": "k",
            "client-secret": "s",
            "refreshToken": "t",
            "X-Api-Key": "x",
            "otp": "123456",
            "sort_key": "name",
            "keyboard": "qwerty",
            "cookie": "sessionid=1",
            "nested": [{"privateKey": "p", "monkey": "visible"}],
        }

        await wire.call("add", arguments)

        [recorded] = await db_call(rows)
        assert recorded["arguments"] == {
            "apiKey": MASK,
            "client-secret": MASK,
            "refreshToken": MASK,
            "X-Api-Key": MASK,
            "otp": MASK,
            "sort_key": MASK,
            "keyboard": "qwerty",
            "cookie": MASK,
            "nested": [{"privateKey": MASK, "monkey": "visible"}],
        }

    async def test_audit_redact_adds_names_and_the_default_entries_still_apply(self, tools, user, settings):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_REDACT": ["customer_ref"]}
        wire = await connected(user)

        await wire.call(
            "add", {"a": 1, "customerRef": "c1", "old-customer-ref": "c0", "password": "p", "Authorization": "Bearer x"}
        )

        [recorded] = await db_call(rows)
        assert recorded["arguments"] == {
            "a": 1,
            "customerRef": MASK,
            "old-customer-ref": MASK,
            "password": MASK,
            "Authorization": MASK,
        }

    async def test_arguments_that_are_not_an_object_are_kept_under_one_key(self, tools, user):
        wire = await connected(user)

        await wire.call("add", [1, 2])

        [recorded] = await db_call(rows)
        assert (recorded["arguments"], recorded["outcome"]) == ({"_": [1, 2]}, "invalid")

    async def test_huge_arguments_keep_a_digest_of_the_whole_and_of_each_value_cut(self, tools, user):
        items = [f"tag-{i}" for i in range(3000)]
        wire = await connected(user)

        reply = await wire.call("tags", {"items": items})

        [recorded] = await db_call(rows)
        assert reply["result"]["isError"] is False
        assert recorded["arguments"] == {
            **digest({"items": items}),
            "keys": 1,
            "arguments": {"items": {"_truncated": True, "start": compact(items)[:64], **digest(items)}},
        }

    async def test_padding_one_argument_never_hides_another(self, tools, user):
        arguments = {"pad": "x" * 20_000, "reason": "DROP TABLE orders", "password": "hunter2"}
        wire = await connected(user)

        await wire.call("fail_politely", arguments)

        [recorded] = await db_call(rows)
        masked = {**arguments, "password": MASK}
        assert recorded["arguments"] == {
            **digest(masked),
            "keys": 3,
            "arguments": {
                "reason": "DROP TABLE orders",
                "pad": {"_truncated": True, "start": "x" * 64, **digest("x" * 20_000)},
                "password": MASK,
            },
        }

    async def test_thousands_of_keys_keep_the_tools_own_arguments_within_the_size_cap(self, tools, user):
        arguments = {**{str(i): 0 for i in range(70_000)}, "reason": "DROP TABLE orders"}
        wire = await connected(user)

        reply = await wire.call("fail_politely", arguments)

        [recorded] = await db_call(rows)
        stored = recorded["arguments"]
        assert reply["result"]["isError"] is True
        assert len(compact(stored)) <= DEFAULTS["AUDIT_MAX_ARGUMENT_BYTES"]
        assert (stored["sha256"], stored["bytes"], stored["keys"]) == (
            digest(arguments)["sha256"],
            len(compact(arguments)),
            70_001,
        )
        assert stored["arguments"]["reason"] == "DROP TABLE orders"
        assert 100 < len(stored["arguments"]) < 2000

    async def test_audit_max_argument_bytes_sets_the_cap(self, tools, user, settings):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_MAX_ARGUMENT_BYTES": 1000}
        wire = await connected(user)
        fits = {"items": ["a" * 40] * 20}
        cut = {"items": ["a" * 40] * 30}

        await wire.call("tags", fits)
        await wire.call("tags", cut)

        kept, truncated = [r["arguments"] for r in await db_call(rows)]
        assert len(compact(fits)) <= 1000 < len(compact(cut))
        assert kept == fits
        assert (truncated["_truncated"], truncated["bytes"]) == (True, len(compact(cut)))
        assert len(compact(truncated)) <= 1000

    async def test_arguments_too_large_to_keep_whole_are_cut_off_the_event_loop(self, tools, user, monkeypatch):
        threads: list[int] = []
        cut = audit_arguments.truncated

        def noted(*args: Any) -> Any:
            threads.append(threading.get_ident())
            return cut(*args)

        monkeypatch.setattr(audit_arguments, "truncated", noted)
        wire = await connected(user)

        await wire.call("tags", {"items": ["a" * 40] * 1000})
        await wire.call("tags", {"items": ["a" * 40] * 10})

        assert len(threads) == 1
        assert threads[0] != threading.get_ident()

    @pytest.mark.parametrize(
        ("name", "arguments", "stored_name", "stored_arguments"),
        [
            ("\ud800nope", {}, "\ufffdnope", {}),
            ("nul\x00", {"k\x00": "v\x00"}, "nul\ufffd", {"k\ufffd": "v\ufffd"}),
            ("add", {"a": "\udfff", "b": ["\x00"]}, "add", {"a": "\ufffd", "b": ["\ufffd"]}),
        ],
        ids=["lone-surrogate-in-name", "nul-in-name-and-keys", "in-nested-values"],
    )
    async def test_text_no_database_can_hold_is_stored_replaced_and_the_call_answered_as_usual(
        self, tools, user, name, arguments, stored_name, stored_arguments
    ):
        wire = await connected(user)

        reply = await wire.call(name, arguments)

        [recorded] = await db_call(rows)
        assert (recorded["tool_name"], recorded["arguments"]) == (stored_name, stored_arguments)
        assert "\x00" not in recorded["message"] and "\ud800" not in recorded["message"]
        if name != "add":
            assert reply == error(2, INVALID_PARAMS, f"Unknown tool: {name}", {"reason": f"Unknown tool: {name}"})
        else:
            assert reply["result"]["isError"] is True


# Batching ----------------------------------------------------------------------------------------


def audit_row(tool_name: str, **fields: Any) -> dict[str, Any]:
    return {"tool_name": tool_name, "transport": "test", "outcome": "ok", **fields}


@pytest.fixture
def inserts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every batch the audit log writes from now on."""
    sizes: list[int] = []
    original = audit_module._insert

    def insert(rows: list[audit_module.Row]) -> None:
        sizes.append(len(rows))
        original(rows)

    monkeypatch.setattr(audit_module, "_insert", insert)
    return sizes


@pytest.mark.django_db(transaction=True)
class TestBatching:
    async def test_a_calls_row_is_committed_before_the_call_is_answered(self, tools, user, inserts):
        wire = await connected(user)

        await wire.call("add", {"a": 1, "b": 2})
        committed = await db_call(rows)

        assert ([r["outcome"] for r in committed], inserts, audit_log().pending) == (["ok"], [1], [])

    async def test_rows_recorded_while_a_write_is_due_go_in_one_insert_of_at_most_the_batch_size(
        self, settings, inserts
    ):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_BATCH_SIZE": 2}

        await asyncio.gather(*(audit_log().record(**audit_row(f"t{n}")) for n in range(5)))
        committed = await db_call(rows)

        assert [r["tool_name"] for r in committed] == [f"t{n}" for n in range(5)]
        assert inserts == [2, 2, 1]

    async def test_a_row_is_written_though_its_caller_stops_waiting(self, inserts):
        waiting = asyncio.ensure_future(audit_log().record(**audit_row("abandoned")))
        # Runs once the task has recorded its row and waits for the write, before the write starts.
        asyncio.get_running_loop().call_soon(waiting.cancel)
        await audit_log().record(**audit_row("kept"))

        assert [r["tool_name"] for r in await db_call(rows)] == ["kept", "abandoned"]
        assert waiting.cancelled()

    async def test_with_a_flush_delay_rows_wait_off_the_response_path_until_flushed(self, tools, user, settings):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_SECONDS": 3600}
        wire = await connected(user)

        await wire.call("add", {"a": 1, "b": 2})
        before = await db_call(rows)
        await audit_log().flush()

        assert (before, [r["outcome"] for r in await db_call(rows)]) == ([], ["ok"])

    async def test_with_a_flush_delay_rows_are_written_once_it_passes(self, tools, user, settings, monkeypatch):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_SECONDS": 0.05}
        written = threading.Event()
        original = audit_module._insert

        def insert(batch: list[audit_module.Row]) -> None:
            original(batch)
            written.set()

        monkeypatch.setattr(audit_module, "_insert", insert)
        wire = await connected(user)

        await wire.call("add", {"a": 1, "b": 2})

        assert await asyncio.to_thread(written.wait, TIMEOUT)
        assert [r["outcome"] for r in await db_call(rows)] == ["ok"]

    async def test_a_row_whose_token_was_deleted_does_not_cost_the_rest_of_its_batch(
        self, user, token, django_user_model
    ):
        bob = await db_call(django_user_model.objects.create_user, "bob", password="pw")
        [token_id] = await db_call(lambda: list(AccessToken.objects.values_list("pk", flat=True)))
        await db_call(delete_tokens_silently)

        await asyncio.gather(
            audit_log().record(**audit_row("add", user_id=bob.pk, username="bob")),
            audit_log().record(**audit_row("add", user_id=user.pk, username="alice", token_id=token_id)),
        )

        recorded = await db_call(rows)
        assert [(r["username"], r["token_id"], r["outcome"]) for r in recorded] == [
            ("bob", None, "ok"),
            ("alice", None, "ok"),
        ]


def delete_tokens_silently() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {connection.ops.quote_name(AccessToken._meta.db_table)}")


# Pruning -----------------------------------------------------------------------------------------


def make_rows(*ages_in_days: int) -> None:
    now = timezone.now()
    ToolCall.objects.bulk_create(
        ToolCall(tool_name=f"t{age}", transport="test", outcome="ok", created_at=now - timedelta(days=age, minutes=1))
        for age in ages_in_days
    )


def prune(*args: str) -> str:
    out = io.StringIO()
    call_command("mcp_prune_audit", *args, stdout=out)
    return out.getvalue()


def remaining() -> list[str]:
    return sorted(ToolCall.objects.values_list("tool_name", flat=True))


@pytest.mark.django_db
class TestPrune:
    def test_rows_older_than_the_default_90_days_are_deleted(self):
        make_rows(0, 89, 91, 400)

        assert prune() == "2 audit row(s) older than 90 day(s) deleted.\n"
        assert remaining() == ["t0", "t89"]

    def test_days_overrides_the_setting(self, settings):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_RETENTION_DAYS": 365}
        make_rows(0, 3, 10, 100)

        assert prune("--days", "5") == "2 audit row(s) older than 5 day(s) deleted.\n"
        assert remaining() == ["t0", "t3"]

    def test_audit_retention_days_sets_the_period(self, settings):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_RETENTION_DAYS": 7}
        make_rows(0, 6, 8)

        assert prune() == "1 audit row(s) older than 7 day(s) deleted.\n"
        assert remaining() == ["t0", "t6"]

    def test_zero_days_deletes_every_row_made_before_now(self):
        make_rows(0, 1)

        assert prune("--days", "0") == "2 audit row(s) older than 0 day(s) deleted.\n"
        assert remaining() == []

    def test_negative_days_are_refused(self):
        make_rows(100)

        with pytest.raises(CommandError, match=re.escape("--days must be zero or more.")):
            prune("--days", "-1")
        assert remaining() == ["t100"]


# The admin ---------------------------------------------------------------------------------------


@pytest.fixture
def superuser_client(django_user_model: Any) -> Client:
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(admin)
    return client


@pytest.fixture
def audited(user: Any) -> list[ToolCall]:
    now = timezone.now()
    return [
        ToolCall.objects.create(
            user=user,
            username="alice",
            transport="websocket",
            tool_name="add",
            arguments={"a": 1, "password": MASK},
            outcome="ok",
            created_at=now,
        ),
        ToolCall.objects.create(
            username="bob", transport="http", tool_name="crash", outcome="error", created_at=now - timedelta(days=400)
        ),
        ToolCall.objects.create(username="carol", transport="stdio", tool_name="nope", outcome="denied"),
    ]


@pytest.mark.django_db
class TestAdmin:
    def test_the_changelist_offers_filters_search_and_a_date_hierarchy_but_no_add(self, superuser_client, audited):
        response = superuser_client.get(CHANGELIST)

        changelist = response.context["cl"]
        assert response.status_code == 200
        assert [spec.title for spec in changelist.filter_specs] == ["outcome", "transport", "time", "tool"]
        assert changelist.search_fields == ("tool_name", "username", "client", "session_id", "message")
        assert changelist.date_hierarchy == "created_at"
        assert response.context["has_add_permission"] is False
        assert f'href="{CHANGELIST}add/"' not in response.content.decode()
        assert changelist.result_count == 3

    @pytest.mark.parametrize(
        ("query", "usernames"),
        [
            ("?outcome=denied", ["carol"]),
            ("?transport__exact=http", ["bob"]),
            ("?q=alice", ["alice"]),
            ("?q=crash", ["bob"]),
            (f"?created_at__year={timezone.now().year}", ["alice", "carol"]),
        ],
        ids=["filter-outcome", "filter-transport", "search-user", "search-tool", "date-hierarchy"],
    )
    def test_filters_search_and_dates_narrow_the_list(self, superuser_client, audited, query, usernames):
        response = superuser_client.get(CHANGELIST + query)

        assert response.status_code == 200
        assert sorted(r.username for r in response.context["cl"].result_list) == usernames

    def test_a_row_opens_read_only_with_its_arguments_shown(self, superuser_client, audited):
        response = superuser_client.get(f"{CHANGELIST}{audited[0].pk}/change/")

        page = response.content.decode()
        assert response.status_code == 200
        assert response.context["has_change_permission"] is False
        assert 'name="_save"' not in page
        assert "<pre>{\n  &quot;a&quot;: 1,\n  &quot;password&quot;: &quot;***&quot;\n}</pre>" in page

    def test_adding_or_changing_a_row_is_forbidden(self, superuser_client, audited):
        added = superuser_client.post(f"{CHANGELIST}add/", {"tool_name": "forged", "outcome": "ok"})
        changed = superuser_client.post(f"{CHANGELIST}{audited[0].pk}/change/", {"outcome": "denied"})

        assert (added.status_code, changed.status_code) == (403, 403)
        assert ToolCall.objects.get(pk=audited[0].pk).outcome == "ok"
        assert not ToolCall.objects.filter(tool_name="forged").exists()


# The audit trail's quick secret-name check -------------------------------------------------------

NAME_PIECES = [*SECRET_WORDS, *SECRET_PARTS, "pass", "Word", "api", "KEY", "customer", "ref", "x", "board", "é"]
SEPARATOR_PIECES = ["", "_", "-", ".", " ", "__", "9"]


@given(
    pieces=st.lists(st.tuples(st.sampled_from(NAME_PIECES), st.sampled_from(SEPARATOR_PIECES)), max_size=5),
    extra=st.lists(st.sampled_from(["customer_ref", "authorization", "cookie", "refCode", "x-y"]), max_size=3),
)
@example(pieces=[("pass", "_"), ("Word", "")], extra=[])
@example(pieces=[("x", "."), ("customer", "-"), ("ref", "")], extra=["customer_ref"])
@hypothesis_settings(max_examples=500, deadline=None, database=None)
def test_the_quick_secret_check_agrees_with_the_shared_rule(pieces, extra):
    name = "".join(word + separator for word, separator in pieces)

    assert SecretNames(extra)(name) is is_secret_name(name, extra)


@pytest.fixture
def connection_lost_once(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The first audit write meets a connection the database ended since the last one; the sizes tried."""
    tried: list[int] = []
    original = audit_module._execute_many

    def execute_many(rows: list[audit_module.Row]) -> None:
        tried.append(len(rows))
        if len(tried) == 1:
            raise lost_connection()
        original(rows)

    monkeypatch.setattr(audit_module, "_execute_many", execute_many)
    return tried


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("flush_seconds", [0, 3600])
async def test_rows_whose_write_lost_its_connection_are_written_on_a_fresh_one(
    settings, connection_lost_once, flush_seconds
):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_SECONDS": flush_seconds}

    await asyncio.gather(*(audit_log().record(**audit_row(f"t{n}")) for n in range(3)))
    await audit_log().flush()

    assert [r["tool_name"] for r in await db_call(rows)] == ["t0", "t1", "t2"]
    assert connection_lost_once[1] == connection_lost_once[0]  # the failed batch, tried again whole


def insert_statements(captured: list[dict[str, str]]) -> list[str]:
    return [query["sql"] for query in captured if query["sql"].startswith("INSERT")]


@pytest.mark.django_db(transaction=True)
def test_a_batch_goes_in_as_few_statements_as_the_database_takes():
    connection = connections["default"]
    row = audit_module.as_values({"username": "b", "transport": "websocket", "tool_name": "add", "outcome": "ok"})
    per_statement = connection.ops.bulk_batch_size(audit_module._fields(), [row] * 150)

    with CaptureQueriesContext(connection) as queries:
        audit_module._insert([row] * 150)

    # One statement on PostgreSQL; on SQLite as many rows a statement as its 999 parameters hold.
    assert len(insert_statements(queries.captured_queries)) == -(-150 // per_statement)
    assert ToolCall.objects.filter(username="b").count() == 150


@pytest.mark.django_db(transaction=True)
def test_a_batch_of_several_statements_is_written_whole_or_not_at_all():
    # The last statement is refused (its last row names a user deleted since its call): the retry without the
    # link writes the batch again, which must not find the first statements already committed.
    good = {"username": "w", "transport": "websocket", "tool_name": "add", "outcome": "ok"}
    rows = [audit_module.as_values(good)] * 149 + [audit_module.as_values({**good, "user_id": 987_654})]

    audit_module._insert(rows)

    assert ToolCall.objects.filter(username="w").count() == 150
    assert ToolCall.objects.filter(username="w", user_id__isnull=False).count() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("count", [1, 3, 150])
def test_rows_naming_a_user_deleted_since_their_call_are_kept_without_the_link(count):
    row = {
        "created_at": timezone.now(),
        "user_id": 987_654,  # no such user: deleted while the call ran
        "username": "gone",
        "transport": "websocket",
        "tool_name": "add",
        "arguments": '{"a":1}',
        "outcome": "ok",
    }

    audit_module._insert([audit_module.as_values(row) for _ in range(count)])

    kept = list(ToolCall.objects.filter(username="gone").values_list("user_id", flat=True))
    assert kept == [None] * count


@pytest.mark.django_db(transaction=True)
def test_the_writer_lets_its_connection_go_at_most_once_a_second_and_after_a_failed_write(monkeypatch):
    # Each check runs a query under CONN_HEALTH_CHECKS: once per row, a lone caller's every call paid for one.
    connection = connections["default"]
    checks: list[float] = []
    real = connection.close_if_unusable_or_obsolete

    def check() -> None:
        checks.append(time.monotonic())
        real()

    monkeypatch.setattr(connection, "close_if_unusable_or_obsolete", check)
    monkeypatch.setattr(audit_module, "_checked", threading.local())
    row = audit_module.as_values({"username": "w", "transport": "websocket", "tool_name": "add", "outcome": "ok"})

    for _ in range(5):
        audit_module._insert([row])
    assert len(checks) == 1

    audit_module._checked.default = time.monotonic() - audit_module.CONNECTION_CHECK_SECONDS
    audit_module._insert([row])
    assert len(checks) == 2

    def fail(rows: Any) -> None:
        raise RuntimeError("the write failed")

    monkeypatch.setattr(audit_module, "_insert_on", fail)
    with pytest.raises(RuntimeError):
        audit_module._insert([row])
    assert len(checks) == 3
    assert ToolCall.objects.filter(username="w").count() == 6
