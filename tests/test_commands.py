"""The management commands mcp_sync and mcp_token."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from mcp_tools.access.authentication import authenticate
from mcp_tools.models import HINT_FIELDS, AccessToken, Tool, hash_token
from mcp_tools.tools.registry import registry
from mcp_tools.transports.http_request import connection_request

pytestmark = pytest.mark.django_db

KEYS = [registered.key for registered in registry.all()]


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def rows() -> list[tuple[str, str, bool]]:
    return list(Tool.objects.order_by("name").values_list("name", "callable_name", "enabled"))


# mcp_sync ------------------------------------------------------------------------------------------


def test_sync_creates_one_disabled_tool_per_registered_callable():
    out, err = run("mcp_sync")

    assert rows() == [(key, key, False) for key in KEYS]
    assert out.splitlines() == [
        *(f"Created {key} (disabled)" for key in KEYS),
        f"{len(KEYS)} tool(s) created.",
    ]
    assert err == ""


def test_sync_copies_what_the_callable_declares():
    run("mcp_sync")

    tool = Tool.objects.get(name="add")
    add = registry.get("add")
    hints = {attr: getattr(tool, attr) for attr in HINT_FIELDS}
    assert (tool.kind, tool.title, tool.description, tool.input_schema, tool.output_schema) == (
        Tool.Kind.CALLABLE,
        add.title,
        add.description,
        add.input_schema,
        add.output_schema,
    )
    assert hints == {
        "read_only_hint": True,
        "destructive_hint": None,
        "idempotent_hint": None,
        "open_world_hint": None,
    }


def test_sync_with_enable_creates_enabled_tools():
    out, _err = run("mcp_sync", "--enable")

    assert rows() == [(key, key, True) for key in KEYS]
    assert out.splitlines()[0] == f"Created {KEYS[0]} (enabled)"


def test_sync_follows_the_setting_unless_told_otherwise(settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "SYNC_CREATES_ENABLED": True}

    run("mcp_sync")
    Tool.objects.filter(name="add").delete()
    run("mcp_sync", "--disable")

    assert {name: enabled for name, _callable, enabled in rows()} == {key: key != "add" for key in KEYS}


def test_enable_and_disable_exclude_each_other():
    with pytest.raises(CommandError) as caught:
        run("mcp_sync", "--enable", "--disable")

    assert str(caught.value) == "Error: argument --disable: not allowed with argument --enable"


def test_sync_is_idempotent():
    run("mcp_sync")
    before = list(Tool.objects.order_by("name").values())

    out, err = run("mcp_sync")

    assert (out, err) == ("0 tool(s) created.\n", "")
    assert list(Tool.objects.order_by("name").values()) == before


def test_sync_skips_a_name_another_tool_already_uses():
    Tool.objects.create(name="add", callable_name="greet", enabled=True)

    out, err = run("mcp_sync")

    assert err == "Skipped add: a tool of that name runs something else.\n"
    assert out.splitlines()[-1] == f"{len(KEYS) - 2} tool(s) created."
    assert rows() == [
        ("add", "greet", True),
        *((key, key, False) for key in KEYS if key not in ("add", "greet")),
    ]


def test_sync_leaves_callables_that_a_tool_already_runs():
    Tool.objects.create(name="hello", callable_name="greet")

    run("mcp_sync")

    assert Tool.objects.filter(callable_name="greet").count() == 1
    assert not Tool.objects.filter(name="greet").exists()


# mcp_token -----------------------------------------------------------------------------------------


def expiry_said(token: AccessToken, after: str) -> str:
    return f"The token expires at {token.expires_at.isoformat(timespec='seconds')} (in {after}).\n"


def test_token_create_prints_only_a_token_that_authenticates_and_says_its_default_expiry_apart(user):
    before = timezone.now()

    out, err = run("mcp_token", "create", "alice")

    [raw] = out.splitlines()
    token = AccessToken.objects.get()
    assert (out, err) == (f"{raw}\n", expiry_said(token, "90 days"))
    assert raw.startswith(AccessToken.PREFIX)
    assert (token.user, token.name) == (user, "")
    assert before + timedelta(days=90) <= token.expires_at <= timezone.now() + timedelta(days=90)
    handshake = connection_request({"headers": [(b"authorization", f"Bearer {raw}".encode())]})
    assert authenticate(handshake) == (user, token)


def test_token_create_with_days_and_a_name_sets_expiry_and_label(user):
    before = timezone.now()

    _out, err = run("mcp_token", "create", "alice", "--days", "7", "--name", "laptop")

    token = AccessToken.objects.get()
    assert token.name == "laptop"
    assert before + timedelta(days=7) <= token.expires_at <= timezone.now() + timedelta(days=7)
    assert err == expiry_said(token, "7 days")


def test_token_create_never_expires_only_when_told(user):
    out, err = run("mcp_token", "create", "alice", "--never")

    [raw] = out.splitlines()
    token = AccessToken.objects.get()
    assert (token.digest, err, token.expires_at) == (hash_token(raw), "The token never expires.\n", None)


def test_token_create_follows_the_lifetime_setting_and_none_means_never(user, settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TOKEN_LIFETIME_DAYS": 1}
    _out, one_day = run("mcp_token", "create", "alice", "--name", "one")
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "TOKEN_LIFETIME_DAYS": None}
    _out, never = run("mcp_token", "create", "alice", "--name", "none")

    short, forever = AccessToken.objects.get(name="one"), AccessToken.objects.get(name="none")
    assert (one_day, never) == (expiry_said(short, "1 day"), "The token never expires.\n")
    assert short.expires_at <= timezone.now() + timedelta(days=1)
    assert forever.expires_at is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("create", "bob"), "No user 'bob'."),
        (("create", "alice", "--days", "0"), "--days must be at least 1 (--never for a token that never expires)."),
        (("create", "alice", "--days", "-3"), "--days must be at least 1 (--never for a token that never expires)."),
        (("create", "alice", "--days", "3", "--never"), "Error: argument --never: not allowed with argument --days"),
        (("list", "bob"), "No user 'bob'."),
        (("revoke", "mcp_abc"), "Give at least the first 8 characters of the token."),
    ],
)
def test_token_commands_refuse_bad_input(user, args, message):
    with pytest.raises(CommandError) as caught:
        run("mcp_token", *args)

    assert str(caught.value) == message
    assert not AccessToken.objects.exists()


def test_token_list_shows_hints_never_secrets(user):
    _old, old_raw = AccessToken.objects.issue(user, name="ci", days=1)
    _new, new_raw = AccessToken.objects.issue(user, days=None)
    AccessToken.objects.filter(name="ci").update(created_at=timezone.now() - timedelta(hours=1))
    old, new = AccessToken.objects.get(name="ci"), AccessToken.objects.get(name="")

    out, _err = run("mcp_token", "list", "alice")

    assert out.splitlines() == [
        f"{new.hint}…  name=-  expires=never  last_used=never",
        f"{old.hint}…  name=ci  expires={old.expires_at.isoformat()}  last_used=never",
    ]
    assert old_raw not in out and new_raw not in out


def test_token_revoke_deletes_the_token_it_names(user):
    kept, _ = AccessToken.objects.issue(user, name="kept")
    _revoked, raw = AccessToken.objects.issue(user, name="revoked")

    out, _err = run("mcp_token", "revoke", raw)

    assert out == "1 token(s) revoked.\n"
    assert list(AccessToken.objects.all()) == [kept]
