"""The test settings plus the ``tests.misbehaving`` app, whose tools return what a client cannot be sent.

Kept out of ``tests.settings`` so that the suite's other tests list and count the tools they always did.
"""

from __future__ import annotations

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.misbehaving"]
