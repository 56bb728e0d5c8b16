"""What a tool advertises, independent of any protocol revision."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class ToolSpec:
    """Name, texts, schemas, annotations and icons: everything any revision's definition may show."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    title: str = ""
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, bool] = field(default_factory=dict)
    icons: tuple[dict[str, Any], ...] = ()

    @cached_property
    def digest(self) -> str:
        """Equal exactly when two specs would show clients the same definition at every revision."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True, default=str).encode()).hexdigest()
