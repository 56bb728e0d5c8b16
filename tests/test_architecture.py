"""The layering the docs describe (docs/architecture.md) holds in the code, as pyproject's contracts state it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def loggers_kept() -> Iterator[None]:
    """import-linter configures logging, which disables every logger that exists; later tests read them."""
    existing = [logger for logger in logging.root.manager.loggerDict.values() if isinstance(logger, logging.Logger)]
    disabled = {logger: logger.disabled for logger in existing}
    yield
    for logger, was in disabled.items():
        logger.disabled = was


def test_every_import_contract_is_kept(monkeypatch, capsys, loggers_kept) -> None:
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0, (
        capsys.readouterr().out
    )
