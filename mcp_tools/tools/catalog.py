"""The in-process cache of the tool table, with pre-encoded definitions per revision."""

from __future__ import annotations

import base64
import binascii
import logging
import re
import threading
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import jsonschema
from channels.db import database_sync_to_async

from mcp_tools.exceptions import InvalidParams
from mcp_tools.protocol import shapes, versions
from mcp_tools.protocol.jsonrpc import RawJSON, encode
from mcp_tools.protocol.versions import Revision

logger = logging.getLogger("mcp_tools")


class SchemaCheck:
    """Checks values against one JSON Schema: a fast accept for flat schemas, else jsonschema's first error."""

    def __init__(self, schema: dict[str, Any]) -> None:
        from mcp_tools.tools.schema_check import compile_check

        self.fast = compile_check(schema)
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        self.validator = cls(schema)

    def first_error(self, value: Any) -> Any:
        """None when ``value`` fits; otherwise the first jsonschema ValidationError."""
        if self.fast is not None and isinstance(value, dict) and self.fast(value):
            return None
        return next(iter(self.validator.iter_errors(value)), None)


@dataclass(frozen=True)
class Grants:
    """Who a tool is granted to."""

    everyone: bool = False
    users: frozenset[Any] = frozenset()
    groups: frozenset[int] = frozenset()


@dataclass
class Entry:
    """One enabled tool as the protocol core needs it."""

    id: int
    kind: str
    callable_name: str
    spec: shapes.ToolSpec
    required_capabilities: dict[str, Any] = field(default_factory=dict)
    query: Any = None  # QuerySpec of a model-query tool
    argument_names: frozenset[str] | None = None  # when set, other names are refused with the allowed list
    required_permissions: tuple[str, ...] = ()
    grants: Grants = field(default_factory=Grants)
    rate_limit: str = ""
    timeout_seconds: int | None = None
    _definitions: dict[int, RawJSON] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.spec.name

    def definition_json(self, revision: Revision) -> RawJSON:
        try:
            return self._definitions[revision.position]
        except KeyError:
            encoded = RawJSON(encode(shapes.definition(self.spec, revision)))
            self._definitions[revision.position] = encoded
            return encoded

    @cached_property
    def input_check(self) -> SchemaCheck:
        return SchemaCheck(self.spec.input_schema)

    @cached_property
    def output_check(self) -> SchemaCheck | None:
        return SchemaCheck(self.spec.output_schema) if self.spec.output_schema is not None else None


@dataclass
class Snapshot:
    """An immutable view of the enabled tools, ordered by name, with per-caller views memoized."""

    entries: tuple[Entry, ...]
    by_name: dict[str, Entry]
    generation: int
    rate_overrides: dict[tuple[int, int | None], str] = field(default_factory=dict)
    every_name: frozenset[str] = frozenset()  # enabled or not: a disabled tool's name is no one's to learn
    _named_in: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    _visible: dict[tuple[Any, ...], tuple[Entry, ...]] = field(default_factory=dict, repr=False)
    _pages: dict[tuple[Any, ...], RawJSON] = field(default_factory=dict, repr=False)
    _fingerprints: dict[int, frozenset[tuple[str, str]]] = field(default_factory=dict, repr=False)
    _names: dict[int, frozenset[str]] = field(default_factory=dict, repr=False)

    def visible_to(self, user: Any) -> tuple[Entry, ...]:
        """The entries ``user`` may list and call, computed once per distinct caller."""
        from mcp_tools.access import permissions

        key = permissions.user_key(user)
        found = self._visible.get(key)
        if found is None:
            found = tuple(e for e in self.entries if permissions.may_use(user, e))
            self._visible[key] = found
        return found

    def visible_names(self, user: Any) -> frozenset[str]:
        """The names of the entries ``user`` may call, memoized like :meth:`visible_to`."""
        visible = self.visible_to(user)
        found = self._names.get(id(visible))
        if found is None:
            found = self._names[id(visible)] = frozenset(e.name for e in visible)
        return found

    def fingerprint(self, user: Any) -> frozenset[tuple[str, str]]:
        """What ``user``'s tool list looks like; it differs exactly when their list changed.

        Definitions are compared in full (at the newest revision, which shows every field), so that saving
        a tool without changing what clients see, as the admin does when only grants change, is no change.
        """
        visible = self.visible_to(user)
        found = self._fingerprints.get(id(visible))
        if found is None:
            found = frozenset((e.name, e.definition_json(versions.MODERN[-1])) for e in visible)
            self._fingerprints[id(visible)] = found
        return found

    def names_in(self, text: str) -> frozenset[str]:
        """The tool names ``text`` mentions as whole words (a sentence's full stop does not hide one)."""
        found = self._named_in.get(text)
        if found is None:
            found = frozenset(name for name in self.every_name if _mentions(text, name))
            self._named_in[text] = found
        return found

    def page(self, visible: tuple[Entry, ...], revision: Revision, offset: int, size: int) -> RawJSON:
        """The JSON array of definitions ``visible[offset:offset+size]``, cached per distinct view."""
        key = (id(visible), revision.position, offset, size)
        cached = self._pages.get(key)
        if cached is not None:
            return cached
        body = RawJSON("[" + ",".join(e.definition_json(revision) for e in visible[offset : offset + size]) + "]")
        # Only memoized views live as long as the snapshot, so only their ids are safe keys.
        if any(v is visible for v in self._visible.values()) or visible is self.entries:
            self._pages[key] = body
        return body


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)", text) is not None


def entry_from_row(row: Any, grants: Grants | None = None) -> Entry:
    spec = shapes.ToolSpec(
        name=row.name,
        title=row.title,
        description=row.description,
        input_schema=row.input_schema or {"type": "object"},
        output_schema=row.output_schema,
        annotations=row.annotations,
        icons=tuple(row.icons or ()),
    )
    from mcp_tools.tools.registry import registry

    entry = Entry(
        id=row.pk,
        kind=row.kind,
        callable_name=row.callable_name,
        spec=spec,
        grants=grants if grants is not None else _grants(row),
        rate_limit=row.rate_limit,
        timeout_seconds=row.timeout_seconds,
    )
    registered = registry.get(row.callable_name) if row.kind == "callable" else None
    if registered is not None:
        entry.required_capabilities = dict(registered.requires)
    if row.kind == "model_query":
        _attach_query(entry, row)
    return entry


def _grants(row: Any, users: Any = None, groups: Any = None) -> Grants:
    if row.pk is None:
        return Grants(everyone=row.everyone)
    if users is None:
        users = {g.user_id for g in row.user_grants.all()}
        groups = {g.group_id for g in row.group_grants.all()}
    return Grants(everyone=row.everyone, users=frozenset(users), groups=frozenset(groups or ()))


def _grant_index(model: Any, column: str) -> dict[int, set[Any]]:
    """tool id -> granted ids, from one flat query (prefetching objects costs far more)."""
    index: dict[int, set[Any]] = {}
    for tool_id, granted in model.objects.values_list("tool_id", column):
        index.setdefault(tool_id, set()).add(granted)
    return index


def _attach_query(entry: Entry, row: Any) -> None:
    from mcp_tools.tools.executors.queries.arguments import allowed_names
    from mcp_tools.tools.executors.queries.config import build
    from mcp_tools.tools.executors.queries.fields import FieldPathError
    from mcp_tools.tools.executors.queries.schema import input_schema, output_schema

    config = getattr(row, "query", None)
    if config is None:
        logger.warning("Tool %s is a model query without a configuration", row.name)
        return
    try:
        entry.query = build(config, row.name)
    except FieldPathError as exc:
        logger.warning("Tool %s has a model-query configuration that no longer fits its model: %s", row.name, exc)
        return
    # The schemas come from the configuration, not the stored row, so that an edited or stale row can
    # neither widen what a call may name (enums, row cap, list sizes) nor what a result may carry.
    entry.spec = replace(entry.spec, input_schema=input_schema(entry.query), output_schema=output_schema(entry.query))
    entry.argument_names = allowed_names(entry.query)
    entry.required_permissions = entry.query.permissions()


class Catalog:
    """Loads enabled tools once and serves them until invalidated (by signals or list_changed events)."""

    def __init__(self) -> None:
        self._snapshot: Snapshot | None = None
        self._generation = 0
        self._lock = threading.Lock()
        self._stamp = ""

    def invalidate(self, stamp: str = "") -> None:
        """Drop the snapshot; a repeated ``stamp`` (the same change heard again) is ignored."""
        with self._lock:
            if stamp and stamp == self._stamp:
                return
            self._stamp = stamp
            self._generation += 1
            self._snapshot = None

    def get_sync(self) -> Snapshot:
        snapshot = self._snapshot
        if snapshot is not None:
            return snapshot
        return self._load()

    async def get(self) -> Snapshot:
        snapshot = self._snapshot
        if snapshot is not None:
            return snapshot
        return await database_sync_to_async(self._load)()

    def _load(self) -> Snapshot:
        from mcp_tools.models import GroupGrant, RateLimitOverride, Tool, UserGrant

        generation = self._generation
        users, groups = _grant_index(UserGrant, "user_id"), _grant_index(GroupGrant, "group_id")
        entries = tuple(
            entry_from_row(row, _grants(row, users.get(row.pk, ()), groups.get(row.pk, ())))
            for row in Tool.objects.filter(enabled=True).select_related("query").order_by("name")
        )
        overrides = {(o.group_id, o.tool_id): o.rate for o in RateLimitOverride.objects.all()}
        names = frozenset(Tool.objects.values_list("name", flat=True))
        snapshot = Snapshot(entries, {e.name: e for e in entries}, generation, overrides, names)
        with self._lock:
            if self._generation == generation:
                self._snapshot = snapshot
        return snapshot


catalog = Catalog()

_CURSOR_PREFIX = b"mcp-tools:"


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(_CURSOR_PREFIX + str(offset).encode()).decode()


def decode_cursor(cursor: Any, total: int) -> int:
    """The offset a cursor stands for; -32602 for anything we did not issue."""
    if cursor is None:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii")) if isinstance(cursor, str) else b""
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raw = b""
    digits = raw[len(_CURSOR_PREFIX) :] if raw.startswith(_CURSOR_PREFIX) else b""
    if not digits.isdigit() or len(digits) > 9 or int(digits) > total:
        raise InvalidParams("Invalid cursor", {"reason": "The cursor is not one this server issued."})
    return int(digits)
