"""`mcp_settings`: the lazy view over ``settings.MCP_TOOLS`` with defaults."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

SETTING_NAME = "MCP_TOOLS"

DEFAULTS: dict[str, Any] = {
    # Identity advertised in initialize and server/discover.
    "SERVER_NAME": "django-mcp-tools",
    "SERVER_TITLE": "",
    "SERVER_VERSION": None,  # None: the package version
    "INSTRUCTIONS": "",
    "WEBSITE_URL": "",
    # tools/list
    "PAGE_SIZE": 2000,
    "LIST_TTL_MS": 60_000,
    # Registered callables
    "SYNC_CREATES_ENABLED": False,
    # Access
    "ALLOW_ANONYMOUS": False,
    "PERMISSION_CLASSES": [
        "mcp_tools.access.permissions.IsAuthenticated",
        "mcp_tools.access.permissions.HasToolGrant",
        "mcp_tools.access.permissions.HasModelPermissions",
    ],
    "SUPERUSERS_SEE_ALL": True,
    "STAFF_SEE_ALL": False,
    "ALLOWED_ORIGINS": [],
    "TOKEN_LAST_USED_INTERVAL": 60,
    "TOKEN_CACHE_SECONDS": 5,
    "TOKEN_LIFETIME_DAYS": 90,  # how long a token issued by mcp_token or the admin lives unless told; None: forever
    # Freshness: how soon a change made in any process (tools, grants, groups, users, tokens) binds here
    "FRESHNESS_SECONDS": 5.0,
    "POLL_SECONDS": None,  # None: FRESHNESS_SECONDS / 4 (the change-counter poll without a shared layer)
    "SAFETY_POLL_SECONDS": 30.0,  # the poll beside a cross-process channel layer, for lost messages
    # Streamable HTTP
    "SSE_KEEPALIVE_SECONDS": 15,
    "SESSION_TTL_SECONDS": 86_400,
    "MAX_SESSIONS_PER_USER": 20,
    "SESSION_PRUNE_SECONDS": 300,
    "SESSION_CACHE_BYTES": 16_777_216,
    "MAX_CLIENT_STATE_BYTES": 8192,
    # Replaced by POLL_SECONDS, which it still sets when given.
    "STDIO_POLL_SECONDS": None,
    # Model-query tools
    "EXCLUDED_MODELS": [],
    "EXPOSED_MODELS": [],
    "SECRET_FIELDS": [],  # extra names; the built-in patterns of mcp_tools.access.sensitive always apply
    "ROW_CAP": 1000,
    # Admin-action tools: the admin site whose ModelAdmin actions they run
    "ADMIN_SITE": "django.contrib.admin.site",
    "MAX_IN_ITEMS": 100,
    "QUERY_TIMEOUT_MS": 5000,
    # Search results: the site's public address, that makes get_absolute_url() and admin links absolute
    "SITE_URL": "",
    # Rate limits (django-ratelimit rates such as "30/m"; None: no default limit)
    "DEFAULT_RATE": None,
    # Calls refused as denied or unknown, per user and per token, across every tool name
    "DENIED_RATE": "30/m",
    # After the rate-limit cache fails, this process answers without it for this long before trying again
    "CACHE_RETRY_SECONDS": 5.0,
    # Audit trail
    "AUDIT": True,
    "AUDIT_REDACT": ["password", "token", "secret", "api_key", "authorization", "cookie"],
    "AUDIT_MAX_ARGUMENT_BYTES": 10_000,
    "AUDIT_RETENTION_DAYS": 90,
    "AUDIT_FLUSH_SECONDS": None,  # None: each row is committed before its call is answered
    "AUDIT_BATCH_SIZE": 200,
    # Authentication: DRF authentication classes (dotted paths) tried after MCP tokens
    "AUTHENTICATION_CLASSES": [],
    # OAuth (mcp_tools.oauth): the URL tokens must be issued for; None: this connection's origin + RESOURCE_PATH
    "RESOURCE_URL": None,
    "RESOURCE_PATH": "/mcp",
    "OAUTH_RESOURCE_METADATA": None,  # None: published when mcp_tools.oauth is installed
    "OAUTH_SCOPES": ["mcp"],  # scopes an OAuth token needs to be served
    "OAUTH_ACCEPT_UNBOUND_TOKENS": False,  # accept the site's own tokens that name no resource (RFC 8707)
    "OAUTH_REGISTRATION_RATE": "20/h",  # dynamic client registrations per client address
    "OAUTH_CLIENT_RETENTION_DAYS": 30,  # unused DCR and CIMD clients older than this are stale (mcp_oauth_cleanup)
    # External authorization servers whose JWT access tokens (RFC 9068) are checked here (mcp_tools.oauth.issuers)
    "OAUTH_JWT_ISSUERS": [],
    "OAUTH_LOGIN_URL": None,  # the consent flow's sign-in (URL or URL name); None: the package's oauth/login/
    # Resources besides this site's own MCP endpoint that its authorization server issues tokens for (URLs)
    "OAUTH_RESOURCES": [],
    "OAUTH_INTROSPECTION_CLIENTS": [],  # client IDs of resource servers that may introspect tokens; []: none
    # Abuse limits
    "MAX_CONCURRENT_CALLS": 16,  # per session
    "MAX_CALLS_PER_USER": 16,  # calls in progress per user across sessions, transports and processes
    # Sync tool work (callables, model queries, searches, API actions) runs in one pool per process
    "TOOL_THREADS": 8,
    "USER_THREADS": None,  # None: TOOL_THREADS // 4, at least 1 (the threads one user may hold at once)
    "CALL_TIMEOUT_SECONDS": 60,
    "MAX_RESULT_BYTES": 1_048_576,
    "MAX_MESSAGE_BYTES": 1_048_576,
    "MAX_DEPTH": 32,
    "MAX_BATCH_ITEMS": 50,
    "MAX_PENDING_REQUESTS": 64,
    "MAX_CONNECTIONS_PER_USER": 32,  # open WebSockets and event streams per user, per process
    "MAX_UNSENT_BYTES": 16_777_216,  # answers a WebSocket client has not read yet, before it is closed
    # Confirmations (docs/confirmations.md): how long a person has to answer, and the questions awaiting answers
    # at once per session and per user (per process)
    "CONFIRMATION_SECONDS": 300,
    # A client that can ask its user nothing: "refuse" the calls that need the user's yes, or send the person to
    # the site's confirmation "page" (needs SITE_URL and mcp_tools.urls)
    "CONFIRMATION_FALLBACK": "refuse",
    # How long an approver has to decide a call, and the caller to retry it once approved; calls one user may
    # have waiting for an approver at once
    "APPROVAL_SECONDS": 3600,
    "MAX_PENDING_APPROVALS_PER_USER": 20,
    "MAX_PENDING_QUESTIONS": 4,
    "MAX_PENDING_QUESTIONS_PER_USER": 16,
    # Calls in flight, shown in the admin: calls running longer than this many seconds get a row (None: none)
    "RUNNING_CALLS_VISIBLE_SECONDS": 2.0,
    # Rows their process has not renewed for this long (it died) are hidden and pruned; at least 15 s
    "RUNNING_CALLS_STALE_SECONDS": 60.0,
    # Channels
    "CHANNEL_LAYER": "default",
    "GROUP_NAME": "mcp_tools.tools",
    "LOG_TRACEBACKS": True,
}


IMPORT_STRINGS = ("PERMISSION_CLASSES", "AUTHENTICATION_CLASSES")


class MCPSettings:
    """Attribute access to MCP_TOOLS with DEFAULTS; cached until the setting changes."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    @property
    def user_settings(self) -> dict[str, Any]:
        value = getattr(settings, SETTING_NAME, {})
        return value if isinstance(value, dict) else {}

    def __getattr__(self, name: str) -> Any:
        # Called only while ``name`` is not yet an attribute: the value found becomes one, so that the
        # per-call reads of the hot paths are plain attribute reads until the setting changes.
        if name not in DEFAULTS:
            raise AttributeError(f"Invalid MCP_TOOLS setting: {name!r}")
        value = self.user_settings.get(name, DEFAULTS[name])
        self.__dict__[name] = value
        return value

    def imported(self, name: str) -> list[Any]:
        """The objects a list-of-import-strings setting names, imported once."""
        key = f"{name}:imported"
        if key not in self._cache:
            self._cache[key] = [import_string(path) for path in getattr(self, name)]
        return list(self._cache[key])

    def reload(self) -> None:
        self._cache.clear()
        for name in DEFAULTS:
            self.__dict__.pop(name, None)


mcp_settings = MCPSettings()


@receiver(setting_changed)
def _reload_mcp_settings(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:
        mcp_settings.reload()
