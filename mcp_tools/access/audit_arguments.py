"""What the audit trail keeps of a call's arguments: secrets masked, text a database holds, size bounded.

Every key that looks like a secret (``mcp_tools.access.sensitive.is_secret_name``, plus the names in
``AUDIT_REDACT``) has its value masked, at any depth. Arguments whose compact JSON then fits in
``AUDIT_MAX_ARGUMENT_BYTES`` are kept whole. Larger ones are kept as ::

    {"_truncated": true, "sha256": "<digest of the whole masked arguments>", "bytes": N, "keys": K,
     "arguments": {<as many keys as fit, the tool's own parameters first>}}

where a value longer than ``VALUE_BYTES`` becomes ``{"_truncated": true, "start": ..., "sha256": ...,
"bytes": N}``. So padding one argument, or sending thousands of keys, cannot push the ones the tool
reads out of the record, and what was cut stays provable by its digest. Digests are taken after
masking, so they never let anyone test guesses of a masked secret.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable
from functools import lru_cache
from typing import Any

from asgiref.sync import sync_to_async

from mcp_tools.access.sensitive import SECRET_PARTS, SECRET_WORDS, is_secret_name, name_parts
from mcp_tools.conf import DEFAULTS, mcp_settings

MASK = "***"
# A value whose JSON is longer than this is kept as its start and digest once arguments are cut.
VALUE_BYTES = 256
START_CHARS = 64
# The cut record's own fields take about 150 bytes: a smaller AUDIT_MAX_ARGUMENT_BYTES acts as this.
MIN_ARGUMENT_BYTES = 512
# NUL and unpaired surrogates are valid in JSON strings but no database column can hold them.
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# The same characters as ``compact`` writes them (every non-ASCII character escaped, hex in lower case); a
# surrogate pair of a character beyond U+FFFF matches too and takes the longer way.
ESCAPED_UNSTORABLE = re.compile(r"\\u0000|\\ud[89a-f]")
SEPARATORS = re.compile("[^0-9a-zA-Z]+")
KNOWN_NAMES = 4096


class SecretNames:
    """``is_secret_name`` with these extra names, quick to say no to the many keys that are plainly not secret.

    Every name the rule calls secret holds one of its words, or an extra name, once its separators are
    gone and its letters lower-cased; a single search for them spares most keys the full rule.
    """

    def __init__(self, extra: Iterable[str]) -> None:
        self.extra = tuple(extra)
        words = {*SECRET_WORDS, *SECRET_PARTS, *("".join(name_parts(name)) for name in self.extra)} - {""}
        self.hint = re.compile("|".join(re.escape(word) for word in sorted(words, key=len, reverse=True)))
        self.known: dict[str, bool] = {}
        #: The names of ``known`` that are not secret, for one set comparison per object of arguments.
        self.plain: set[str] = set()

    def __call__(self, name: object) -> bool:
        text = str(name)
        known = self.known.get(text)
        if known is None:
            known = bool(self.hint.search(SEPARATORS.sub("", text).lower())) and is_secret_name(text, self.extra)
            # Argument names repeat from call to call; a flood of new ones only restarts the memo.
            if len(self.known) >= KNOWN_NAMES:
                self.known.clear()
                self.plain.clear()
            self.known[text] = known
            if not known:
                self.plain.add(text)
        return known

    def any_secret(self, names: Iterable[object]) -> bool:
        return any(map(self, names))


def secret_names() -> SecretNames:
    """The rule with the site's extra names: the default ``AUDIT_REDACT`` entries always, and the configured ones."""
    configured = mcp_settings.AUDIT_REDACT
    return _secret_names(tuple(configured) if isinstance(configured, list | tuple) else ())


@lru_cache(maxsize=8)
def _secret_names(configured: tuple[Any, ...]) -> SecretNames:
    return SecretNames(dict.fromkeys(str(name) for name in (*DEFAULTS["AUDIT_REDACT"], *configured)))


def redact(value: Any, is_secret: SecretNames) -> Any:
    """``value`` with the value of every secret-looking key masked, at any depth."""
    if isinstance(value, dict):
        return {k: MASK if is_secret(k) else redact(v, is_secret) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, is_secret) for v in value]
    return value


def storable_text(text: str) -> str:
    """``text`` with every character a database refuses replaced by U+FFFD."""
    return UNSTORABLE.sub("\ufffd", text) if UNSTORABLE.search(text) else text


def storable(value: Any) -> Any:
    """``value`` with every character a database refuses replaced by U+FFFD, in keys and values alike."""
    if isinstance(value, str):
        return UNSTORABLE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(v) for v in value]
    return value


def argument_limit() -> int:
    return max(int(mcp_settings.AUDIT_MAX_ARGUMENT_BYTES), MIN_ARGUMENT_BYTES)


_encode = json.JSONEncoder(separators=(",", ":"), default=str).encode


def compact(value: Any) -> str:
    """``value`` as the audit trail writes it: compact JSON, non-ASCII characters escaped."""
    return _encode(value)


def digest(text: str) -> dict[str, Any]:
    encoded = text.encode()
    return {"_truncated": True, "sha256": hashlib.sha256(encoded).hexdigest(), "bytes": len(encoded)}


async def stored_arguments(arguments: Any, parameters: Collection[str] = ()) -> str:
    """The JSON text to record of ``arguments``; large ones are cut in a worker thread, off the event loop."""
    kept = whole(arguments)
    if kept is not None:
        return kept
    return compact(await sync_to_async(truncated, thread_sensitive=False)(arguments, parameters))


def whole(arguments: Any) -> str | None:
    """The masked arguments' JSON when it fits in AUDIT_MAX_ARGUMENT_BYTES, else None; costs little either way."""
    value = arguments if isinstance(arguments, dict) else {"_": arguments}
    limit = argument_limit()
    # The C encoder sizes even the largest message (MAX_MESSAGE_BYTES) in about the time it took to parse.
    text = compact(value)
    if len(text) > limit:
        return None
    is_secret = secret_names()
    # Most arguments hold no secret key and no character a database refuses: kept as they are.
    if not ESCAPED_UNSTORABLE.search(text) and not _has_secret_key(value, is_secret):
        return text
    kept = compact(storable(redact(value, is_secret)))
    return kept if len(kept) <= limit else None


def _has_secret_key(value: Any, is_secret: SecretNames) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            # The usual object: every key seen before and found plain, told by one set comparison.
            if not item.keys() <= is_secret.plain and is_secret.any_secret(item):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def truncated(arguments: Any, parameters: Collection[str] = ()) -> dict[str, Any]:
    """The cut record of arguments too large to keep whole (see the module docstring)."""
    value = arguments if isinstance(arguments, dict) else {"_": arguments}
    masked = storable(redact(value, secret_names()))
    record: dict[str, Any] = {**digest(compact(masked)), "keys": len(masked), "arguments": {}}
    budget = argument_limit() - len(compact(record))
    kept = record["arguments"]
    for key in _ordered(masked, parameters):
        shown = shortened(masked[key])
        cost = len(compact(key)) + 1 + len(compact(shown)) + (1 if kept else 0)
        if cost > budget:
            # Stopping at the first key that does not fit keeps the work as small as the record.
            break
        kept[key] = shown
        budget -= cost
    return record


def shortened(value: Any) -> Any:
    """``value``, or its start and digest when its JSON is longer than VALUE_BYTES."""
    text = compact(value)
    if len(text) <= VALUE_BYTES:
        return value
    start = value[:START_CHARS] if isinstance(value, str) else text[:START_CHARS]
    return {"_truncated": True, "start": start, **digest(text)}


def _ordered(masked: dict[str, Any], parameters: Collection[str]) -> list[str]:
    """The keys the tool declares, then the others, each in the order the client sent them."""
    own = [key for key in masked if key in parameters]
    return own + [key for key in masked if key not in parameters]
