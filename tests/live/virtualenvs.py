"""Fresh virtualenvs with a built wheel of the package installed, so that what is published is what is tested.

``MCP_TEST_WHEEL`` names the wheel (``.ci/run`` sets it to the one it built); without it, tests that make a
new site use the checkout. A virtualenv gets the wheel and the packages a site's steps name, resolved within
the versions requirements.txt pins (and the Django the suite runs on), through pip's cache.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import django

from tests.live.servers import ROOT

WHEEL_VARIABLE = "MCP_TEST_WHEEL"
INSTALL_TIMEOUT = 600
# pip takes no extras in a constraint: `uvicorn[standard]==0.54.0` constrains `uvicorn==0.54.0`.
EXTRAS = re.compile(r"\[[^\]]*\]")
DJANGO_PIN = re.compile(r"^Django==.*$", re.MULTILINE | re.IGNORECASE)


def published_wheel() -> Path | None:
    """The wheel that ``MCP_TEST_WHEEL`` names, or None when it is not set."""
    value = os.environ.get(WHEEL_VARIABLE, "").strip()
    if not value:
        return None
    wheel = Path(value).resolve()
    assert wheel.is_file() and wheel.suffix == ".whl", f"{WHEEL_VARIABLE}={value} names no wheel"
    return wheel


def constraints(requirements: Path = ROOT / "requirements.txt") -> str:
    """requirements.txt as pip constraints, with Django pinned to the release this suite runs on."""
    text = EXTRAS.sub("", requirements.read_text())
    return DJANGO_PIN.sub(f"Django=={django.__version__}", text)


@dataclass(frozen=True)
class Virtualenv:
    """A virtualenv at ``root``, made with this interpreter's ``venv``."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def create(self) -> None:
        run([sys.executable, "-m", "venv", str(self.root)])
        (self.root / "constraints.txt").write_text(constraints())

    def install(self, *requirements: str) -> None:
        """pip install ``requirements`` within the constraints."""
        pip = [str(self.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        run([*pip, "--constraint", str(self.root / "constraints.txt"), *requirements])

    def site_packages(self) -> Path:
        return Path(run([str(self.python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).strip())


def run(command: list[str]) -> str:
    completed = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
    if completed.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{completed.stdout}\n{completed.stderr}")
    return completed.stdout


__all__ = ["WHEEL_VARIABLE", "Virtualenv", "constraints", "published_wheel"]
