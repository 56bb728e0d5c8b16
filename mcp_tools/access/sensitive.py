"""Which names look like secrets: one rule for model fields, relation paths and audited argument keys.

A name is split into lower-case parts at separators (``_``, ``-``, ``.``, spaces) and at camelCase
boundaries, so ``apiKey``, ``API_KEY``, ``api-key`` and ``ApiKey`` read alike. It is secret when:

- a part contains a long word that always means a secret (``password``, ``token``, ``secret`` ...), or
- a part is a short word that means a secret on its own (``key``, ``hash``, ``salt``, ``otp`` ...), or
- the parts of an extra name the site configured appear in it, in order and side by side.

Short words match whole parts only, so ``keyboard`` or ``turkey`` are not secrets while ``sort_key`` is:
a false positive costs a field nobody can reach, a false negative leaks a credential.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

# Words that mean a secret wherever they occur inside a part ("hashedpassword", "refreshtoken").
SECRET_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "credential",
    "private",
    "apikey",
    "accesskey",
    "authkey",
    "signingkey",
    "privkey",
)
# Words that mean a secret only as a whole part ("key", but not "keyboard").
SECRET_PARTS = frozenset(
    {
        "key",
        "keys",
        "hash",
        "hashed",
        "hashes",
        "salt",
        "salted",
        "otp",
        "totp",
        "hotp",
        "digest",
        "pin",
        "cvv",
        "cvc",
        "pwd",
    }
)
_BOUNDARY = re.compile(r"[^0-9a-zA-Z]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@lru_cache(maxsize=4096)
def name_parts(name: str) -> tuple[str, ...]:
    """``name`` as lower-case parts: ``"clientSecret_v2"`` -> ``("client", "secret", "v2")``."""
    return tuple(part.lower() for part in _BOUNDARY.split(name) if part)


def is_secret_name(name: object, extra: Iterable[str] = ()) -> bool:
    """Whether a field, path segment or argument key named ``name`` looks like it holds a secret.

    ``extra`` adds site-specific names (the SECRET_FIELDS setting), matched by their parts in order.
    """
    parts = name_parts(str(name))
    if any(part in SECRET_PARTS or any(word in part for word in SECRET_WORDS) for part in parts):
        return True
    joined = "".join(parts)
    if any(word in joined for word in SECRET_WORDS):
        return True
    return any(_contains_run(parts, name_parts(str(entry))) for entry in extra)


def is_secret_path(path: str, extra: Iterable[str] = (), separator: str = "__") -> bool:
    """Whether any segment of a relation path (``customer__api_key``) looks like a secret."""
    extra = tuple(extra)
    return any(is_secret_name(segment, extra) for segment in path.split(separator))


def _contains_run(parts: tuple[str, ...], run: tuple[str, ...]) -> bool:
    if not run:
        return False
    width = len(run)
    return any(parts[i : i + width] == run for i in range(len(parts) - width + 1))
