"""The demo site: a small shop served over MCP by ``mcp_tools``."""
