"""System checks for a site serving MCP over OAuth: mcp_tools.E010, E011, E013, E014, W008-W010, W014 and W015."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.apps import apps
from django.core import checks
from django.template import TemplateDoesNotExist
from django.template.loader import get_template
from django.urls import NoReverseMatch, Resolver404, resolve
from oauth2_provider.oauth2_validators import is_valid_resource_uri
from oauth2_provider.settings import oauth2_settings

from mcp_tools.conf import mcp_settings
from mcp_tools.oauth import issuers
from mcp_tools.oauth.redirect_uris import CheckedMetadataFetcher
from mcp_tools.oauth.signin import login_url
from mcp_tools.oauth.validator import MCPOAuth2Validator


@checks.register(checks.Tags.compatibility)
def check_toolkit_installed(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if apps.is_installed("oauth2_provider"):
        return []
    return [
        checks.Error(
            "mcp_tools.oauth is installed without oauth2_provider: OAuth tokens cannot be issued or read.",
            hint="Add 'oauth2_provider' to INSTALLED_APPS (pip install django-mcp-tools[oauth]).",
            id="mcp_tools.E010",
        )
    ]


@checks.register(checks.Tags.security)
def check_pkce(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    found: list[checks.CheckMessage] = []
    if not oauth2_settings.PKCE_REQUIRED:
        found.append(
            checks.Warning(
                "OAUTH2_PROVIDER['PKCE_REQUIRED'] is off: MCP clients must use PKCE, and a code without it can be "
                "stolen and redeemed.",
                hint="Remove the setting or set it to True.",
                id="mcp_tools.W008",
            )
        )
    if not oauth2_settings.COMPLIANT_BCP_RFC9700_PKCE_METHOD:
        found.append(
            checks.Warning(
                "The PKCE method 'plain' is accepted: the MCP authorization spec requires S256.",
                hint="Set OAUTH2_PROVIDER['COMPLIANT_BCP_RFC9700_PKCE_METHOD'] = True.",
                id="mcp_tools.W009",
            )
        )
    return found


@checks.register(checks.Tags.security, deploy=True)
def check_resource_url(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if mcp_settings.RESOURCE_URL:
        return []
    return [
        checks.Warning(
            "MCP_TOOLS['RESOURCE_URL'] is not set: the resource OAuth tokens must name is read from each "
            "request's Host and scheme, which a proxy may change.",
            hint="Set it to the public URL of the MCP endpoint, e.g. 'https://example.com/mcp'.",
            id="mcp_tools.W010",
        )
    ]


@checks.register(checks.Tags.security)
def check_jwt_issuers(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Each trusted issuer of JWT access tokens is fully described; an entry with a problem trusts nothing."""
    entries = getattr(mcp_settings, issuers.SETTING)
    name = f"MCP_TOOLS[{issuers.SETTING!r}]"
    if not isinstance(entries, list):
        hint = "List one dict per issuer, or leave it []."
        return [checks.Error(f"{name} must be a list.", hint=hint, id="mcp_tools.E011")]
    found: list[checks.CheckMessage] = []
    seen: set[Any] = set()
    for index, entry in enumerate(entries):
        for problem, hint in issuers.problems(entry):
            found.append(checks.Error(f"{name}[{index}]: {problem}", hint=hint, id="mcp_tools.E011"))
        issuer = entry.get("ISSUER") if isinstance(entry, dict) else None
        if isinstance(issuer, str) and issuer in seen:
            found.append(
                checks.Error(
                    f"{name}[{index}]: the issuer {issuer!r} is listed twice.",
                    hint="Keep one entry per issuer.",
                    id="mcp_tools.E011",
                )
            )
        seen.add(issuer)
    return found


@checks.register(checks.Tags.urls)
def check_login_page(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The consent flow's sign-in page must render: a signed-out user is sent there first."""
    problem = login_page_problem()
    if problem is None:
        return []
    return [
        checks.Warning(
            f"The consent flow's sign-in page {problem}: people cannot sign in to connect an MCP client.",
            hint=(
                "Include mcp_tools.oauth.urls and leave MCP_TOOLS['OAUTH_LOGIN_URL'] unset to use the package's "
                "sign-in page, or set it to a sign-in page of the site that exists."
            ),
            id="mcp_tools.W014",
        )
    ]


def login_page_problem() -> str | None:
    """What keeps the sign-in page from rendering, as far as can be told without a request; None if nothing."""
    try:
        url = login_url()
    except NoReverseMatch:
        return f"{mcp_settings.OAUTH_LOGIN_URL or 'mcp-oauth-login'!r} is not a URL name of the site"
    parts = urlsplit(url)
    if parts.netloc:
        return None  # another host (SSO): nothing here to look at
    try:
        view = resolve(parts.path).func
    except Resolver404:
        return f"{url} is not routed"
    template = view_template(view)
    if template is None:
        return None
    try:
        get_template(template)
    except TemplateDoesNotExist:
        return f"{url} needs the template {template}, which does not exist"
    return None


def view_template(view: Any) -> str | None:
    """The template a class-based view renders (``as_view(template_name=...)`` or its class's), if it says."""
    initkwargs = getattr(view, "view_initkwargs", None) or {}
    name = initkwargs.get("template_name") or getattr(getattr(view, "view_class", None), "template_name", None)
    return name if isinstance(name, str) else None


@checks.register(checks.Tags.security)
def check_oauth_lists(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if not apps.is_installed("oauth2_provider"):
        return []  # E010 says so
    found: list[checks.CheckMessage] = []
    resources = mcp_settings.OAUTH_RESOURCES
    if not isinstance(resources, list | tuple) or not all(is_valid_resource_uri(url) for url in resources):
        found.append(
            checks.Error(
                "MCP_TOOLS['OAUTH_RESOURCES'] must be a list of absolute URLs: tokens are issued for nothing else.",
                hint="List the URLs of the other resources this site issues tokens for, such as "
                "['https://api.example.com/mcp']: a scheme and a host, no user name, no fragment.",
                id="mcp_tools.E013",
            )
        )
    clients = mcp_settings.OAUTH_INTROSPECTION_CLIENTS
    if not isinstance(clients, list | tuple) or not all(
        isinstance(client_id, str) and client_id for client_id in clients
    ):
        found.append(
            checks.Error(
                "MCP_TOOLS['OAUTH_INTROSPECTION_CLIENTS'] must be a list of client IDs.",
                hint="List the client IDs of the confidential clients (resource servers) that may introspect tokens, "
                "or leave it empty so that none may.",
                id="mcp_tools.E014",
            )
        )
    return found


@checks.register(checks.Tags.security)
def check_toolkit_hooks(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The toolkit runs with this app's validator and CIMD fetcher (``provider_settings()`` names both)."""
    if not apps.is_installed("oauth2_provider"):
        return []
    missing = []
    if not issubclass(oauth2_settings.OAUTH2_VALIDATOR_CLASS, MCPOAuth2Validator):
        missing.append("OAUTH2_VALIDATOR_CLASS (mcp_tools.oauth.validator.MCPOAuth2Validator)")
    if oauth2_settings.CIMD_ENABLED and not issubclass(oauth2_settings.CIMD_METADATA_FETCHER, CheckedMetadataFetcher):
        missing.append("CIMD_METADATA_FETCHER (mcp_tools.oauth.redirect_uris.CheckedMetadataFetcher)")
    if not missing:
        return []
    return [
        checks.Warning(
            "The authorization server runs without this app's rules: tokens for any resource, a replayed code "
            "keeping its tokens, a deactivated user's refresh token, redirect URIs with a user name.",
            hint=f"Build OAUTH2_PROVIDER with provider_settings(), or set {' and '.join(missing)} or a subclass.",
            id="mcp_tools.W015",
        )
    ]
