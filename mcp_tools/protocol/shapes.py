"""Per-revision shapes of tool definitions and CallToolResult, from the tools' own revision-free forms."""

from __future__ import annotations

from typing import Any

from mcp_tools.protocol import versions as v
from mcp_tools.protocol.versions import Revision
from mcp_tools.tools.content import CallResult
from mcp_tools.tools.spec import ToolSpec

ANNOTATION_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def definition(spec: ToolSpec, revision: Revision) -> dict[str, Any]:
    """The tool as ``tools/list`` shows it to a client speaking ``revision``."""
    out: dict[str, Any] = {"name": spec.name}
    if revision >= v.V2025_06_18 and spec.title:
        out["title"] = spec.title
    if spec.description or revision <= v.DRAFT:
        out["description"] = spec.description
    out["inputSchema"] = spec.input_schema
    if revision >= v.V2025_06_18 and spec.output_schema is not None:
        out["outputSchema"] = spec.output_schema
    if revision >= v.V2025_03_26:
        annotations: dict[str, Any] = {k: spec.annotations[k] for k in ANNOTATION_HINTS if k in spec.annotations}
        if spec.title:
            annotations = {"title": spec.title, **annotations}
        if annotations:
            out["annotations"] = annotations
    if revision >= v.V2025_11_25 and spec.icons:
        out["icons"] = list(spec.icons)
    return out


_CONTENT_SINCE: dict[str, Revision] = {
    "text": v.V2024_11_05,
    "image": v.V2024_11_05,
    "resource": v.V2024_11_05,
    "audio": v.V2025_03_26,
    "resource_link": v.V2025_06_18,
}


def _content_for(block: dict[str, Any], revision: Revision) -> dict[str, Any]:
    since = _CONTENT_SINCE.get(block.get("type", ""))
    if since is not None and revision >= since:
        return block
    kind = block.get("type", "content")
    label = block.get("uri") or block.get("mimeType") or ""
    return {"type": "text", "text": f"[{kind} {label}]".replace(" ]", "]")}


def call_result(result: CallResult, revision: Revision) -> dict[str, Any]:
    """The CallToolResult for ``revision`` (the draft's ``toolResult`` included)."""
    if revision <= v.DRAFT:
        value = result.value
        if value is None and result.has_structured:
            value = result.structured
        if value is None:
            value = "\n".join(b.get("text", "") for b in result.content if b.get("type") == "text")
        return {"toolResult": value}
    out: dict[str, Any] = {"content": [_content_for(b, revision) for b in result.content]}
    structured_allowed = revision.is_modern or isinstance(result.structured, dict)
    if result.has_structured and revision >= v.V2025_06_18 and structured_allowed:
        out["structuredContent"] = result.structured
    out["isError"] = result.is_error
    if revision.is_modern:
        out["resultType"] = "complete"
    return out
