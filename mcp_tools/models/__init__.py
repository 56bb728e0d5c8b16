"""The app's models: tools and their configuration, access tokens, HTTP sessions, the audit trail."""

from mcp_tools.models.approvals import Approval
from mcp_tools.models.records import ChangeCounter, RunningCall, SpentConfirmation, ToolCall, ToolChange
from mcp_tools.models.sessions import ClientSession
from mcp_tools.models.sources import SearchSource
from mcp_tools.models.tokens import AccessToken, AccessTokenManager, Lifetime, hash_token
from mcp_tools.models.tools import (
    GENERATED_KINDS,
    HINT_FIELDS,
    GroupGrant,
    ModelQuery,
    RateLimitOverride,
    Tool,
    UserGrant,
    checking,
    default_input_schema,
)

__all__ = [
    "GENERATED_KINDS",
    "HINT_FIELDS",
    "AccessToken",
    "AccessTokenManager",
    "Approval",
    "ChangeCounter",
    "ClientSession",
    "GroupGrant",
    "Lifetime",
    "ModelQuery",
    "RateLimitOverride",
    "RunningCall",
    "SearchSource",
    "SpentConfirmation",
    "Tool",
    "ToolCall",
    "ToolChange",
    "UserGrant",
    "checking",
    "default_input_schema",
    "hash_token",
]
