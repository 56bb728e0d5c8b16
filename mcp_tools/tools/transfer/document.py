"""The versioned file: its format marker, size caps, parsing from JSON or YAML, and the shape of every entry.

Parsing checks types and names only; what a tool may expose is checked by the models' ``full_clean()`` when
the file is imported (see ``importer``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcp_tools.models import GENERATED_KINDS, SearchSource, Tool
from mcp_tools.tools.kinds.registry import kinds

FORMAT = "django-mcp-tools"
VERSION = 1
FORMATS = ("json", "yaml")
MAX_BYTES = 5_000_000
MAX_TOOLS = 1000
#: Distinct user names, and distinct group names, the whole file may name (each is one parameter of a lookup).
MAX_NAMES = 10_000
MAX_ERRORS = 50
MAX_MESSAGE = 300  # characters of one problem: a message may quote a value from the file

HINTS = ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint")
# Kinds whose schemas are generated on the site (from the query, sources or API action): never in the file.
GENERATED = GENERATED_KINDS

STR, BOOL, INT, STRS, OBJ, LIST = "a string", "true or false", "an integer", "a list of strings", "an object", "a list"
NULLABLE = frozenset({"input_schema", "output_schema", "timeout_seconds", "max_concurrent_calls", "query", *HINTS})

#: Every key of a tool entry, its type, and its value when the entry leaves it out.
TOOL_KEYS: dict[str, tuple[str, Any]] = {
    "name": (STR, ""),
    "title": (STR, ""),
    "description": (STR, ""),
    "kind": (STR, Tool.Kind.CALLABLE),
    "callable_name": (STR, ""),
    "api_action": (STR, ""),
    "input_schema": (OBJ, None),
    "output_schema": (OBJ, None),
    **{hint: (BOOL, None) for hint in HINTS},
    "icons": (LIST, []),
    "enabled": (BOOL, True),
    "everyone": (BOOL, False),
    "confirmation": (STR, Tool.Confirmation.DEFAULT.value),
    "approvers": (STR, ""),  # the name of the group whose members approve calls
    "rate_limit": (STR, ""),
    "timeout_seconds": (INT, None),
    "max_concurrent_calls": (INT, None),
    "query": (OBJ, None),
    "sources": (LIST, []),
    "config": (OBJ, {}),
    "users": (STRS, []),
    "groups": (STRS, []),
    "rate_limits": (LIST, []),
}
QUERY_KEYS: dict[str, tuple[str, Any]] = {
    "model": (STR, ""),
    "operation": (STR, "list"),
    "output_fields": (STRS, []),
    "relations": (STRS, []),
    "filters": (STRS, []),
    "ordering_fields": (STRS, []),
    "search_fields": (STRS, []),
    "aggregate_fields": (STRS, []),
    "aggregate_functions": (STRS, []),
    "group_by_fields": (STRS, []),
    "writable_fields": (STRS, []),
    "lookup_field": (STR, "pk"),
    "default_limit": (INT, 20),
    "max_limit": (INT, 100),
    "scope_field": (STR, ""),
    "scope": (STR, ""),
    "serializer": (STR, ""),
}
SOURCE_KEYS: dict[str, tuple[str, Any]] = {
    "model": (STR, ""),
    "search_fields": (STRS, []),
    "title_field": (STR, ""),
    "text_fields": (STRS, []),
    "link": (STR, SearchSource.Link.PAGE),
    "max_results": (INT, 10),
    "scope": (STR, ""),
}
RATE_KEYS: dict[str, tuple[str, Any]] = {"group": (STR, ""), "rate": (STR, "")}
TOP_KEYS = frozenset({"format", "version", "tools", "rate_limits"})


class TransferError(Exception):
    """The file cannot be read or has the wrong shape; ``messages`` says every problem found."""

    def __init__(self, messages: list[str]) -> None:
        self.messages = [clip(message) for message in messages[:MAX_ERRORS]]
        super().__init__("\n".join(self.messages))


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Document:
    """A parsed file: tool entries with every key present, and the groups' default rates."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    rate_limits: list[dict[str, Any]] = field(default_factory=list)

    def as_data(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "tools": self.tools, "rate_limits": self.rate_limits}


def load_yaml() -> Any:
    try:
        import yaml  # optional: installed with uvicorn[standard], not required by the package
    except ImportError:
        raise TransferError(["YAML needs PyYAML, which is not installed (pip install pyyaml); use JSON."]) from None
    return yaml


def dumps(document: Document, fmt: str = "json") -> str:
    data = document.as_data()
    if fmt == "yaml":
        return str(load_yaml().safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False))
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def guess_format(filename: str) -> str:
    return "yaml" if filename.lower().endswith((".yaml", ".yml")) else "json"


def parse(content: bytes | str, fmt: str = "json") -> Document:
    """The document in ``content``, or TransferError naming every problem (up to MAX_ERRORS)."""
    size = len(content.encode() if isinstance(content, str) else content)
    if size > MAX_BYTES:
        raise TransferError([f"The file is {size:,} bytes; at most {MAX_BYTES:,} bytes are accepted."])
    try:
        text = content.decode("utf-8") if isinstance(content, bytes) else content
    except UnicodeDecodeError:
        raise TransferError(["The file is not UTF-8 text."]) from None
    data = _load(text, fmt)
    return shape(data)


def _load(text: str, fmt: str) -> Any:
    if fmt not in FORMATS:
        raise TransferError([f"Unknown format {fmt!r}: use json or yaml."])
    if fmt == "json":
        try:
            return json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise TransferError([f"Not valid JSON: {exc}"]) from None
    yaml = load_yaml()

    class Loader(yaml.SafeLoader):  # type: ignore[name-defined]
        def compose_node(self, parent: Any, index: Any) -> Any:
            # Aliases can make a small file expand into a huge structure; a tools file never needs them.
            if self.check_event(yaml.AliasEvent):
                raise yaml.YAMLError("aliases (*name) are not accepted")
            return super().compose_node(parent, index)

    try:
        return yaml.load(text, Loader=Loader)  # a SafeLoader
    except (yaml.YAMLError, RecursionError) as exc:
        raise TransferError([f"Not valid YAML: {exc}"]) from None


def shape(data: Any) -> Document:
    """Check the document's marker, version, caps and every entry's keys and types."""
    if not isinstance(data, dict):
        raise TransferError(["The file must hold one object with format, version and tools."])
    if data.get("format") != FORMAT:
        raise TransferError([f'This is not a tools file: "format" must be "{FORMAT}".'])
    version = data.get("version")
    if version != VERSION or isinstance(version, bool):
        raise TransferError([f"Unsupported version {version!r}: this site reads version {VERSION}."])
    errors: list[str] = [f"Unknown key {key!r} at the top level." for key in sorted(set(data) - TOP_KEYS)]
    tools, rates = data.get("tools", []), data.get("rate_limits", [])
    if not isinstance(tools, list) or not isinstance(rates, list):
        raise TransferError([*errors, '"tools" and "rate_limits" must be lists.'])
    if len(tools) > MAX_TOOLS:
        raise TransferError([f"The file holds {len(tools):,} tools; at most {MAX_TOOLS:,} are accepted."])
    document = Document()
    seen: set[str] = set()
    for index, entry in enumerate(tools):
        tool = _entry(entry, TOOL_KEYS, f"tools[{index}]", errors)
        if tool is None:
            continue
        where = f"Tool {clip(tool['name'], 80)!r}" if tool["name"] else f"tools[{index}]"
        if not tool["name"]:
            errors.append(f"{where}: a name is required.")
        elif tool["name"] in seen:
            errors.append(f"{where} appears more than once.")
        seen.add(tool["name"])
        _nested(tool, where, errors)
        document.tools.append(tool)
    document.rate_limits = _rates(rates, "rate_limits", errors)
    errors.extend(_too_many_names(document))
    if errors:
        raise TransferError(errors)
    return document


def _nested(tool: dict[str, Any], where: str, errors: list[str]) -> None:
    kind = kinds.find(tool["kind"])
    if kind is None:
        errors.append(f"{where}: no tool kind {clip(tool['kind'], 80)!r} is registered on this site.")
    else:
        _parts(tool, kind.name, kind.uses, kind.requires, where, errors)
    if tool["query"] is not None:
        tool["query"] = _entry(tool["query"], QUERY_KEYS, f"{where} query", errors)
    sources = [_entry(source, SOURCE_KEYS, f"{where} sources[{i}]", errors) for i, source in enumerate(tool["sources"])]
    tool["sources"] = [source for source in sources if source is not None]
    models = [source["model"] for source in tool["sources"]]
    if len(set(models)) != len(models):
        errors.append(f"{where}: a model appears in more than one source.")
    tool["rate_limits"] = _rates(tool["rate_limits"], f"{where} rate_limits", errors)
    for key in ("users", "groups"):
        if len(set(tool[key])) != len(tool[key]):
            errors.append(f"{where}: {key} names someone more than once.")
    if tool["kind"] in GENERATED:
        tool["input_schema"] = tool["output_schema"] = None  # the site generates them


def _parts(
    tool: dict[str, Any], kind: str, uses: frozenset[str], requires: frozenset[str], where: str, errors: list[str]
) -> None:
    """Only the parts the tool's kind keeps its configuration in, and those it needs (see ToolKind.uses)."""
    for part in ("query", "sources", "config"):
        present = tool[part] not in (None, [], {})
        if present and part not in uses:
            errors.append(f'{where}: a {kind} tool has no "{part}".')
        elif not present and part in requires:
            errors.append(f'{where}: a {kind} tool needs a "{part}".')


def _too_many_names(document: Document) -> list[str]:
    users = {name for tool in document.tools for name in tool["users"]}
    groups = {name for tool in document.tools for name in (*tool["groups"], *(r["group"] for r in tool["rate_limits"]))}
    groups |= {rate["group"] for rate in document.rate_limits}
    return [
        f"The file names {len(names):,} {what}; at most {MAX_NAMES:,} are accepted."
        for what, names in (("users", users), ("groups", groups))
        if len(names) > MAX_NAMES
    ]


def _rates(entries: list[Any], where: str, errors: list[str]) -> list[dict[str, Any]]:
    rates = [_entry(entry, RATE_KEYS, f"{where}[{i}]", errors) for i, entry in enumerate(entries)]
    found = [rate for rate in rates if rate is not None]
    groups = [rate["group"] for rate in found]
    if len(set(groups)) != len(groups):
        errors.append(f"{where}: a group appears more than once.")
    return found


def _entry(value: Any, keys: dict[str, tuple[str, Any]], where: str, errors: list[str]) -> dict[str, Any] | None:
    """``value`` with every key of ``keys`` (missing ones at their defaults), or None after noting what is wrong."""
    if not isinstance(value, dict):
        errors.append(f"{where}: must be an object.")
        return None
    before = len(errors)
    errors.extend(f"{where}: unknown key {key!r}." for key in sorted(set(value) - set(keys), key=str))
    entry: dict[str, Any] = {}
    for key, (expected, default) in keys.items():
        item = value.get(key, default)
        if item is None and (key in NULLABLE or default is None):
            entry[key] = None
        elif _is(item, expected):
            entry[key] = item
        else:
            errors.append(f"{where}: {key} must be {expected}, not {_type_name(item)}.")
    return entry if len(errors) == before else None


def _is(value: Any, expected: str) -> bool:
    if expected == STR:
        return isinstance(value, str)
    if expected == BOOL:
        return isinstance(value, bool)
    if expected == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == STRS:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    if expected == OBJ:
        return isinstance(value, dict)
    return isinstance(value, list)


def _type_name(value: Any) -> str:
    names = {str: "a string", bool: "true or false", int: "an integer", float: "a number", list: "a list"}
    if value is None:
        return "null"
    return names.get(type(value), "an object" if isinstance(value, dict) else type(value).__name__)
