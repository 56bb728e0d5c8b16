"""The MCP method table, sessions and the tools/call pipeline; knows no transport."""
