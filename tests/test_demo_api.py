"""The demo shop's REST API passes its own tests (``project/shop/tests``), run on the demo's settings in a
pytest process of their own: this suite's settings do not install the shop."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.live.servers import ROOT
from tests.live.sites import child_environment

pytestmark = pytest.mark.live

RUN_TIMEOUT = 240
COMMAND = [sys.executable, "-m", "pytest", "project/shop/tests", "-q", "-p", "no:cacheprovider"]


def test_the_demo_shops_api_tests_pass_on_the_demo_settings() -> None:
    env = child_environment({}, "project.settings")
    for name in ("DATABASE_URL", "REDIS_URL"):
        env.pop(name, None)  # the demo's defaults: SQLite and in-memory layers

    completed = subprocess.run(
        [*COMMAND, "--ds", "project.settings"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )

    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
