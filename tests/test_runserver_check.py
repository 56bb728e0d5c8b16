"""System check mcp_tools.W013: ``manage.py runserver`` serving the site over WSGI, where /mcp does not exist.

That daphne's runserver is not warned about is seen in tests/test_fresh_project.py, whose site puts daphne
first: importing daphne here would load Twisted into the test process."""

from __future__ import annotations

import pytest

from tests.system_checks import mcp_checks

WSGI_RUNSERVER = "mcp_tools.W013"


def ids(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr("sys.argv", argv)
    return [message.id for message in mcp_checks() if message.id == WSGI_RUNSERVER]


def test_djangos_runserver_is_warned_about(monkeypatch):
    assert ids(["manage.py", "runserver"], monkeypatch) == [WSGI_RUNSERVER]


def test_the_warning_names_the_remedy(monkeypatch):
    monkeypatch.setattr("sys.argv", ["manage.py", "runserver", "127.0.0.1:8123"])

    (message,) = [message for message in mcp_checks() if message.id == WSGI_RUNSERVER]

    assert "404 for /mcp" in message.msg
    assert '"daphne" first in INSTALLED_APPS' in message.hint


@pytest.mark.parametrize("command", ["migrate", "check", "mcp_stdio", "shell"])
def test_other_commands_and_servers_are_not(monkeypatch, command):
    assert ids(["manage.py", command], monkeypatch) == []
