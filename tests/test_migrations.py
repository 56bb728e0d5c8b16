"""The migrations match the models: a model change without its migration fails here, not on a site."""

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_models_have_their_migrations() -> None:
    out = StringIO()
    try:
        call_command("makemigrations", "mcp_tools", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exit_:
        pytest.fail(f"makemigrations --check found changes without a migration (exit {exit_.code}):\n{out.getvalue()}")
