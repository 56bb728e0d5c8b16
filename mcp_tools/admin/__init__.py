"""The Django admin for tools, grants, tokens and the audit trail (imported by admin autodiscovery)."""

from mcp_tools.admin import audit, running, tools  # noqa: F401  (each module registers its ModelAdmins)
