"""The demo's settings with one tools/list page of up to 1,000 tools (the default page holds 250).

DJANGO_SETTINGS_MODULE=bench.settings_page1000 .venv/bin/uvicorn project.asgi:application ...
"""

from project.settings import *  # noqa: F403
from project.settings import MCP_TOOLS

MCP_TOOLS = {**MCP_TOOLS, "PAGE_SIZE": 1000}
