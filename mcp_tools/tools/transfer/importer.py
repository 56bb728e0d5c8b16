"""Import a document: the diff against this site's tools, then every change in one transaction.

Every row is written through ``full_clean()`` and ``save()``, so the models' ``checking`` signal refuses what
may not run or be exposed (unknown callables and API actions, excluded models, secret fields) and the change
signals announce the result. A dry run writes the same rows and rolls them back, so it reports what the
import would refuse; an error anywhere rolls the whole import back.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import DatabaseError, models, transaction

from mcp_tools.history import recording
from mcp_tools.models import (
    GroupGrant,
    ModelQuery,
    RateLimitOverride,
    SearchSource,
    Tool,
    ToolChange,
    UserGrant,
    default_input_schema,
)
from mcp_tools.tools.transfer.document import (
    GENERATED,
    HINTS,
    MAX_ERRORS,
    QUERY_KEYS,
    SOURCE_KEYS,
    Document,
    clip,
)
from mcp_tools.tools.transfer.export import ACCESS_FIELDS, PLAIN_FIELDS, tool_entry, tools_queryset

ADDED, CHANGED, UNCHANGED = "added", "changed", "unchanged"
EVERYONE = "every authenticated user"
TOOL_FIELDS = (*PLAIN_FIELDS, "input_schema", "output_schema", *HINTS, *ACCESS_FIELDS)


@dataclass
class Change:
    """One field of a tool (``query.model``, ``sources[app.Model].title_field``, ``rate_limits[group]``)."""

    field: str
    old: Any
    new: Any


@dataclass
class ToolDiff:
    name: str
    status: str
    kind: str = ""
    changes: list[Change] = field(default_factory=list)
    granted: list[str] = field(default_factory=list)
    revoked: list[str] = field(default_factory=list)
    settings: list[Change] = field(default_factory=list)  # an added tool's fields that are set


@dataclass
class Plan:
    """What the import changes (or would), and why it cannot when ``errors`` is not empty."""

    tools: list[ToolDiff] = field(default_factory=list)
    site_only: list[str] = field(default_factory=list)
    rate_limits: list[Change] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    applied: bool = False
    stale: bool = False  # the site changed since the plan it was to follow was reviewed
    history: int | None = None  # the latest recorded tool change when the plan was made
    unshown: int = 0  # problems beyond MAX_ERRORS

    def refuse(self, text: str) -> None:
        self._note(self.errors, text)

    def warn(self, text: str) -> None:
        self._note(self.warnings, text)

    def _note(self, notes: list[str], text: str) -> None:
        if len(notes) < MAX_ERRORS:
            notes.append(clip(text))
        else:
            self.unshown += 1

    def by_status(self, status: str) -> list[ToolDiff]:
        return [diff for diff in self.tools if diff.status == status]

    def fingerprint(self) -> str:
        """A digest of what the import would change and of the tools' history so far: what is applied is what was
        reviewed, once (applying it adds to the history)."""
        reviewed = [
            [
                (d.name, d.status, [(c.field, c.old, c.new) for c in d.changes], d.granted, d.revoked)
                for d in self.tools
            ],
            [(c.field, c.old, c.new) for c in self.rate_limits],
            self.site_only,
            self.history,
        ]
        text = json.dumps(reviewed, sort_keys=True, default=str, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def has_changes(self) -> bool:
        return bool(self.rate_limits or self.pruned or any(diff.status != UNCHANGED for diff in self.tools))


class Names:
    """The users and groups the document names that exist here; the others are errors or, when skipped, warnings."""

    def __init__(self, document: Document, plan: Plan, *, skip_missing: bool) -> None:
        user_model = get_user_model()
        self.username = user_model.USERNAME_FIELD
        usernames = {name for tool in document.tools for name in tool["users"]}
        groupnames = {name for tool in document.tools for name in tool["groups"]}
        groupnames |= {rate["group"] for tool in document.tools for rate in tool["rate_limits"]}
        groupnames |= {rate["group"] for rate in document.rate_limits}
        groupnames |= {tool["approvers"] for tool in document.tools if tool["approvers"]}
        manager = user_model._default_manager
        found = manager.filter(**{f"{self.username}__in": usernames})
        self.users: dict[str, Any] = {str(getattr(user, self.username)): user for user in found}
        self.groups = {group.name: group for group in Group.objects.filter(name__in=groupnames)}
        self.skip_missing, self.plan = skip_missing, plan

    def known(self, names: list[str], table: dict[str, Any], what: str, where: str) -> list[str]:
        """``names`` that exist here, after reporting the others."""
        for name in names:
            if name not in table:
                if self.skip_missing:
                    self.plan.warn(f"{where}: no {what} {clip(name, 80)!r} on this site; skipped.")
                else:
                    self.plan.refuse(f"{where}: no {what} {clip(name, 80)!r} on this site.")
        return [name for name in names if name in table]


def run(
    document: Document,
    *,
    user: Any = None,
    apply: bool = False,
    skip_missing: bool = False,
    prune: bool = False,
    reviewed: str | None = None,
) -> Plan:
    """The plan of importing ``document``; applied (committed) only when ``apply`` and nothing is wrong.

    ``user`` is who imports, for the record of the changes. ``prune`` disables the tools only on this site and
    removes group default rates the file does not set; without it they are reported and kept. With
    ``reviewed`` (a plan's fingerprint), nothing is written unless the plan is still the one reviewed.
    """
    plan = Plan()
    with recording(user=user, source="import"), transaction.atomic():
        plan.history = ToolChange.objects.order_by("-pk").values_list("pk", flat=True).first()
        names = Names(document, plan, skip_missing=skip_missing)
        existing = {tool.name: tool for tool in tools_queryset()}
        wanted = [resolved(entry, names) for entry in document.tools]
        for entry in wanted:
            plan.tools.append(diff(existing.get(entry["name"]), entry))
        in_file = {entry["name"] for entry in wanted}
        plan.site_only = sorted(name for name in existing if name not in in_file)
        defaults = resolved_defaults(document, names)
        current_defaults = {
            rate.group.name: rate
            for rate in RateLimitOverride.objects.filter(tool__isnull=True).select_related("group")
        }
        plan.rate_limits = default_changes(current_defaults, defaults, prune)
        if reviewed is not None and plan.fingerprint() != reviewed:
            plan.stale = True
            return plan
        try:
            for entry, tool_diff in zip(wanted, plan.tools, strict=True):
                if tool_diff.status != UNCHANGED:
                    Writer(entry, existing.get(entry["name"]), names, plan).write()
            write_defaults(defaults, current_defaults, names, plan, prune)
            if prune:
                plan.pruned = disable(plan.site_only, existing)
        except DatabaseError:
            plan.refuse("The database refused a change; nothing was imported.")
        plan.applied = apply and not plan.errors
        if not plan.applied:
            transaction.set_rollback(True)
    return plan


def resolved(entry: dict[str, Any], names: Names) -> dict[str, Any]:
    """The entry with only the users and groups that exist here (the others reported)."""
    where = f"Tool {clip(entry['name'], 80)!r}"
    rates = [rate for rate in entry["rate_limits"] if names.known([rate["group"]], names.groups, "group", where)]
    return {
        **entry,
        "users": names.known(entry["users"], names.users, "user", where),
        "groups": names.known(entry["groups"], names.groups, "group", where),
        "rate_limits": sorted(rates, key=lambda rate: rate["group"]),
        "approvers": "".join(
            names.known([entry["approvers"]], names.groups, "group", where) if entry["approvers"] else []
        ),
    }


def resolved_defaults(document: Document, names: Names) -> dict[str, str]:
    groups = names.known([rate["group"] for rate in document.rate_limits], names.groups, "group", "Default rates")
    return {rate["group"]: rate["rate"] for rate in document.rate_limits if rate["group"] in groups}


def flatten(entry: dict[str, Any] | None) -> dict[str, Any]:
    """An entry as field paths and values, grants aside."""
    if entry is None:
        return {}
    flat: dict[str, Any] = {key: entry[key] for key in TOOL_FIELDS}
    flat["approvers"] = entry["approvers"]
    if entry["query"] is not None:
        flat |= {f"query.{key}": value for key, value in entry["query"].items()}
    for source in entry["sources"]:
        flat |= {f"sources[{source['model']}].{key}": value for key, value in source.items() if key != "model"}
    flat |= {f"rate_limits[{rate['group']}]": rate["rate"] for rate in entry["rate_limits"]}
    return flat


def diff(tool: Tool | None, entry: dict[str, Any]) -> ToolDiff:
    current = None if tool is None else tool_entry(tool)
    old, new = flatten(current), flatten(entry)
    changes = [Change(key, old.get(key), new.get(key)) for key in dict.fromkeys([*new, *old])]
    changes = [change for change in changes if change.old != change.new]
    granted: list[str] = []
    revoked: list[str] = []
    # A grant to everyone widens access most of all: it leads the grants, never only a field among the changes.
    was_open = bool(current and current["everyone"])
    if entry["everyone"] != was_open:
        (granted if entry["everyone"] else revoked).append(EVERYONE)
    for key, label in (("users", "user"), ("groups", "group")):
        before = set(current[key]) if current else set()
        granted += [f"{label} {name}" for name in entry[key] if name not in before]
        revoked += [f"{label} {name}" for name in sorted(before - set(entry[key]))]
    if tool is None:
        settings = [Change(key, None, value) for key, value in new.items() if value not in (None, "", [], {})]
        return ToolDiff(entry["name"], ADDED, entry["kind"], [], granted, revoked, settings)
    status = CHANGED if changes or granted or revoked else UNCHANGED
    return ToolDiff(entry["name"], status, entry["kind"], changes, granted, revoked)


def default_changes(current: dict[str, RateLimitOverride], wanted: dict[str, str], prune: bool) -> list[Change]:
    changes = [Change(group, getattr(current.get(group), "rate", None), rate) for group, rate in wanted.items()]
    if prune:
        changes += [Change(group, rate.rate, None) for group, rate in current.items() if group not in wanted]
    return [change for change in changes if change.old != change.new]


def describe(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        parts = []
        for key, errors in exc.message_dict.items():
            text = " ".join(errors)
            parts.append(text if key == "__all__" else f"{key}: {text}")
        return "; ".join(parts)
    return " ".join(exc.messages)


class Writer:
    """Writes one tool and what hangs off it; notes a refusal and stops at it."""

    def __init__(self, entry: dict[str, Any], tool: Tool | None, names: Names, plan: Plan) -> None:
        self.entry, self.tool, self.names, self.plan = entry, tool, names, plan
        self.where = f"Tool {clip(entry['name'], 80)!r}"

    def write(self) -> None:
        try:
            tool = self.write_tool()
            self.write_query(tool)
            self.write_sources(tool)
            self.write_grants(tool)
            self.write_rates(tool)
        except Refused:
            pass

    def save(self, row: models.Model, where: str) -> None:
        try:
            row.full_clean()
        except ValidationError as exc:
            self.plan.refuse(f"{where}: {describe(exc)}")
            raise Refused from None
        row.save()

    def write_tool(self) -> Tool:
        entry, tool = self.entry, self.tool or Tool(name=self.entry["name"])
        kind_changed = self.tool is None or self.tool.kind != entry["kind"]
        for key in (*PLAIN_FIELDS, *HINTS, *ACCESS_FIELDS):
            setattr(tool, key, entry[key])
        tool.approvers = self.names.groups[entry["approvers"]] if entry["approvers"] else None
        if entry["kind"] not in GENERATED:
            # None: the registered callable's own (Tool.clean fills them in).
            tool.input_schema = default_input_schema() if entry["input_schema"] is None else entry["input_schema"]
            tool.output_schema = entry["output_schema"]
        elif kind_changed:
            tool.input_schema, tool.output_schema = default_input_schema(), None  # generated below or when read
        self.save(tool, self.where)
        return tool

    def write_query(self, tool: Tool) -> None:
        query = getattr(tool, "query", None) if self.tool is not None else None
        data = self.entry["query"]
        if data is None:
            if query is not None:
                query.delete()
            return
        query = query or ModelQuery(tool=tool)
        for key in QUERY_KEYS:
            setattr(query, key, data[key])
        self.save(query, f"{self.where} query")  # saving it regenerates the tool's schemas

    def write_sources(self, tool: Tool) -> None:
        current = {source.model: source for source in tool.sources.all()} if self.tool is not None else {}
        for data in self.entry["sources"]:
            source = current.pop(data["model"], None) or SearchSource(tool=tool)
            if source.pk is None or any(getattr(source, key) != data[key] for key in SOURCE_KEYS):
                for key in SOURCE_KEYS:
                    setattr(source, key, data[key])
                self.save(source, f"{self.where} source {data['model']}")
        for source in current.values():
            source.delete()

    def write_grants(self, tool: Tool) -> None:
        username = self.names.username
        users = {str(getattr(grant.user, username)): grant for grant in tool.user_grants.all()} if self.tool else {}
        for name in self.entry["users"]:
            if users.pop(name, None) is None:
                self.save(UserGrant(tool=tool, user=self.names.users[name]), f"{self.where} user {name}")
        for grant in users.values():
            grant.delete()
        groups = {grant.group.name: grant for grant in tool.group_grants.all()} if self.tool else {}
        for name in self.entry["groups"]:
            if groups.pop(name, None) is None:
                self.save(GroupGrant(tool=tool, group=self.names.groups[name]), f"{self.where} group {name}")
        for group_grant in groups.values():
            group_grant.delete()

    def write_rates(self, tool: Tool) -> None:
        current = {rate.group.name: rate for rate in tool.rate_overrides.all()} if self.tool else {}
        for data in self.entry["rate_limits"]:
            rate = current.pop(data["group"], None) or RateLimitOverride(
                tool=tool, group=self.names.groups[data["group"]]
            )
            if rate.pk is None or rate.rate != data["rate"]:
                rate.rate = data["rate"]
                self.save(rate, f"{self.where} rate for {data['group']}")
        for leftover in current.values():
            leftover.delete()


class Refused(Exception):
    """A row failed ``full_clean()``; the plan holds why."""


def write_defaults(
    wanted: dict[str, str], current: dict[str, RateLimitOverride], names: Names, plan: Plan, prune: bool
) -> None:
    for group, rate_text in wanted.items():
        rate = current.get(group) or RateLimitOverride(group=names.groups[group], tool=None)
        if rate.pk is not None and rate.rate == rate_text:
            continue
        rate.rate = rate_text
        try:
            rate.full_clean()
        except ValidationError as exc:
            plan.refuse(f"Default rate for {clip(group, 80)}: {describe(exc)}")
            continue
        rate.save()
    if prune:
        for group, rate in current.items():
            if group not in wanted:
                rate.delete()


def disable(names: list[str], existing: dict[str, Tool]) -> list[str]:
    disabled = []
    for name in names:
        tool = existing[name]
        if tool.enabled:
            tool.enabled = False
            tool.save(update_fields=["enabled", "updated_at"])
            disabled.append(name)
    return disabled
