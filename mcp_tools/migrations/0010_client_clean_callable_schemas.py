"""Rewrites the schemas stored on callable tools in the shapes every major client reads.

Earlier versions wrote a nullable or union value as a list of types and a decimal as ``format: "decimal"``;
the MCP Inspector cannot build a form from the first and the TypeScript SDK warns on the second. Model-query,
search, fetch and API-action tools regenerate their schemas and need nothing. Each rewrite accepts exactly
the values the old schema accepted.
"""

from typing import Any

from django.db import migrations

DECIMAL_PATTERN = r"^-?\d+(\.\d+)?$"
ANNOTATIONS = ("title", "description", "default", "examples", "deprecated")
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
SCHEMA_VALUES = (
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)


def clean(schema: Any) -> Any:
    """``schema`` without type lists or the decimal format, its subschemas too."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: clean(sub) for name, sub in out[key].items()}
    for key in SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [clean(sub) for sub in out[key]]
    for key in SCHEMA_VALUES:
        if key in out:
            out[key] = clean(out[key])
    if out.get("format") == "decimal":
        del out["format"]
        out.setdefault("pattern", DECIMAL_PATTERN)
    types = out.get("type")
    if isinstance(types, list):
        if len(types) == 1:
            out["type"] = types[0]
        elif types:
            outer = {key: value for key, value in out.items() if key in ANNOTATIONS}
            inner = {key: value for key, value in out.items() if key not in ANNOTATIONS and key != "type"}
            members = [{"type": kind, **inner} for kind in types]
            if "anyOf" in inner:  # an anyOf beside the list of types must hold as well
                return {"allOf": [{"anyOf": members}], **outer}
            return {"anyOf": members, **outer}
    return out


def rewrite(apps: Any, schema_editor: Any) -> None:
    Tool = apps.get_model("mcp_tools", "Tool")
    tools = Tool.objects.using(schema_editor.connection.alias)
    for tool in tools.filter(kind="callable").only("input_schema", "output_schema"):
        input_schema, output_schema = clean(tool.input_schema), clean(tool.output_schema)
        if (input_schema, output_schema) != (tool.input_schema, tool.output_schema):
            tools.filter(pk=tool.pk).update(input_schema=input_schema, output_schema=output_schema)


class Migration(migrations.Migration):
    dependencies = [("mcp_tools", "0009_tool_history_and_trial")]

    operations = [migrations.RunPython(rewrite, migrations.RunPython.noop)]
