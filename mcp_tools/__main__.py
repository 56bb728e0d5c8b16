"""``python -m mcp_tools stdio``: the stdio transport started without the site's ``manage.py``.

A local client (Claude Desktop, Cursor) shows only "Connection closed" when the process it starts dies, and
a ``manage.py`` whose settings cannot be imported dies in a traceback before any command runs. This launcher
names the settings module it could not load, and why, in one line on stderr, and exits with status 1.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import sysconfig
import traceback
from collections.abc import Sequence

from django.core.management import execute_from_command_line

SETTINGS_VARIABLE = "DJANGO_SETTINGS_MODULE"
FAILED = 1


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m mcp_tools", description="Serve a Django site's MCP tools.")
    commands = root.add_subparsers(dest="command", required=True)
    stdio = commands.add_parser("stdio", help="Speak MCP as USER on stdin/stdout, as manage.py mcp_stdio does.")
    stdio.add_argument(
        "--settings", help=f"The site's settings module, as mysite.settings. Default: ${SETTINGS_VARIABLE}."
    )
    stdio.add_argument(
        "--pythonpath",
        help="A folder to import the site from, usually the one holding manage.py. Default: the current one.",
    )
    stdio.add_argument("--user", help="The username the client acts as.")
    return root


def settings_problem(module: str) -> str | None:
    """Why ``module`` cannot be imported, in one line; None when it can."""
    try:
        importlib.import_module(module)
    except Exception as exc:  # whatever a settings file raises, the owner needs its type, message and place
        reason = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ModuleNotFoundError):
            return f"{reason} (looked in {sys.path[0] or os.getcwd()} and the installed packages)"
        frame = site_frame(exc)
        return f"{reason} (at {frame.filename}, line {frame.lineno})" if frame else reason
    return None


def site_frame(exc: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of the site's own code: a settings file's line rather than ``os.environ``'s."""
    library = tuple(sysconfig.get_paths()[name] for name in ("stdlib", "platstdlib", "purelib", "platlib"))
    frames = traceback.extract_tb(exc.__traceback__)
    own = [frame for frame in frames if not frame.filename.startswith(("<", *library))]
    return own[-1] if own else None


def main(argv: Sequence[str] | None = None) -> int:
    options = parser().parse_args(argv)
    if options.pythonpath:
        sys.path.insert(0, os.path.abspath(options.pythonpath))
    module = options.settings or os.environ.get(SETTINGS_VARIABLE, "")
    if not module:
        print(
            f"mcp_tools: no settings module: give --settings mysite.settings or set {SETTINGS_VARIABLE}.",
            file=sys.stderr,
        )
        return FAILED
    os.environ[SETTINGS_VARIABLE] = module
    problem = settings_problem(module)
    if problem is not None:
        print(f"mcp_tools: cannot import the settings module {module!r}: {problem}", file=sys.stderr)
        return FAILED
    execute_from_command_line(["python -m mcp_tools", "mcp_stdio", *(["--user", options.user] if options.user else [])])
    return 0


if __name__ == "__main__":
    sys.exit(main())
