"""Settings for the test suite: SQLite and the in-memory layer unless the service URLs are set."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from mcp_tools.oauth.defaults import provider_settings

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "tests-only-secret"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost", "[::1]"]
USE_TZ = True
ROOT_URLCONF = "tests.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
ASGI_APPLICATION = "tests.asgi.application"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "mcp_tools",
    "oauth2_provider",
    "mcp_tools.oauth",
    "tests.testapp",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The package's own templates only: the OAuth pages, their sign-in page among them, as a new site has them.
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
STATIC_URL = "/static/"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


_conn_max_age = int(os.environ.get("MCP_TEST_CONN_MAX_AGE") or 0)


def _database(url: str | None) -> dict[str, object]:
    if not url:
        return _sqlite(os.environ.get("MCP_TEST_SQLITE_PATH"))
    parts = urlsplit(url)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parts.path.lstrip("/") or "postgres",
        "USER": parts.username or "postgres",
        "PASSWORD": parts.password or "",
        "HOST": parts.hostname or "127.0.0.1",
        "PORT": parts.port or 5432,
        # One test database per run, so that runs sharing the server never collide.
        "TEST": {"NAME": f"test_mcp_tools_{os.getpid()}"},
        # Live servers may keep connections, with health checks as the deployment docs recommend (unless
        # MCP_TEST_CONN_HEALTH_CHECKS=0); the in-process tests close them, and count no SELECT 1.
        "CONN_MAX_AGE": _conn_max_age,
        "CONN_HEALTH_CHECKS": bool(_conn_max_age) and os.environ.get("MCP_TEST_CONN_HEALTH_CHECKS") != "0",
    }


def _sqlite(path: str | None) -> dict[str, object]:
    # A given file is shared by every process started with it (live servers and the tests that drive them).
    if path:
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path, "TEST": {"NAME": path}}
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": BASE_DIR / "tests-db.sqlite3",
        "TEST": {"NAME": None},
    }


DATABASES = {"default": _database(os.environ.get("MCP_TEST_DATABASE_URL"))}

REDIS_URL = os.environ.get("MCP_TEST_REDIS_URL") or "redis://127.0.0.1:6379/0"
# Channel layer and cache keys live under a prefix of this run's own, so runs sharing one Redis never meet;
# tests/conftest.py deletes them when the run ends. Live servers are given their site's prefix.
REDIS_PREFIX = os.environ.get("MCP_TEST_REDIS_PREFIX") or f"mcp_tools_tests_{secrets.token_hex(6)}"
CHANNEL_LAYERS: dict[str, dict[str, object]] = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
CACHES: dict[str, dict[str, object]] = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
if os.environ.get("MCP_TEST_CHANNEL_LAYER") == "redis":
    # A Redis that is down must fail calls in a second, not hang them (docs/deployment.md, "When Redis is down").
    CHANNEL_LAYERS["default"] = {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_connect_timeout": 1}], "prefix": REDIS_PREFIX},
    }
    CACHES["default"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": REDIS_PREFIX,
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
# django-ratelimit's own setting: whether calls go uncounted (rather than refused) while the cache is down.
RATELIMIT_FAIL_OPEN = os.environ.get("MCP_TEST_RATELIMIT_FAIL_OPEN") == "1"

# Sessions are pruned only where a test asks for it, so that no prune outlives the test that started it.
# Denied calls are counted only where a test asks for it, with counters of its own: tests reuse user ids
# within the same minute.
MCP_TOOLS: dict[str, object] = {
    "PAGE_SIZE": 5,
    "TOKEN_CACHE_SECONDS": 0,
    "SESSION_PRUNE_SECONDS": 0,
    "DENIED_RATE": None,
    "ADMIN_SITE": "tests.testapp.admin.site",  # the test app's back office (admin-action tools)
}
if os.environ.get("MCP_TEST_GROUP_NAME"):
    MCP_TOOLS["GROUP_NAME"] = os.environ["MCP_TEST_GROUP_NAME"]
for _key in ("FRESHNESS_SECONDS", "TOKEN_CACHE_SECONDS", "SAFETY_POLL_SECONDS", "CACHE_RETRY_SECONDS"):
    if os.environ.get(f"MCP_TEST_{_key}"):
        MCP_TOOLS[_key] = float(os.environ[f"MCP_TEST_{_key}"])
if os.environ.get("MCP_TEST_DEFAULT_RATE"):
    MCP_TOOLS["DEFAULT_RATE"] = os.environ["MCP_TEST_DEFAULT_RATE"]
for _key in ("MAX_CONCURRENT_CALLS", "MAX_CALLS_PER_USER", "TOOL_THREADS", "USER_THREADS"):
    if os.environ.get(f"MCP_TEST_{_key}"):
        MCP_TOOLS[_key] = int(os.environ[f"MCP_TEST_{_key}"])
if os.environ.get("MCP_TEST_STDIO_POLL_SECONDS"):
    MCP_TOOLS["STDIO_POLL_SECONDS"] = float(os.environ["MCP_TEST_STDIO_POLL_SECONDS"])
if os.environ.get("MCP_TEST_JWT_ISSUERS"):
    # Live JWT tests trust issuers that the test serves on loopback (tests/jwt_issuer.py).
    MCP_TOOLS["OAUTH_JWT_ISSUERS"] = json.loads(os.environ["MCP_TEST_JWT_ISSUERS"])
if os.environ.get("MCP_TEST_OAUTH_INTROSPECTION_CLIENTS"):
    MCP_TOOLS["OAUTH_INTROSPECTION_CLIENTS"] = os.environ["MCP_TEST_OAUTH_INTROSPECTION_CLIENTS"].split(",")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"mcp_tools": {"handlers": ["console"], "level": "WARNING"}},
}

# The site is its own OAuth authorization server, as the demo is.
OAUTH2_PROVIDER = provider_settings(CIMD_ALLOWED_HOSTS=["client.example"])
if os.environ.get("MCP_TEST_CIMD_DOCUMENTS"):
    # Live OAuth tests serve client metadata documents from a file (tests/cimd.py): the production fetcher
    # needs https and a public address, which a test on loopback cannot offer.
    OAUTH2_PROVIDER["CIMD_METADATA_FETCHER"] = "tests.cimd.FileMetadataFetcher"
if os.environ.get("MCP_TEST_OAUTH_ACCESS_TOKEN_SECONDS"):
    OAUTH2_PROVIDER["ACCESS_TOKEN_EXPIRE_SECONDS"] = int(os.environ["MCP_TEST_OAUTH_ACCESS_TOKEN_SECONDS"])
LOGIN_URL = "/accounts/login/"
