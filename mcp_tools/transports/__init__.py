"""Thin adapters that move MCP messages between a transport and the protocol core."""
