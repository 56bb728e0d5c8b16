"""Transport-agnostic MCP: envelopes, revisions and per-revision shapes."""
