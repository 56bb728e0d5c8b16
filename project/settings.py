"""Settings for the demo site; environment variables switch on the production parts.

``DATABASE_URL`` (``postgres://user:password@host:port/name``) selects PostgreSQL instead of SQLite;
``REDIS_URL`` selects the Redis channel layer and a Redis cache instead of in-memory ones.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

from mcp_tools.oauth.defaults import provider_settings

BASE_DIR = Path(__file__).resolve().parent.parent


def env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def env_list(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]


def database_from_url(url: str) -> dict[str, Any]:
    """A ``DATABASES`` entry for a ``postgres://`` URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfigured(
            f"DATABASE_URL scheme {parts.scheme!r} is not supported; use postgres://user@host:port/name."
        )
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")) or "postgres",
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "django-insecure-demo-key-change-me-for-any-real-deployment")
DEBUG = env_flag("DJANGO_DEBUG", True)
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]", *env_list("DJANGO_ALLOWED_HOSTS")]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "django_filters",
    "mcp_tools",
    "oauth2_provider",
    "mcp_tools.oauth",
    "project.shop",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "project.urls"
ASGI_APPLICATION = "project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": database_from_url(os.environ["DATABASE_URL"])}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": BASE_DIR / "db.sqlite3",
            # Write-ahead logging: readers never wait for the writer, and a commit (every audit row is
            # committed before its call is answered) costs no sync of the database file. IMMEDIATE makes a
            # writer take the lock when its transaction starts, so two processes never deadlock upgrading.
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
            },
        }
    }
# Channels calls close_old_connections() around every consumer message; with CONN_MAX_AGE=0 that
# closes the connection and the next message reconnects. Persistent connections avoid that cost.
DATABASES["default"]["CONN_MAX_AGE"] = 60
# A kept connection that the database dropped meanwhile (a restart, an idle timeout) is found by a SELECT 1
# before its first use in each call and replaced, rather than failing that call.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    # A Redis that is down must fail calls in a second, not hang them (docs/deployment.md, "When Redis is down").
    # The layer gets no socket_timeout: its receive blocks on Redis for seconds by design.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_connect_timeout": 1}]},
        }
    }
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The shop's REST API (project/shop/api). Rates are per user; the bench and the tests stay well below them.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.SearchFilter",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_THROTTLE_RATES": {"user": "600/min", "order_writes": "120/min"},
}

MCP_TOOLS = {
    "SERVER_NAME": "django-mcp-tools demo",
    "INSTRUCTIONS": (
        "Tools over a small demo shop's orders, customers and products. Amounts are decimal strings; "
        "dates are ISO 8601. Each tool's description says what it reads or changes."
    ),
    # Makes the links of search results absolute; set it to the address the site is served at.
    "SITE_URL": os.environ.get("MCP_SITE_URL", "http://127.0.0.1:8000"),
    # A client that cannot ask its user sends them to the site's confirmation page (on SITE_URL) rather than
    # being refused, for the writes the user confirms.
    "CONFIRMATION_FALLBACK": os.environ.get("MCP_CONFIRMATION_FALLBACK", "page"),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        # Per-request INFO logging costs a large share of throughput; keep the hot path quiet.
        "mcp_tools": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}

# OAuth for remote connectors (Claude, ChatGPT, Cursor, VS Code): the site is its own authorization server.
# Clients registering by metadata document (CIMD) are allowed from these hosts only.
OAUTH2_PROVIDER = provider_settings(
    CIMD_ALLOWED_HOSTS=os.environ.get("CIMD_ALLOWED_HOSTS", "claude.ai,chatgpt.com,vscode.dev,.cursor.com").split(","),
)
