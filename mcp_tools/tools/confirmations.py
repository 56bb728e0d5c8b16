"""What a person is asked before a call runs: the tool's policy, and the question in words a person reads.

A tool's ``confirmation`` names who must say yes (``Tool.Confirmation``); left blank, a tool that writes asks
its user and one that reads runs at once. Its kind may say otherwise for its blank (a callable's
``@tool(confirm=...)``). The question (:class:`Question`) names the tool, its arguments as labelled values and
what its kind says will change, worked out without writing (:class:`Changes`); ``Changes.state`` digests the
rows the write would touch, so that an answer given for one state of them never runs on another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp_tools.models import Tool

Confirmation = Tool.Confirmation

#: The one field of the form a client shows: a yes the person ticks.
CONFIRM_FIELD = "confirm"
# A question stays readable, and within what clients show, whatever the arguments hold.
MAX_VALUE_CHARS = 200
MAX_LINES = 40


def writes(annotations: dict[str, bool]) -> bool:
    """Whether hints say the tool changes something: not read-only, or destructive."""
    return annotations.get("readOnlyHint") is False or annotations.get("destructiveHint") is True


def policy(row: Tool, kind_default: str, annotations: dict[str, bool]) -> str:
    """Who must confirm the row's calls: its own choice, else its kind's, else by whether it writes."""
    if row.confirmation:
        return str(row.confirmation)
    if kind_default:
        return kind_default
    return Confirmation.USER.value if writes(annotations) else Confirmation.NONE.value


@dataclass(frozen=True)
class Changes:
    """What a call would change, as its kind works it out before anything is written."""

    lines: tuple[str, ...] = ()
    state: str = ""  # a digest of the rows it would touch; empty when it touches none that exist


def shown(value: Any) -> str:
    """A value as a person reads it, cut to MAX_VALUE_CHARS."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_VALUE_CHARS else f"{text[: MAX_VALUE_CHARS - 1]}…"


def labelled(arguments: dict[str, Any], input_schema: dict[str, Any]) -> list[tuple[str, str]]:
    """The arguments as (label, value) pairs, labelled by their schema titles where they have them."""
    properties = input_schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    pairs = []
    for name, value in arguments.items():
        described = properties.get(name)
        title = described.get("title") if isinstance(described, dict) else None
        pairs.append((str(title) if isinstance(title, str) and title else name, shown(value)))
    return pairs


@dataclass(frozen=True)
class Question:
    """The question put to a person before one call runs."""

    title: str
    arguments: tuple[tuple[str, str], ...]
    changes: Changes

    @property
    def message(self) -> str:
        lines = [f"Run “{self.title}”?"]
        if self.arguments:
            lines.append("With:")
            lines.extend(f"- {label}: {value}" for label, value in self.arguments[:MAX_LINES])
        if self.changes.lines:
            lines.append("This will change:")
            lines.extend(f"- {line}" for line in self.changes.lines[:MAX_LINES])
            if len(self.changes.lines) > MAX_LINES:
                lines.append(f"- and {len(self.changes.lines) - MAX_LINES} more")
        lines.append("Nothing is changed until you confirm.")
        return "\n".join(lines)

    @property
    def requested_schema(self) -> dict[str, Any]:
        """A flat form of one boolean, as elicitation allows."""
        return {
            "type": "object",
            "properties": {
                CONFIRM_FIELD: {
                    "type": "boolean",
                    "title": "Run it",
                    "description": f"Tick to run “{self.title}” as described.",
                    "default": False,
                }
            },
            "required": [CONFIRM_FIELD],
        }

    def elicitation(self) -> dict[str, Any]:
        """The params of ``elicitation/create`` (form mode) asking this question."""
        return {"mode": "form", "message": self.message, "requestedSchema": self.requested_schema}


def question(title: str, arguments: dict[str, Any], input_schema: dict[str, Any], changes: Changes) -> Question:
    return Question(title, tuple(labelled(arguments, input_schema)), changes)


def accepted(answer: Any) -> bool | None:
    """An elicitation answer: True for a yes, False for a no or a dismissal, None when it is no answer at all."""
    if not isinstance(answer, dict):
        return None
    action = answer.get("action")
    if action == "accept":
        # A form sent with the box left unticked is a no; a yes needs no more than the accept itself.
        content = answer.get("content")
        return not (isinstance(content, dict) and content.get(CONFIRM_FIELD) is False)
    if action in ("decline", "cancel"):
        return False
    return None
