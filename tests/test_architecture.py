"""The layering the docs describe (docs/architecture.md) holds in the code, as pyproject's contracts state it."""

from __future__ import annotations

from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def test_every_import_contract_is_kept(monkeypatch, capsys) -> None:
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0, (
        capsys.readouterr().out
    )
