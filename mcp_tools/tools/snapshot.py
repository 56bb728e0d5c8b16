"""A snapshot of the enabled tools, and what each kind of caller may see of it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mcp_tools.access import permissions
from mcp_tools.access.reach import Reach
from mcp_tools.tools.entries import Entry


@dataclass
class View:
    """The entries one kind of caller (same user, flags, groups and permissions) may list and call."""

    entries: tuple[Entry, ...]
    # Forms the layers above derive from this view (pages of encoded definitions), kept while it lives.
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)

    @cached_property
    def names(self) -> frozenset[str]:
        return frozenset(entry.name for entry in self.entries)

    @cached_property
    def fingerprint(self) -> frozenset[tuple[str, str]]:
        """What the list looks like; it differs exactly when the caller's list changed.

        Specs are compared whole, so saving a tool without changing what clients see, as the admin does
        when only grants change, is no change.
        """
        return frozenset((entry.name, entry.spec.digest) for entry in self.entries)


@dataclass
class Snapshot:
    """The enabled tools, ordered by name, as loaded at one moment; immutable but for its memos."""

    entries: tuple[Entry, ...]
    generation: int
    rate_overrides: dict[tuple[int, int | None], str] = field(default_factory=dict)
    every_name: frozenset[str] = frozenset()  # enabled or not: a disabled tool's name is no one's to learn
    _views: dict[tuple[Any, ...], View] = field(default_factory=dict, repr=False)
    # Callers who may use the same tools share one view, so its cached pages are held once for all of them
    # (user_key holds the user's id: without this, each user's pages would be cached apart).
    _by_names: dict[tuple[str, ...], View] = field(default_factory=dict, repr=False)
    _named_in: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)

    @cached_property
    def by_name(self) -> dict[str, Entry]:
        return {entry.name: entry for entry in self.entries}

    def view(self, user: Any, reach: Reach | None = None) -> View:
        """What ``user`` may list and call (narrowed to ``reach``, the credential's, when given), computed once per
        distinct kind of caller and shared by every caller who may use the same tools.

        Call :func:`mcp_tools.access.permissions.prepare` for ``user`` first (off the event loop).
        """
        key = (permissions.user_key(user), reach)
        found = self._views.get(key)
        if found is None:
            entries = tuple(
                e for e in self.entries if permissions.may_use(user, e) and (reach is None or reach.allows(e))
            )
            names = tuple(entry.name for entry in entries)
            found = self._by_names.get(names)
            if found is None:
                found = self._by_names[names] = View(entries)
            self._views[key] = found
        return found

    def names_in(self, text: str) -> frozenset[str]:
        """The tool names ``text`` mentions as whole words (a sentence's full stop does not hide one)."""
        found = self._named_in.get(text)
        if found is None:
            found = self._named_in[text] = frozenset(name for name in self.every_name if _mentions(text, name))
        return found


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)", text) is not None
