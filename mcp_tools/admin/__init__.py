"""The Django admin for tools, grants, tokens and the audit trail (imported by admin autodiscovery)."""

from mcp_tools.admin import approvals, audit, running, tokens, tools  # noqa: F401  (each module registers its ModelAdmins)
